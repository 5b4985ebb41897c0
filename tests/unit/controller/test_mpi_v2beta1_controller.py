"""One operator, both MPIJob semantics: a v1 and a v2beta1 MPIJob named alike in two
namespaces run side by side under the real ``Manager`` (FakeClient, FakeClock), each creating
its own version's objects; the v2beta1 job follows its launcher Job to Succeeded."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.polling import until
from trainop.api.kinds import MPIJOB
from trainop.controller.manager import Manager, ManagerOptions
from trainop.controller.mpi_v2beta1 import LAUNCHER_JOBS
from trainop.kube.clock import FakeClock
from trainop.kube.fake import FakeClient
from trainop.kube.resources import CONFIGMAPS, PODS, SECRETS, SERVICES, job_resource

CONTAINER = {"name": "mpi", "image": "i", "command": ["mpirun", "true"]}


def mpijob(namespace: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "MPIJob",
        "metadata": {"name": "pi", "namespace": namespace},
        "spec": {
            "mpiReplicaSpecs": {
                "Launcher": {"replicas": 1, "template": {"spec": {"containers": [CONTAINER]}}},
                "Worker": {"replicas": 2, "template": {"spec": {"containers": [CONTAINER]}}},
            },
            **spec,
        },
    }


async def names(client: FakeClient, resource: Any, namespace: str) -> set[str]:
    return {o["metadata"]["name"] for o in (await client.list(resource, namespace=namespace)).items}


def test_v1_and_v2beta1_jobs_of_one_name_each_get_their_own_semantics() -> None:
    async def main() -> None:
        client, clock = FakeClient(), FakeClock()
        manager = Manager(client=client, clock=clock, options=ManagerOptions(kinds=("MPIJob",)))
        task = asyncio.create_task(manager.run())
        try:
            jobs = job_resource(MPIJOB)
            await client.create(jobs, mpijob("legacy"), namespace="legacy")
            # As stored after a write through v2beta1 (the CRD default marks the semantics).
            await client.create(
                jobs, mpijob("modern", sshAuthMountPath="/root/.ssh"), namespace="modern"
            )

            async def launcher_job() -> Any:
                found = await names(client, LAUNCHER_JOBS, "modern")
                return "pi-launcher" in found

            await until(launcher_job, timeout=10)
            assert await names(client, SERVICES, "modern") == {"pi"}
            assert await names(client, SECRETS, "modern") == {"pi-ssh"}
            assert await names(client, PODS, "modern") == {"pi-worker-0", "pi-worker-1"}
            config = await client.get(CONFIGMAPS, name="pi-config", namespace="modern")
            assert set(config["data"]) == {"hostfile", "discover_hosts.sh"}
            assert config["data"]["hostfile"].startswith("pi-worker-0.pi.modern.svc slots=1\n")

            async def v1_launcher() -> Any:
                return "pi-launcher" in await names(client, PODS, "legacy")

            await until(v1_launcher, timeout=10)  # v1: the launcher is a Pod, no Job, kubexec.sh
            assert await names(client, LAUNCHER_JOBS, "legacy") == set()
            legacy_config = await client.get(CONFIGMAPS, name="pi-config", namespace="legacy")
            assert "kubexec.sh" in legacy_config["data"]

            await client.patch(
                LAUNCHER_JOBS,
                name="pi-launcher",
                namespace="modern",
                patch={
                    "status": {
                        "conditions": [{"type": "Complete", "status": "True"}],
                        "completionTime": "2026-01-01T00:00:10Z",
                    }
                },
                subresource="status",
            )

            async def succeeded() -> Any:
                job = await client.get(jobs, name="pi", namespace="modern")
                conditions = (job.get("status") or {}).get("conditions") or []
                return [c["type"] for c in conditions if c["status"] == "True"] == [
                    "Created",
                    "Succeeded",
                ] and job

            done = await until(succeeded, timeout=10)
            assert done["status"]["completionTime"] == "2026-01-01T00:00:10Z"
            assert done["status"]["replicaStatuses"]["Launcher"] == {"succeeded": 1}
            exposition = manager.metrics.exposition().decode()
            assert "mpi_operator_jobs_created_total 1.0" in exposition
            assert "mpi_operator_jobs_successful_total 1.0" in exposition
            assert "mpi_operator_jobs_failed_total 0.0" in exposition
            info = 'mpi_operator_job_info{launcher="pi-launcher",namespace="modern"} 1.0'
            assert info in exposition
            created = 'training_operator_jobs_created_total{framework="mpi",job_namespace="modern"}'
            assert f"{created} 1.0" in exposition
            legacy = await client.get(jobs, name="pi", namespace="legacy")
            assert "Succeeded" not in {c["type"] for c in legacy["status"]["conditions"]}
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    asyncio.run(main())


class Counting:
    """The FakeClient as the operator sees it, counting its GET and LIST requests."""

    def __init__(self, server: FakeClient) -> None:
        self.server = server
        self.reads: list[tuple[str, str]] = []

    async def get(self, resource: Any, **kw: Any) -> Any:
        self.reads.append(("get", resource.plural))
        return await self.server.get(resource, **kw)

    async def list(self, resource: Any, **kw: Any) -> Any:
        self.reads.append(("list", resource.plural))
        return await self.server.list(resource, **kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.server, name)


def test_a_running_v2beta1_job_is_reconciled_from_caches_and_follows_its_launcher_job() -> None:
    """Once the caches are synced, no reconcile of a v2beta1 job sends a GET or LIST, and the
    launcher Job's status change alone (no clock advance: nothing polls) queues the MPIJob and
    makes it Succeeded."""

    async def main() -> None:
        server, clock = FakeClient(), FakeClock()
        client = Counting(server)
        manager = Manager(
            client=client,  # type: ignore[arg-type]
            clock=clock,
            options=ManagerOptions(kinds=("MPIJob",)),
        )
        task = asyncio.create_task(manager.run())
        try:
            await until(lambda: _true(manager.ready), timeout=10)
            client.reads.clear()  # the informers' initial lists
            jobs = job_resource(MPIJOB)
            await server.create(jobs, mpijob("ns", sshAuthMountPath="/root/.ssh"), namespace="ns")

            async def launcher_job() -> Any:
                return "pi-launcher" in await names(server, LAUNCHER_JOBS, "ns")

            await until(launcher_job, timeout=10)
            for pod in ("pi-worker-0", "pi-worker-1"):
                running = {"status": {"phase": "Running"}}
                await server.patch(
                    PODS, name=pod, namespace="ns", patch=running, subresource="status"
                )

            async def launcher_status() -> Any:
                job = await server.get(jobs, name="pi", namespace="ns")
                return "Launcher" in ((job.get("status") or {}).get("replicaStatuses") or {})

            await until(launcher_status, timeout=10)
            done = {"conditions": [{"type": "Complete", "status": "True"}]}
            await server.patch(
                LAUNCHER_JOBS,
                name="pi-launcher",
                namespace="ns",
                patch={"status": done},
                subresource="status",
            )

            async def succeeded() -> Any:
                job = await server.get(jobs, name="pi", namespace="ns")
                found = (job.get("status") or {}).get("conditions") or []
                return any(c["type"] == "Succeeded" and c["status"] == "True" for c in found)

            await until(succeeded, timeout=10)
            assert client.reads == []
            exposition = manager.metrics.exposition().decode()
            assert 'kind="MPIJob",outcome="done"' in exposition
            assert 'outcome="requeue"' not in exposition  # nothing waits on a timer
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    asyncio.run(main())


async def _true(value: bool) -> bool:
    return value
