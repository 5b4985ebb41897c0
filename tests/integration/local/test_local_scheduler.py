"""The local scheduler under a process cluster: jobs queue for CPUs, gangs start together."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.polling import until
from tests.unit.api import builders
from trainop import errors
from trainop.api.kinds import kind_info
from trainop.controller.manager import ManagerOptions
from trainop.engine.naming import JOB_NAME_LABEL as JOB_LABEL
from trainop.engine.plan import EngineOptions
from trainop.frameworks.registry import REGISTRY
from trainop.kube.client import Client
from trainop.kube.resources import (
    COSCHEDULING_PODGROUPS,
    EVENTS,
    PODS,
    VOLCANO_PODGROUPS,
    Resource,
    job_resource,
)
from trainop.local.session import ClusterConfig, NodeResources, machine_cluster

PYTORCH = job_resource(kind_info("PyTorchJob"))
WAIT = 60.0
NODE = NodeResources(cpus=2, gpus=0)


def job(name: str, release: Path, *, cpu: str, workers: int = 0, min_available: int = 0) -> Any:
    """A PyTorchJob whose replicas each request ``cpu`` and run until ``release`` exists."""
    wait = f"import os, time\nwhile not os.path.exists({str(release)!r}): time.sleep(0.05)"
    template = {
        "spec": {
            "containers": [
                {
                    "name": "pytorch",
                    "image": "python:3.12",
                    "command": [sys.executable, "-c", wait],
                    "resources": {"requests": {"cpu": cpu}},
                }
            ]
        }
    }
    specs: dict[str, Any] = {"Master": {"replicas": 1, "template": template}}
    if workers:
        specs["Worker"] = {"replicas": workers, "template": template}
    spec: dict[str, Any] = {"pytorchReplicaSpecs": specs}
    if min_available:
        spec["runPolicy"] = {"schedulingPolicy": {"minAvailable": min_available}}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


async def pod(client: Client, name: str) -> dict[str, Any] | None:
    listed = await client.list(PODS, namespace="default")
    return next((p for p in listed.items if p["metadata"]["name"] == name), None)


def scheduled(obj: dict[str, Any] | None) -> dict[str, Any] | None:
    conditions = ((obj or {}).get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == "PodScheduled"), None)


async def succeeded(client: Client, name: str) -> bool:
    current = await client.get(PYTORCH, name=name, namespace="default")
    conditions = (current.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Succeeded" and c["status"] == "True" for c in conditions)


async def running(client: Client, name: str) -> bool:
    found = await pod(client, name)
    return bool(found) and found["status"].get("phase") == "Running"


async def group_phase(client: Client, groups: Resource, name: str) -> str:
    """The phase of PodGroup ``name`` (of the ``groups`` resource); "" while there is none."""
    try:
        group = await client.get(groups, name=name, namespace="default")
    except errors.NotFoundError:
        return ""
    return str((group.get("status") or {}).get("phase") or "")


@contextlib.asynccontextmanager
async def hog_then_gang(tmp_path: Path, gang_scheduler_name: str) -> AsyncIterator[Client]:
    """A two-CPU cluster whose jobs name ``gang_scheduler_name``: runs ``hog`` (one CPU) until it
    is Running, then creates ``gang``, a master and a worker of one CPU each with minAvailable 2,
    which cannot fit beside the hog. Touching ``go-hog``/``go-gang`` lets each job finish."""
    engine = EngineOptions(gang_scheduler_name=gang_scheduler_name)
    config = ClusterConfig(state_dir=tmp_path / "state", manager=ManagerOptions(engine=engine))
    async with machine_cluster(config, working_dir=tmp_path, resources=NODE) as cluster:
        client = cluster.client
        await client.create(PYTORCH, job("hog", tmp_path / "go-hog", cpu="1"))
        await until(lambda: running(client, "hog-master-0"), timeout=WAIT, what="hog runs")
        gang = job("gang", tmp_path / "go-gang", cpu="1", workers=1, min_available=2)
        await client.create(PYTORCH, gang)
        yield client


def test_a_second_job_asking_for_all_cpus_waits_until_the_first_finishes(tmp_path: Path) -> None:
    config = ClusterConfig(state_dir=tmp_path / "state")

    async def scenario() -> None:
        async with machine_cluster(config, working_dir=tmp_path, resources=NODE) as cluster:
            client = cluster.client
            await client.create(PYTORCH, job("first", tmp_path / "go-first", cpu="2"))
            await until(lambda: running(client, "first-master-0"), timeout=WAIT, what="first runs")
            await client.create(PYTORCH, job("second", tmp_path / "go-second", cpu="2"))

            async def second_unschedulable() -> dict[str, Any] | None:
                condition = scheduled(await pod(client, "second-master-0"))
                return condition if condition and condition["status"] == "False" else None

            condition = await until(second_unschedulable, timeout=WAIT, what="second waits")
            assert condition["reason"] == "Unschedulable"
            assert condition["message"] == "0/1 nodes are available: 1 Insufficient cpu."
            waiting = await pod(client, "second-master-0")
            assert waiting is not None
            assert not waiting["spec"].get("nodeName")
            assert waiting["status"]["phase"] == "Pending"
            assert not waiting["status"].get("containerStatuses")  # nothing started

            async def failed_scheduling() -> list[Any]:
                listed = await client.list(EVENTS, namespace="default")
                return [
                    e
                    for e in listed.items
                    if e["involvedObject"]["name"] == "second-master-0"
                    and e["reason"] == "FailedScheduling"
                ]

            (event,) = await until(failed_scheduling, timeout=WAIT, what="a FailedScheduling event")
            assert event["type"] == "Warning"
            assert event["source"]["component"] == "default-scheduler"
            assert event["message"] == "0/1 nodes are available: 1 Insufficient cpu."

            (tmp_path / "go-first").touch()
            await until(lambda: succeeded(client, "first"), timeout=WAIT, what="first succeeds")

            async def second_bound() -> bool:
                found = await pod(client, "second-master-0")
                return bool(found) and found["spec"].get("nodeName") == "trainop-local"

            await until(second_bound, timeout=WAIT, what="second is bound")
            (tmp_path / "go-second").touch()
            await until(lambda: succeeded(client, "second"), timeout=WAIT, what="second succeeds")

    asyncio.run(scenario())


def test_a_volcano_gang_that_does_not_fit_stays_pending_then_runs(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with hog_then_gang(tmp_path, "volcano") as client:

            async def phase(name: str) -> str:
                return await group_phase(client, VOLCANO_PODGROUPS, name)

            async def gang_pending() -> bool:
                with_status = await phase("gang")
                return with_status == "Pending"

            await until(gang_pending, timeout=WAIT, what="the gang's PodGroup is Pending")
            assert await phase("hog") == "Running"
            # Volcano holds the pods until the group is admitted: none is created.
            assert await pod(client, "gang-master-0") is None

            (tmp_path / "go-hog").touch()
            await until(lambda: succeeded(client, "hog"), timeout=WAIT, what="hog succeeds")

            async def gang_running() -> bool:
                return await phase("gang") == "Running"

            await until(gang_running, timeout=WAIT, what="the gang runs")
            for name in ("gang-master-0", "gang-worker-0"):
                found = await pod(client, name)
                assert found is not None
                assert found["spec"].get("nodeName") == "trainop-local"
            (tmp_path / "go-gang").touch()
            await until(lambda: succeeded(client, "gang"), timeout=WAIT, what="gang succeeds")

    asyncio.run(scenario())


def test_a_coscheduled_gang_waits_with_its_pods_unbound_then_runs(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with hog_then_gang(tmp_path, "scheduler-plugins") as client:

            async def phase(name: str) -> str:
                return await group_phase(client, COSCHEDULING_PODGROUPS, name)

            async def gang_waits() -> dict[str, Any] | None:
                condition = scheduled(await pod(client, "gang-worker-0"))
                return condition if condition and condition["status"] == "False" else None

            condition = await until(gang_waits, timeout=WAIT, what="the gang waits")
            assert condition["reason"] == "Unschedulable"
            assert "pod group is not ready" in condition["message"]

            async def prescheduling() -> bool:
                return await phase("gang") == "PreScheduling"

            await until(prescheduling, timeout=WAIT, what="the PodGroup is PreScheduling")
            master = await pod(client, "gang-master-0")
            assert master is not None
            assert not master["spec"].get("nodeName"), "one of two fits, none is bound"

            (tmp_path / "go-hog").touch()

            async def gang_running() -> bool:
                return await phase("gang") == "Running"

            await until(gang_running, timeout=WAIT, what="the gang runs")
            (tmp_path / "go-gang").touch()
            await until(lambda: succeeded(client, "gang"), timeout=WAIT, what="gang succeeds")

    asyncio.run(scenario())


# ---- every kind's gang -------------------------------------------------------------------

FLAVOURS = {"volcano": VOLCANO_PODGROUPS, "scheduler-plugins": COSCHEDULING_PODGROUPS}


def waiting_job(kind: str, release: Path, *, min_available: int) -> dict[str, Any]:
    """``kind``'s smallest job (the API tests' layout), every container asking for a tenth of
    a CPU and waiting for ``release``, under gang scheduling with ``min_available``."""
    manifest = builders.manifest(kind, name="gang")
    wait = f"import os, time\nwhile not os.path.exists({str(release)!r}): time.sleep(0.05)"
    for replica in manifest["spec"][kind_info(kind).replica_specs_field].values():
        for container in replica["template"]["spec"]["containers"]:
            container["command"] = [sys.executable, "-c", wait]
            container["resources"] = {"requests": {"cpu": "100m"}}
    manifest["spec"]["runPolicy"] = {"schedulingPolicy": {"minAvailable": min_available}}
    return manifest


async def gang_pods(client: Client) -> list[dict[str, Any]]:
    listed = await client.list(PODS, namespace="default", label_selector=JOB_LABEL + "=gang")
    return list(listed.items)


def has_condition(job: dict[str, Any], kind: str) -> bool:
    conditions = (job.get("status") or {}).get("conditions") or []
    return any(c["type"] == kind and c["status"] == "True" for c in conditions)


def _kinds() -> list[str]:
    return sorted(REGISTRY)


@pytest.mark.parametrize("flavour", sorted(FLAVOURS))
@pytest.mark.parametrize("kind", _kinds())
def test_no_pod_of_a_gang_binds_until_min_member_fit_together(
    tmp_path: Path, kind: str, flavour: str
) -> None:
    """Upstream's SDK gang test for every kind: minAvailable 10 (more pods than the job has)
    holds the whole gang, Pending and unbound, and the job is not Running; with the gang's
    own size every pod binds and the job runs to success."""
    resource = job_resource(kind_info(kind))
    engine = EngineOptions(gang_scheduler_name=flavour)
    config = ClusterConfig(state_dir=tmp_path / "state", manager=ManagerOptions(engine=engine))

    async def scenario() -> None:
        async with machine_cluster(config, working_dir=tmp_path, resources=NODE) as cluster:
            client = cluster.client
            await client.create(resource, waiting_job(kind, tmp_path / "go", min_available=10))

            async def all_held() -> bool:
                """The scheduler has judged every pod: the gang waits (a pass that binds
                nothing writes this on each pod it leaves)."""
                pods = await gang_pods(client)
                marked = [scheduled(p) or {} for p in pods]
                return bool(pods) and all(
                    m.get("status") == "False" and "pod group is not ready" in m.get("message", "")
                    for m in marked
                )

            await until(all_held, timeout=WAIT, what="every pod of the gang waits")
            for found in await gang_pods(client):
                assert not found["spec"].get("nodeName"), found["metadata"]["name"]
                assert found["status"]["phase"] == "Pending"
                assert not found["status"].get("containerStatuses")  # the kubelet ran nothing
            job = await client.get(resource, name="gang", namespace="default")
            assert not has_condition(job, "Running")

            # The gang's own size (the PodGroup's default minMember): every pod binds.
            unset = {"spec": {"runPolicy": {"schedulingPolicy": {"minAvailable": None}}}}
            await client.patch(resource, name="gang", namespace="default", patch=unset)

            async def all_bound() -> bool:
                pods = await gang_pods(client)
                return bool(pods) and all(p["spec"].get("nodeName") for p in pods)

            await until(all_bound, timeout=WAIT, what="every pod of the gang is bound")

            (tmp_path / "go").touch()

            async def job_succeeded() -> bool:
                current = await client.get(resource, name="gang", namespace="default")
                return has_condition(current, "Succeeded")

            await until(job_succeeded, timeout=WAIT, what="the job succeeds")

    asyncio.run(scenario())
