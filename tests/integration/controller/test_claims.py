"""What a job claims and what it leaves alone: the real ``Manager`` against the embedded API
server over HTTP, pods moved by the ``SimulatedKubelet``, one ``FakeClock`` (``cluster``).

- terminating pods that outlive their grace period (a lost node) count as failed;
- foreign objects (a child's name taken by an object the job does not control);
- orphan adoption and release (upstream's controller-ref manager);
- gang scheduling without the PodGroup CRD.

Expected values: the spec (sections 4.3, 4.5, 7.5, 8.1) and upstream's
``mpijob_controller.go`` message format, with the departures of docs/design/005.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from tests.integration.apiserver.conftest import RunningServer, start_server
from tests.integration.controller.cluster import (
    Cluster,
    annotate,
    condition_on,
    crds,
    eventually,
    is_true,
    replica_spec,
    run_cluster,
    start_cluster_server,
)
from tests.unit.api.builders import manifest
from trainop.api.kinds import kind_info
from trainop.controller.clock import FakeClock
from trainop.controller.manager import GANG_CRD_RECHECK_SECONDS, Manager, ManagerOptions
from trainop.engine.plan import EngineOptions
from trainop.kube.client import Obj
from trainop.kube.http import HttpClient
from trainop.kube.resources import (
    COSCHEDULING_PODGROUPS,
    CRDS,
    NAMESPACES,
    PODS,
    job_resource,
)

LOST_NODE = "lost-node"  # no kubelet serves it: its pods never end by themselves


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    yield from start_cluster_server(tmp_path_factory.mktemp("claims"))


def _time(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp)


async def _run_on_lost_node(cluster: Cluster, name: str) -> None:
    """What the lost node's kubelet reported before it went away: the pod is Running."""
    status = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    await cluster.client.patch(
        PODS, name=name, namespace=cluster.namespace, patch={"status": status},
        subresource="status",
    )  # fmt: skip


# --- terminating pods (issue 11 item 10) -----------------------------------------------------


def test_a_pod_stuck_terminating_on_a_lost_node_counts_failed_after_its_grace(
    server: RunningServer,
) -> None:
    """Upstream counted a terminating Running pod as failed at once (spec 4.5 d); trainop does
    once its grace period plus a minute has passed (005), so a job never waits on it forever:
    with restartPolicy Never the job fails, exactly then (a requeue, no event needed)."""

    async def body(cluster: Cluster) -> None:
        job = annotate(manifest("PyTorchJob", name="lost"), "Master", run_seconds=100_000)
        worker = replica_spec(job, "Worker")
        worker["restartPolicy"] = "Never"
        worker["template"]["spec"]["nodeName"] = LOST_NODE
        await cluster.create_job(job)
        await cluster.until_pods("lost", 3)
        for index in (0, 1):
            await _run_on_lost_node(cluster, f"lost-worker-{index}")
        await cluster.until_condition("PyTorchJob", "lost", "Running")
        await cluster.settle()

        await cluster.client.delete(PODS, name="lost-worker-1", namespace=cluster.namespace)
        pod = await cluster.get(PODS, "lost-worker-1")
        assert pod is not None, "a pod bound to a node waits for its kubelet"
        meta = pod["metadata"]
        grace = int(meta["deletionGracePeriodSeconds"])
        assert grace == 30
        lost_at = _time(meta["deletionTimestamp"]) + timedelta(seconds=grace + 60)

        await cluster.advance((lost_at - cluster.clock.now()).total_seconds() - 1)
        waiting = await cluster.job_now("PyTorchJob", "lost")
        assert not is_true(waiting, "Failed"), "within its grace the pod is not failed yet"
        worker_status = waiting["status"]["replicaStatuses"]["Worker"]
        assert (worker_status.get("active"), worker_status.get("failed")) == (1, None)

        await cluster.advance(1)
        failed = await cluster.until_condition("PyTorchJob", "lost", "Failed")
        assert condition_on(failed, "Failed")["reason"] == "PyTorchJobFailed"
        assert failed["status"]["replicaStatuses"]["Worker"]["failed"] == 1
        assert failed["status"]["completionTime"] == _stamp(lost_at)

    run_cluster(server, body)


