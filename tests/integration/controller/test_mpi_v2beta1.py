"""MPIJob v2beta1 end to end on the embedded API server (CRD defaulting, admission), the real
``Manager``, local mode's Job controller and the simulated kubelet, all on one FakeClock:
``WaitForWorkersReady`` creates no launcher Job until every worker is Ready, then the launcher
Job's success is the MPIJob's."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.cluster.apiserver.conftest import RunningServer
from tests.integration.controller.cluster import (
    DEADLINE,
    Cluster,
    is_true,
    run_cluster,
    sim_annotations,
    start_cluster_server,
)
from tests.polling import until
from trainop.cluster.controllers.jobs import JOBS, LocalJobController
from trainop.controller.manager import ManagerOptions
from trainop.kube.resources import PODS, SECRETS, Resource

MPIJOBS_V2 = Resource("kubeflow.org", "v2beta1", "mpijobs", "MPIJob")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    yield from start_cluster_server(tmp_path_factory.mktemp("mpiv2"))


def v2_job(**spec: Any) -> dict[str, Any]:
    def template(**rules: object) -> dict[str, Any]:
        container = {"name": "mpi", "image": "mpi:1", "command": ["true"]}
        meta = {"annotations": sim_annotations(**rules)}
        return {"metadata": meta, "spec": {"containers": [container]}}

    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": "pi"},
        "spec": {
            "mpiReplicaSpecs": {
                "Launcher": {"template": template(run_seconds=5)},
                "Worker": {
                    "replicas": 2,
                    "template": template(pending_seconds=10, run_seconds=3600),
                },
            },
            **spec,
        },
    }


def test_wait_for_workers_ready_then_the_launcher_jobs_success(server: RunningServer) -> None:
    async def body(cluster: Cluster) -> None:
        jobs = LocalJobController(
            client=cluster.client, clock=cluster.clock, namespace=cluster.namespace
        )
        task = asyncio.create_task(jobs.run())
        try:
            await scenario(cluster)
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def scenario(cluster: Cluster) -> None:
        created = await cluster.client.create(
            MPIJOBS_V2,
            {**v2_job(launcherCreationPolicy="WaitForWorkersReady")},
            namespace=cluster.namespace,
        )
        assert created["spec"]["sshAuthMountPath"] == "/root/.ssh"  # the CRD default
        await cluster.until_pods("pi", 2)
        for _ in range(9):  # workers Pending for 10 s: no launcher Job meanwhile
            await cluster.advance(1)
            assert await cluster.get(JOBS, "pi-launcher") is None
        await cluster.advance(1)  # both workers Running and Ready

        async def launcher_job() -> Any:
            return await cluster.get(JOBS, "pi-launcher")

        await until(launcher_job, timeout=DEADLINE, what="the launcher Job")
        await cluster.advance(1)  # the Job controller's pod starts
        pods = await cluster.client.list(
            PODS, namespace=cluster.namespace, label_selector="batch.kubernetes.io/job-name"
        )
        assert len(pods.items) == 1
        await cluster.advance(5)  # the launcher exits 0

        job = await cluster.until_condition("MPIJob", "pi", "Succeeded")
        assert is_true(job, "Created")
        assert job["status"]["replicaStatuses"]["Launcher"] == {"succeeded": 1}
        reasons = {c["type"]: c["reason"] for c in job["status"]["conditions"]}
        assert reasons["Succeeded"] == "MPIJobSucceeded"
        secret = await cluster.client.get(SECRETS, name="pi-ssh", namespace=cluster.namespace)
        assert set(secret["data"]) == {"ssh-privatekey", "ssh-publickey"}

        # Deleting the MPIJob removes what it owns (garbage collection by owner uid, whatever
        # the version the ownerReferences name); the launcher's pods go with its Job.
        await cluster.client.delete(MPIJOBS_V2, name="pi", namespace=cluster.namespace)

        async def all_gone() -> bool:
            left = [await cluster.get(JOBS, "pi-launcher"), await cluster.get(SECRETS, "pi-ssh")]
            pods = await cluster.client.list(PODS, namespace=cluster.namespace)
            return left == [None, None] and not pods.items

        await until(all_gone, timeout=DEADLINE, what="the job's objects garbage-collected")

    run_cluster(server, body, options=ManagerOptions(kinds=("MPIJob",)))
