"""The manager wires informers, queues and workers: every enabled kind converges."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import pytest

from tests.polling import until
from tests.unit.api.builders import manifest
from trainop import errors
from trainop.api.kinds import KINDS, kind_info
from trainop.controller.manager import Manager, ManagerOptions
from trainop.controller.queue import WorkQueue
from trainop.kube.clock import FakeClock
from trainop.kube.fake import FakeClient
from trainop.kube.resources import PODS, job_resource


def run(options: ManagerOptions, body: Callable[[FakeClient, FakeClock, Manager], Awaitable[None]]):
    async def main() -> None:
        client, clock = FakeClient(), FakeClock()
        manager = Manager(client=client, clock=clock, options=options)
        task = asyncio.create_task(manager.run())
        try:
            await body(client, clock, manager)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    asyncio.run(main())


async def pod_names(client: FakeClient) -> set[str]:
    return {p["metadata"]["name"] for p in (await client.list(PODS)).items}


def test_every_kind_gets_its_pods() -> None:
    async def body(client: FakeClient, clock: FakeClock, manager: Manager) -> None:
        for info in KINDS:
            job = manifest(info.kind, name=info.plural[:-1])
            await client.create(job_resource(info), job, namespace="default")
        await until(lambda: _all_created(client), timeout=10, interval=0)
        assert manager.ready

    async def _all_created(client: FakeClient) -> bool:
        names = await pod_names(client)
        return all(any(n.startswith(f"{i.plural[:-1]}-") for n in names) for i in KINDS)

    run(ManagerOptions(), body)


def test_a_failed_create_is_retried_after_backoff() -> None:
    async def body(client: FakeClient, clock: FakeClock, manager: Manager) -> None:
        await until(lambda: _is_ready(manager), timeout=10, interval=0)
        client.inject("create", errors.ApiError("throttled", status=429), resource=PODS)
        await client.create(
            job_resource(kind_info("JAXJob")), manifest("JAXJob"), namespace="default"
        )
        queue = manager.queues["JAXJob"]
        await until(lambda: _failed_once(queue), timeout=10, interval=0)
        assert await pod_names(client) <= {"job-worker-1"}, "the first create failed"
        clock.advance(1)
        await until(lambda: _has(client, {"job-worker-0", "job-worker-1"}), timeout=10, interval=0)

    async def _is_ready(manager: Manager) -> bool:
        return manager.ready

    async def _failed_once(queue: object) -> bool:
        assert isinstance(queue, WorkQueue)
        return queue.failures("default/job") == 1

    async def _has(client: FakeClient, names: set[str]) -> bool:
        return names <= await pod_names(client)

    run(ManagerOptions(kinds=("JAXJob",)), body)


def test_enabled_kinds_limit_what_is_reconciled() -> None:
    async def body(client: FakeClient, clock: FakeClock, manager: Manager) -> None:
        await client.create(
            job_resource(kind_info("TFJob")), manifest("TFJob", name="tf"), namespace="default"
        )
        await client.create(
            job_resource(kind_info("PyTorchJob")),
            manifest("PyTorchJob", name="pt"),
            namespace="default",
        )
        await until(lambda: _has_pytorch(client), timeout=10, interval=0)
        assert not any(n.startswith("tf-") for n in await pod_names(client))
        assert set(manager.queues) == {"PyTorchJob"}
        assert ("watch", "tfjobs") not in client.calls

    async def _has_pytorch(client: FakeClient) -> bool:
        return "pt-worker-1" in await pod_names(client)

    run(ManagerOptions(kinds=("pytorchjob",)), body)


def test_pod_changes_requeue_their_owner() -> None:
    async def body(client: FakeClient, clock: FakeClock, manager: Manager) -> None:
        await client.create(
            job_resource(kind_info("JAXJob")), manifest("JAXJob"), namespace="default"
        )
        await until(lambda: _pods(client, 2), timeout=10, interval=0)
        for name in ("job-worker-0", "job-worker-1"):
            patch = {"status": {"phase": "Succeeded"}}
            await client.patch(
                PODS, name=name, namespace="default", patch=patch, subresource="status"
            )
        await until(lambda: _succeeded(client), timeout=10, interval=0)

    async def _pods(client: FakeClient, count: int) -> bool:
        return len(await pod_names(client)) == count

    async def _succeeded(client: FakeClient) -> bool:
        job = await client.get(job_resource(kind_info("JAXJob")), name="job", namespace="default")
        conditions = (job.get("status") or {}).get("conditions") or []
        return any(c["type"] == "Succeeded" and c["status"] == "True" for c in conditions)

    run(ManagerOptions(kinds=("JAXJob",)), body)


def test_owned_pods_and_services_are_cached_without_their_spec() -> None:
    async def body(client: FakeClient, clock: FakeClock, manager: Manager) -> None:
        await client.create(
            job_resource(kind_info("JAXJob")), manifest("JAXJob"), namespace="default"
        )
        await until(lambda: _cached(manager), timeout=10, interval=0)
        for informer in (manager.owned.pods, manager.owned.services):
            for obj in informer.items():
                assert "spec" not in obj
                assert obj["metadata"]["ownerReferences"], "the owner index still works"
        pods = (await client.list(PODS)).items
        assert all(p["spec"]["containers"] for p in pods), "the API's objects are untouched"

    async def _cached(manager: Manager) -> bool:
        return len(manager.owned.pods.items()) == 2 and len(manager.owned.services.items()) == 2

    run(ManagerOptions(kinds=("JAXJob",)), body)


def test_a_status_conflict_is_retried_quietly(caplog: pytest.LogCaptureFixture) -> None:
    async def body(client: FakeClient, clock: FakeClock, manager: Manager) -> None:
        await until(lambda: _is_ready(manager), timeout=10, interval=0)
        conflict = errors.ConflictError("the object has been modified", status=409)
        client.inject("replace", conflict, resource=job_resource(kind_info("JAXJob")))
        await client.create(
            job_resource(kind_info("JAXJob")), manifest("JAXJob"), namespace="default"
        )
        await until(lambda: _failed_once(manager.queues["JAXJob"]), timeout=10, interval=0)
        clock.advance(1)
        await until(lambda: _has_status(client), timeout=10, interval=0)

    async def _is_ready(manager: Manager) -> bool:
        return manager.ready

    async def _failed_once(queue: WorkQueue) -> bool:
        return queue.failures("default/job") == 1

    async def _has_status(client: FakeClient) -> bool:
        job = await client.get(job_resource(kind_info("JAXJob")), name="job", namespace="default")
        return bool((job.get("status") or {}).get("conditions"))

    with caplog.at_level(logging.INFO, logger="trainop.controller.manager"):
        run(ManagerOptions(kinds=("JAXJob",)), body)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
