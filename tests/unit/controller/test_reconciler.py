"""The reconciler drives the real engine against the fake client and real informers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import pytest

from tests.polling import until
from tests.unit.api.builders import manifest
from trainop import errors
from trainop.api.kinds import kind_info
from trainop.controller.caches import OwnedObjects
from trainop.controller.reconciler import JobReconciler
from trainop.controller.topologies import ClusterTopologySource
from trainop.frameworks.registry import framework_for
from trainop.kube.clock import FakeClock
from trainop.kube.events import EventRecorder
from trainop.kube.fake import FakeClient
from trainop.kube.informer import Informer
from trainop.kube.resources import EVENTS, PODS, SERVICES, job_resource

PYTORCH = job_resource(kind_info("PyTorchJob"))


def versions(objs: list[dict[str, Any]]) -> set[tuple[str, str]]:
    return {(o["metadata"]["name"], o["metadata"]["resourceVersion"]) for o in objs}


@dataclass
class World:
    client: FakeClient
    jobs: Informer
    owned: OwnedObjects
    reconciler: JobReconciler
    clock: FakeClock

    async def settle(self) -> None:
        """Wait until every informer has caught up with the fake server."""
        await until(self._caught_up, timeout=5, what="every informer caught up", interval=0)

    async def _caught_up(self) -> bool:
        for informer in [self.jobs, *self.owned.all()]:
            served = (await self.client.list(informer.resource)).items
            if versions(informer.items()) != versions(served):
                return False
        return True

    async def names(self, resource: Any) -> list[str]:
        return [o["metadata"]["name"] for o in (await self.client.list(resource)).items]


@asynccontextmanager
async def world() -> AsyncIterator[World]:
    client, clock = FakeClient(), FakeClock()
    jobs = Informer(client, PYTORCH)
    owned = OwnedObjects(pods=Informer(client, PODS), services=Informer(client, SERVICES))
    reconciler = JobReconciler(
        client=client,
        jobs=jobs,
        owned=owned,
        framework=framework_for("PyTorchJob"),
        topologies=ClusterTopologySource(),
        clock=clock,
        recorder=EventRecorder(client=client, clock=clock),
    )
    tasks = [asyncio.create_task(i.run()) for i in [jobs, *owned.all()]]
    try:
        yield World(client, jobs, owned, reconciler, clock)
    finally:
        for task in tasks:
            task.cancel()


def run(body: Callable[[World], Any]) -> None:
    async def main() -> None:
        async with world() as w:
            await body(w)

    asyncio.run(main())


async def set_phase(w: World, phase: str) -> None:
    for pod in (await w.client.list(PODS)).items:
        patch = {"status": {"phase": phase}}
        await w.client.patch(
            PODS,
            name=pod["metadata"]["name"],
            namespace="default",
            patch=patch,
            subresource="status",
        )


async def conditions(w: World) -> list[tuple[str, str]]:
    job = await w.client.get(PYTORCH, name="job", namespace="default")
    return [(c["type"], c["status"]) for c in job["status"]["conditions"]]


def test_a_job_goes_from_created_to_succeeded_with_one_status_write_per_change() -> None:
    async def body(w: World) -> None:
        await w.client.create(PYTORCH, manifest("PyTorchJob"), namespace="default")
        await w.settle()
        await w.reconciler.reconcile("default/job")
        assert await w.names(PODS) == ["job-master-0", "job-worker-0", "job-worker-1"]
        assert await w.names(SERVICES) == ["job-master-0", "job-worker-0", "job-worker-1"]
        await w.settle()
        writes = w.reconciler.status_writes
        await w.reconciler.reconcile("default/job")
        assert w.reconciler.status_writes == writes, "nothing changed, nothing written"
        await set_phase(w, "Running")
        await w.settle()
        await w.reconciler.reconcile("default/job")
        assert ("Running", "True") in await conditions(w)
        await set_phase(w, "Succeeded")
        await w.settle()
        await w.reconciler.reconcile("default/job")
        assert await conditions(w) == [
            ("Created", "True"),
            ("Running", "False"),
            ("Succeeded", "True"),
        ]
        reasons = {e["reason"] for e in (await w.client.list(EVENTS)).items}
        assert {"SuccessfulCreatePod", "SuccessfulCreateService"} <= reasons

    run(body)


def test_a_stale_cache_never_duplicates_pods() -> None:
    async def body(w: World) -> None:
        await w.client.create(PYTORCH, manifest("PyTorchJob"), namespace="default")
        await w.settle()
        await w.reconciler.reconcile("default/job")
        await w.settle()
        # A restarted operator whose pod and service caches have not synced yet.
        empty = OwnedObjects(pods=Informer(w.client, PODS), services=Informer(w.client, SERVICES))
        restarted = JobReconciler(
            client=w.client,
            jobs=w.jobs,
            owned=empty,
            framework=framework_for("PyTorchJob"),
            topologies=ClusterTopologySource(),
            clock=w.clock,
            recorder=EventRecorder(client=w.client, clock=w.clock),
        )
        await restarted.reconcile("default/job")
        assert await w.names(PODS) == ["job-master-0", "job-worker-0", "job-worker-1"]
        assert w.client.calls.count(("create", "pods")) == 6  # three retried, none duplicated

    run(body)


def test_a_stale_job_cache_makes_the_status_write_conflict_instead_of_overwriting() -> None:
    async def body(w: World) -> None:
        await w.client.create(PYTORCH, manifest("PyTorchJob"), namespace="default")
        frozen = Informer(w.client, PYTORCH)  # synced once, then stopped: a stale cache
        task = asyncio.create_task(frozen.run())
        await asyncio.wait_for(frozen.synced.wait(), 5)
        task.cancel()
        patch = {"metadata": {"labels": {"touched": "yes"}}}
        await w.client.patch(PYTORCH, name="job", namespace="default", patch=patch)
        stale = JobReconciler(
            client=w.client,
            jobs=frozen,
            owned=w.owned,
            framework=framework_for("PyTorchJob"),
            topologies=ClusterTopologySource(),
            clock=w.clock,
            recorder=EventRecorder(client=w.client, clock=w.clock),
        )
        with pytest.raises(errors.ConflictError):
            await stale.reconcile("default/job")
        job = await w.client.get(PYTORCH, name="job", namespace="default")
        assert "status" not in job, "the stale write must not land"

    run(body)


def test_an_api_failure_is_recorded_and_raised_for_backoff() -> None:
    async def body(w: World) -> None:
        await w.client.create(PYTORCH, manifest("PyTorchJob"), namespace="default")
        await w.settle()
        w.client.inject("create", errors.ApiError("quota exceeded", status=403), resource=PODS)
        with pytest.raises(errors.ApiError, match="quota"):
            await w.reconciler.reconcile("default/job")
        events = (await w.client.list(EVENTS)).items
        assert any(
            e["reason"] == "FailedCreatePod" and "quota exceeded" in e["message"] for e in events
        )

    run(body)


def test_an_unparseable_job_is_terminal_and_explained_in_an_event() -> None:
    async def body(w: World) -> None:
        bad = manifest("PyTorchJob")
        bad["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = "two"
        await w.client.create(PYTORCH, bad, namespace="default")
        await w.settle()
        with pytest.raises(errors.TerminalError):
            await w.reconciler.reconcile("default/job")
        [event] = (await w.client.list(EVENTS)).items
        assert event["reason"] == "PyTorchJobFailedValidation"
        assert "spec.pytorchReplicaSpecs[Worker].replicas" in event["message"]
        assert await w.names(PODS) == []

    run(body)


def test_a_missing_job_is_done() -> None:
    async def body(w: World) -> None:
        result = await w.reconciler.reconcile("default/nothing")
        assert result.requeue_after is None
        assert w.client.calls == [c for c in w.client.calls if c[0] in ("list", "watch")]

    run(body)


def test_active_deadline_requeues_exactly_when_it_expires() -> None:
    async def body(w: World) -> None:
        job = manifest("PyTorchJob", runPolicy={"activeDeadlineSeconds": 90})
        await w.client.create(PYTORCH, job, namespace="default")
        await w.settle()
        result = await w.reconciler.reconcile("default/job")
        assert result.requeue_after is not None
        assert result.requeue_after.total_seconds() == 90

    run(body)


def test_a_finished_job_with_ttl_zero_is_deleted_without_a_failing_status_write() -> None:
    async def body(w: World) -> None:
        job = manifest("PyTorchJob", runPolicy={"ttlSecondsAfterFinished": 0})
        await w.client.create(PYTORCH, job, namespace="default")
        await w.settle()
        await w.reconciler.reconcile("default/job")
        await w.settle()
        await set_phase(w, "Succeeded")
        await w.settle()
        await w.reconciler.reconcile("default/job")  # writes Succeeded and completionTime
        await w.settle()
        result = await w.reconciler.reconcile("default/job")  # TTL expired: delete the job
        assert result.requeue_after is None
        with pytest.raises(errors.NotFoundError):
            await w.client.get(PYTORCH, name="job", namespace="default")
        reasons = [e["reason"] for e in (await w.client.list(EVENTS)).items]
        assert "SuccessfulDeleteJob" in reasons

    run(body)


def test_a_conflicting_terminal_status_write_applies_no_cleanup() -> None:
    """Cleanup applied before a failed write would leave a job the retry sees as running,
    with its pods (and PodGroup) gone: the terminal status is persisted first."""

    async def body(w: World) -> None:
        job = manifest("PyTorchJob", runPolicy={"cleanPodPolicy": "All"})
        await w.client.create(PYTORCH, job, namespace="default")
        await w.settle()
        await w.reconciler.reconcile("default/job")
        await set_phase(w, "Succeeded")
        await w.settle()
        conflict = errors.ConflictError("the object has been modified", status=409)
        w.client.inject("replace", conflict, resource=PYTORCH)
        with pytest.raises(errors.ConflictError):
            await w.reconciler.reconcile("default/job")
        assert await w.names(PODS) == ["job-master-0", "job-worker-0", "job-worker-1"]
        await w.settle()
        await w.reconciler.reconcile("default/job")
        assert ("Succeeded", "True") in await conditions(w)
        assert await w.names(PODS) == []

    run(body)
