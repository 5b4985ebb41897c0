"""A job run in phases, end to end: DGLJob's partitioner, then its workers (spec G4, G3).

The real ``Manager`` against the embedded API server, pods moved by the ``SimulatedKubelet`` on a
``FakeClock`` (``cluster``). The partitioner is derived from the Worker template, so the
Worker's simulation rules are the partitioner's too. Expected: the partitioner and the launcher
start at once; the workers (and their Services) only once the partitioner Succeeded; the stage
events ``DGLJobPartitioning``, ``DGLJobPartitioned``, ``DGLJobTraining`` in that order; the
launcher decides success; a failed partitioner fails the job and no worker is ever created.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.cluster.apiserver.conftest import RunningServer
from tests.integration.controller.cluster import (
    Cluster,
    annotate,
    condition_on,
    is_true,
    run_cluster,
    start_cluster_server,
)
from tests.unit.api.builders import manifest
from trainop.kube.client import Obj
from trainop.kube.resources import CONFIGMAPS, ROLES

KIND = "DGLJob"
STAGES = ("DGLJobPartitioning", "DGLJobPartitioned", "DGLJobTraining")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    yield from start_cluster_server(tmp_path_factory.mktemp("phases"))


def phases(pods: dict[str, Obj]) -> dict[str, str]:
    return {name: (pod.get("status") or {}).get("phase", "") for name, pod in pods.items()}


async def stages(cluster: Cluster) -> list[str]:
    """The stage events recorded so far, oldest first."""
    found = [e for reason in STAGES for e in await cluster.events(reason)]
    found.sort(key=lambda e: (e.get("firstTimestamp") or "", STAGES.index(e["reason"])))
    return [e["reason"] for e in found]


def test_the_partitioner_runs_first_and_the_workers_only_after_it_succeeded(
    server: RunningServer,
) -> None:
    async def body(cluster: Cluster) -> None:
        spec = annotate(manifest(KIND, name="graph"), "Worker", run_seconds=10)
        annotate(spec, "Launcher", run_seconds=40)
        await cluster.create_job(spec)
        first = await cluster.until_pods("graph", 2, "Running")
        assert set(first) == {"graph-launcher", "graph-partitioner"}
        await cluster.settle()
        assert set(await cluster.pods("graph")) == set(first), "no worker while partitioning"
        assert await cluster.services("graph") == {}, "Services only for workers, with them"
        running = await cluster.until_condition(KIND, "graph", "Running")
        assert condition_on(running, "Running")["reason"] == "DGLJobRunning"
        assert await stages(cluster) == ["DGLJobPartitioning"]
        partitioner = first["graph-partitioner"]
        assert partitioner["metadata"]["labels"]["dgl-replica-type"] == "Partitioner"
        env = {e["name"]: e["value"] for e in partitioner["spec"]["containers"][0]["env"]}
        assert env["DGL_OPERATOR_PHASE_ENV"] == "Partitioner"
        role = await cluster.get(ROLES, "graph-partitioner")
        assert role is not None
        assert role["rules"][1]["resourceNames"] == ["graph-launcher"]

        await cluster.advance(10)  # the partitioner succeeds: the workers come
        pods = phases(await cluster.until_pods("graph", 4))
        assert pods["graph-partitioner"] == "Succeeded"
        assert {n for n in pods if "worker" in n} == {"graph-worker-0", "graph-worker-1"}
        await cluster.until_pods("graph", 4)
        assert set(await cluster.services("graph")) == {"graph-worker-0", "graph-worker-1"}
        await cluster.settle()
        assert await stages(cluster) == list(STAGES)
        config = await cluster.get(CONFIGMAPS, "graph-config")
        assert config is not None
        assert set(config["data"]) == {"kubexec.sh", "hostfile", "partfile", "leadfile"}

        await cluster.advance(30)  # the launcher exits 0 at 40 s
        done = await cluster.until_condition(KIND, "graph", "Succeeded")
        assert condition_on(done, "Succeeded")["reason"] == "DGLJobSucceeded"
        counts = {rt: s.get("succeeded") for rt, s in done["status"]["replicaStatuses"].items()}
        assert counts == {"Launcher": 1, "Worker": 2, "Partitioner": 1}

    run_cluster(server, body)


def test_a_failing_partitioner_fails_the_job_without_creating_workers(
    server: RunningServer,
) -> None:
    async def body(cluster: Cluster) -> None:
        spec = annotate(manifest(KIND, name="broken"), "Worker", run_seconds=10, exit_code=1)
        annotate(spec, "Launcher", run_seconds=1000)
        await cluster.create_job(spec)
        await cluster.until_pods("broken", 2, "Running")
        await cluster.advance(10)
        failed = await cluster.until_condition(KIND, "broken", "Failed")
        message = condition_on(failed, "Failed")["message"]
        assert message == "DGLJob broken is failed because 1 Partitioner replica(s) failed."
        await cluster.settle()
        created = [e["message"] for e in await cluster.events("SuccessfulCreatePod")]
        assert sorted(created) == [f"Created pod: broken-{t}" for t in ("launcher", "partitioner")]
        # cleanPodPolicy defaults to Running for DGLJob: the waiting launcher goes.
        assert phases(await cluster.until_pods("broken", 1)) == {"broken-partitioner": "Failed"}
        assert await stages(cluster) == ["DGLJobPartitioning"]

    run_cluster(server, body)


def test_skip_runs_the_launcher_alone(server: RunningServer) -> None:
    """Spec G3: ``partitionMode: Skip``, a launcher only (Qihoo's stays Pending forever)."""

    async def body(cluster: Cluster) -> None:
        spec = manifest(KIND, name="alone", partitionMode="Skip")
        del spec["spec"]["dglReplicaSpecs"]["Worker"]
        await cluster.create_job(spec)
        pods = await cluster.until_pods("alone", 1, "Running")
        launcher = pods["alone-launcher"]["spec"]
        env = {e["name"]: e["value"] for e in launcher["containers"][0]["env"]}
        assert env == {"DGL_OPERATOR_PHASE_ENV": "Launcher_Workload"}
        assert not launcher.get("initContainers")
        await cluster.advance(30)
        done = await cluster.until_condition(KIND, "alone", "Succeeded")
        assert is_true(done, "Succeeded")
        assert await stages(cluster) == ["DGLJobTraining"]

    run_cluster(server, body)
