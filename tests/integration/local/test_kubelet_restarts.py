"""Kubelet restart semantics under a local cluster (issue 15 item 1), on a fake clock.

A replica whose container can never start (no command: images are not pulled) under
``OnFailure`` is restarted in place by the process kubelet: ``CreateContainerError`` with the
reason for a second after each failed start, then ``CrashLoopBackOff``; its
``restartCount`` grows at the back-off rate (10 s, 20 s, 40 s …), the pod stays ``Pending``,
the job does not fail, and the controller never recreates the pod (before: one pod after
another at 60 to 100 pods per second).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from tests import polling
from trainop.api.kinds import kind_info
from trainop.kube.client import Client, Obj
from trainop.kube.clock import FakeClock
from trainop.kube.resources import EVENTS, PODS, job_resource
from trainop.local.session import ClusterConfig, LocalCluster, machine_cluster

PYTORCH = job_resource(kind_info("PyTorchJob"))
POD = "nocmd-master-0"


def command_less_job() -> Obj:
    container = {"name": "pytorch", "image": "python:3.11"}  # no command
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "nocmd"},
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": {
                    "replicas": 1,
                    "restartPolicy": "OnFailure",
                    "template": {"spec": {"containers": [container]}},
                }
            }
        },
    }


async def until(client: Client, predicate: Callable[[Obj], bool], *, timeout: float = 20.0) -> Obj:
    """Poll the pod until ``predicate`` holds (real-time deadline)."""

    async def probe() -> Obj | polling.NotYet:
        try:
            found = await client.get(PODS, name=POD, namespace="default")
        except Exception:  # not created yet
            return polling.NotYet(None)
        return found if predicate(found) else polling.NotYet(found.get("status"))

    pod: Obj = await polling.until(probe, timeout=timeout, what=f"pod {POD} to match")
    return pod


async def settled(cluster: LocalCluster) -> Obj:
    """The pod once the kubelet has written everything it decided so far (an early restart
    would be in it); the restart's own timestamp (``failed_at``) is checked as well."""
    assert cluster.kubelet is not None
    await cluster.kubelet.drained()
    return await cluster.client.get(PODS, name=POD, namespace="default")


def entry(pod: Obj) -> dict[str, Any]:
    statuses = (pod.get("status") or {}).get("containerStatuses") or [{}]
    return dict(statuses[0])


def failed_at(pod: Obj) -> str:
    """When the last start failed, in the kubelet's (fake) clock: the proof that a restart
    did not come early (an early one, run while the test reads the pod, is stamped then)."""
    return str(entry(pod)["lastState"]["terminated"]["finishedAt"])


def at(seconds: int) -> str:
    """The wire time ``seconds`` after a ``FakeClock``'s start (the test's clock)."""
    return (FakeClock().now() + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def failed_to_create(count: int) -> Callable[[Obj], bool]:
    """Just after a failed start: kubelet's CreateContainerError with the reason."""

    def check(pod: Obj) -> bool:
        found = entry(pod)
        waiting = (found.get("state") or {}).get("waiting") or {}
        return (
            found.get("restartCount") == count
            and waiting.get("reason") == "CreateContainerError"
            and "a container needs an explicit command" in waiting.get("message", "")
        )

    return check


def backing_off(count: int, delay: str) -> Callable[[Obj], bool]:
    def check(pod: Obj) -> bool:
        found = entry(pod)
        waiting = (found.get("state") or {}).get("waiting") or {}
        return (
            found.get("restartCount") == count
            and waiting.get("reason") == "CrashLoopBackOff"
            and waiting.get("message", "").startswith(f"back-off {delay} ")
        )

    return check


def test_a_command_less_on_failure_pod_crash_loops_in_place(tmp_path: Path) -> None:
    clock = FakeClock()

    async def main() -> None:
        async with machine_cluster(ClusterConfig(state_dir=tmp_path), clock=clock) as cluster:
            client = cluster.client
            created: set[str] = set()

            async def count_pods() -> None:
                async for event in client.watch(PODS, namespace="default"):
                    if event.type == "ADDED":
                        created.add(event.obj["metadata"]["uid"])

            watcher = asyncio.create_task(count_pods())
            try:
                await client.create(PYTORCH, command_less_job(), namespace="default")
                pod = await until(client, failed_to_create(0))
                uid = pod["metadata"]["uid"]
                last = entry(pod)["lastState"]["terminated"]
                assert (last["reason"], last["exitCode"]) == ("ContainerCannotRun", 128)
                assert "a container needs an explicit command" in last["message"]
                assert pod["status"]["phase"] == "Pending"
                clock.advance(1.0)  # the next "sync": kubelet's back-off reason
                pod = await until(client, backing_off(0, "10s"))
                message = entry(pod)["state"]["waiting"]["message"]
                assert message == (
                    f"back-off 10s restarting failed container=pytorch pod={POD}_default({uid})"
                )

                clock.advance(8.5)  # 9.5 s after the failure: not yet
                assert entry(await settled(cluster))["restartCount"] == 0
                clock.advance(0.5)
                pod = await until(client, failed_to_create(1))
                assert failed_at(pod) == at(10), "the restart waited the whole 10 s"
                clock.advance(1.0)
                await until(client, backing_off(1, "20s"))
                clock.advance(18.0)
                assert entry(await settled(cluster))["restartCount"] == 1
                clock.advance(1.0)
                pod = await until(client, failed_to_create(2))
                assert failed_at(pod) == at(30), "the restart waited the whole 20 s"
                clock.advance(1.0)
                await until(client, backing_off(2, "40s"))
                clock.advance(39.0)
                await until(client, failed_to_create(3))
                for count, delay in ((3, 80), (4, 160), (5, 300)):  # 300 s: the ceiling
                    clock.advance(1.0)
                    await until(client, backing_off(count, f"{delay}s"))
                    clock.advance(delay - 1.0)
                    await until(client, failed_to_create(count + 1))
                clock.advance(1.0)
                pod = await until(client, backing_off(6, "300s"))
                assert pod["metadata"]["uid"] == uid
                assert pod["status"]["phase"] == "Pending"

                job = await client.get(PYTORCH, name="nocmd", namespace="default")
                types = {c["type"] for c in (job.get("status") or {}).get("conditions") or []}
                assert "Failed" not in types, job.get("status")
                assert created == {uid}, "the controller recreated the pod"

                events = await client.list(EVENTS, namespace="default")
                mine = [
                    e
                    for e in events.items
                    if e["involvedObject"].get("uid") == uid
                    and e["source"].get("component") == "kubelet"
                ]
                by_reason = {e["reason"]: e for e in mine}
                assert by_reason["BackOff"]["type"] == "Warning"
                assert by_reason["BackOff"]["count"] >= 6  # aggregated, not one per restart
                assert by_reason["BackOff"]["message"] == (
                    f"Back-off restarting failed container pytorch in pod {POD}_default({uid})"
                )
                assert by_reason["Failed"]["involvedObject"]["fieldPath"] == (
                    "spec.containers{pytorch}"
                )
                assert len(mine) <= 4, [(e["reason"], e["message"]) for e in mine]
            finally:
                watcher.cancel()
                await asyncio.gather(watcher, return_exceptions=True)

    asyncio.run(main())