# --- gang scheduling without its CRD (issue 11 item 9) ---------------------------------------


@pytest.fixture(scope="module")
def bare_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """An embedded API server with no CRD installed (the test installs what it needs)."""
    yield from start_server(tmp_path_factory.mktemp("bare"), bookmark_interval=0.5)


def test_gang_scheduling_without_the_pod_group_crd_is_not_ready_and_creates_no_pods(
    bare_server: RunningServer,
) -> None:
    """Upstream exits (``crd might be missing, please install crd``, spec 8.1); trainop stays
    not ready, naming the CRD, creates nothing, and starts once the CRD is installed (005)."""

    async def main() -> None:
        calls: list[str] = []
        client = HttpClient.from_kubeconfig(
            path=str(bare_server.kubeconfig), on_request=lambda verb, plural: calls.append(plural)
        )
        clock = FakeClock(start=datetime.now(UTC).replace(microsecond=0))
        namespace = f"gang-{uuid.uuid4().hex[:8]}"
        all_crds = {crd["metadata"]["name"]: crd for crd in crds()}
        try:
            await client.create(CRDS, all_crds["pytorchjobs.kubeflow.org"])
            await client.create(NAMESPACES, {"metadata": {"name": namespace}})
            engine = EngineOptions(gang_scheduler_name="scheduler-plugins")
            options = ManagerOptions(kinds=("PyTorchJob",), namespace=namespace, engine=engine)
            manager = Manager(client=client, clock=clock, options=options)
            job = manifest("PyTorchJob", name="gang")
            job["metadata"]["namespace"] = namespace
            jobs = job_resource(kind_info("PyTorchJob"))
            await client.create(jobs, job, namespace=namespace)
            task = asyncio.create_task(manager.run())
            try:

                async def checks() -> int:
                    return calls.count("podgroups")

                await eventually(checks, what="the PodGroup CRD checked")
                assert not manager.ready
                assert manager.not_ready_reason == (
                    "gang scheduler 'scheduler-plugins' needs the PodGroup CRD"
                    " podgroups.scheduling.x-k8s.io (scheduling.x-k8s.io/v1alpha1), which is not"
                    " installed: crd might be missing, please install crd; no job is reconciled"
                    " until it is"
                )
                for round_ in range(2, 4):  # time passes: checked again, still nothing done
                    clock.advance(GANG_CRD_RECHECK_SECONDS)
                    await eventually(lambda n=round_: _at_least(checks, n), what=f"check {round_}")
                    assert not manager.ready
                assert set(calls[3:]) == {"podgroups"}, "no informer, no reconcile started"
                pods = await client.list(PODS, namespace=namespace)
                assert pods.items == [], "no pod of a gang job without its PodGroup"

                await client.create(CRDS, all_crds["podgroups.scheduling.x-k8s.io"])

                async def started() -> bool:
                    if not manager.ready:  # the next check is due (the CRD may take a moment)
                        clock.advance(GANG_CRD_RECHECK_SECONDS)
                    return manager.ready

                await eventually(started, what="ready once the CRD is installed")

                async def group() -> Obj | None:
                    with contextlib.suppress(Exception):
                        return await client.get(
                            COSCHEDULING_PODGROUPS, name="gang", namespace=namespace
                        )
                    return None

                await eventually(group, what="the PodGroup created")

                async def three_pods() -> bool:
                    return len((await client.list(PODS, namespace=namespace)).items) == 3

                await eventually(three_pods, what="the gang's pods created")
            finally:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        finally:
            await client.close()

    asyncio.run(main())


async def _at_least(probe: object, count: int) -> bool:
    assert callable(probe)
    return bool(await probe() >= count)


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _names(objs: list[Obj]) -> list[str]:
    return sorted(o["metadata"]["name"] for o in objs)
