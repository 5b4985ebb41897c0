"""The Job controller killed between the writes of kube's counting protocol (spec §3.4), then
restarted with no memory, against the embedded API server and a simulated kubelet on a fake
clock: each ended pod is counted exactly once.

The first controller talks through ``CrashingClient``, which lets the status write that
records ended pods in ``uncountedTerminatedPods`` through and then, like ``kill -9`` of the
daemon, stops the controller at the next step: before the first finalizer removal
(``record``) or before the write of the counters (``counters``). A fresh controller then
resumes from what the API server holds. Expected counts come from the spec: one pod, one
count; ``failed > backoffLimit`` fails a Job.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from tests.integration.cluster.apiserver.conftest import RunningServer, start_server
from tests.integration.cluster.jobs_harness import Node, Plane, run_plane, true_types
from tests.polling import until
from trainop.cluster.controllers.jobs import LocalJobController
from trainop.cluster.kubelet.sim import Rules
from trainop.kube.client import Client, JsonPatch, Obj, ObjectList, PatchType, WatchEvent
from trainop.kube.resources import Resource

TRACKING = "batch.kubernetes.io/job-tracking"
BACKOFF = "Job has reached the specified backoff limit"


class KilledError(Exception):
    """The controller process died here."""


class CrashingClient:
    """``inner``, until the step after the first status write with a non-empty
    ``uncountedTerminatedPods``: a pod PATCH (``record``) or a status write (``counters``)
    raises ``KilledError`` instead of reaching the server."""

    def __init__(self, inner: Client, at: str, *, recorded: bool = False) -> None:
        self.inner, self.at, self.recorded = inner, at, recorded

    async def get(self, resource: Resource, *, name: str, namespace: str | None = None) -> Obj:
        return await self.inner.get(resource, name=name, namespace=namespace)

    async def list(self, resource: Resource, **kw: Any) -> ObjectList:
        return await self.inner.list(resource, **kw)

    async def create(self, resource: Resource, obj: Obj, *, namespace: str | None = None) -> Obj:
        return await self.inner.create(resource, obj, namespace=namespace)

    async def patch(
        self,
        resource: Resource,
        *,
        name: str,
        patch: Obj | JsonPatch,
        namespace: str | None = None,
        patch_type: PatchType = "merge",
        subresource: str = "",
        field_manager: str = "",
        force: bool = False,
    ) -> Obj:
        if self.recorded and self.at == "record":
            raise KilledError(f"before removing the finalizer of {name}")
        return await self.inner.patch(resource, name=name, patch=patch, namespace=namespace,
                                      patch_type=patch_type, subresource=subresource,
                                      field_manager=field_manager, force=force)  # fmt: skip

    async def replace(
        self, resource: Resource, obj: Obj, *, namespace: str | None = None, subresource: str = ""
    ) -> Obj:
        if self.recorded and self.at == "counters" and subresource == "status":
            raise KilledError("before writing the counters")
        written = await self.inner.replace(resource, obj, namespace=namespace,
                                           subresource=subresource)  # fmt: skip
        if subresource == "status" and (obj.get("status") or {}).get("uncountedTerminatedPods"):
            self.recorded = True
        return written

    async def delete(self, resource: Resource, **kw: Any) -> None:
        await self.inner.delete(resource, **kw)

    def watch(self, resource: Resource, **kw: Any) -> AsyncIterator[WatchEvent]:
        return self.inner.watch(resource, **kw)

    async def close(self) -> None:
        await self.inner.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    yield from start_server(tmp_path_factory.mktemp("jobs-crash"), bookmark_interval=0.2)


def batch_job(name: str, **spec: Any) -> dict[str, Any]:
    template = {
        "metadata": {"labels": {"app": name}},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "img"}]},
    }
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"template": template, **spec}}  # fmt: skip


@contextlib.asynccontextmanager
async def controller(plane: Plane, client: Client) -> AsyncIterator[asyncio.Task[None]]:
    """A Job controller over ``client`` for the body of the ``async with``."""
    running = LocalJobController(client=client, clock=plane.clock, namespace=plane.namespace)
    task = asyncio.create_task(running.run())
    try:
        await until(lambda: running.synced.is_set() or task.done(), timeout=30, what="synced")
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, KilledError):
            await task


async def crash_after(
    plane: Plane, at: str, name: str, pods: int, seconds: float
) -> dict[str, Any]:
    """Run ``name`` under a controller that dies at ``at`` once its first ``pods`` ended,
    ``seconds`` later; the Job's status as the crash left it."""
    crashing = CrashingClient(plane.client, at)
    async with controller(plane, crashing) as task:
        await until(lambda: _count(plane, name, pods), timeout=30, what="the first pods")
        await plane.settle()
        plane.clock.advance(seconds)
        await until(task.done, timeout=30, what="the controller's crash")
        assert isinstance(task.exception(), KilledError)
    await plane.settle()  # the kubelet's last status writes landed
    job = await plane.job(name)
    assert job is not None
    status: dict[str, Any] = job["status"]
    recorded = status["uncountedTerminatedPods"]
    assert recorded, "the crash came after the record"
    released = {p["metadata"]["uid"] for p in await plane.pods(name)
                if TRACKING not in (p["metadata"].get("finalizers") or [])}  # fmt: skip
    uids = {*recorded.get("succeeded", []), *recorded.get("failed", [])}
    assert (uids <= released) == (at == "counters"), "finalizers removed only before 'counters'"
    return status


@pytest.mark.parametrize("at", ["record", "counters"])
def test_successes_recorded_before_a_crash_count_once(server: RunningServer, at: str) -> None:
    async def body(plane: Plane) -> None:
        await plane.create(batch_job("work", completions=3, parallelism=2))
        left = await crash_after(plane, at, "work", 2, 5)  # both pods succeed
        assert "succeeded" not in left, "recorded, not counted yet"
        async with controller(plane, plane.client):
            job = await plane.until_status("work", lambda s: s.get("succeeded") == 2)
            await plane.settle()
            job = await plane.job("work") or job
            assert job["status"]["succeeded"] == 2, "two pods, two successes"
            assert job["status"]["uncountedTerminatedPods"] == {}
            assert "Complete" not in true_types(job["status"])
            await until(lambda: _count(plane, "work", 3), timeout=30, what="the third pod")
            await plane.advance(5)
            done = await plane.until_condition("work", "Complete")
            assert done["status"]["succeeded"] == 3

    run_plane(server, body, (Node("node", Rules(run_seconds=5)),), with_controller=False)


def test_a_second_crash_before_the_finalizers_go_writes_no_counter(server: RunningServer) -> None:
    async def body(plane: Plane) -> None:
        await plane.create(batch_job("twice", completions=2, parallelism=2))
        await crash_after(plane, "record", "twice", 2, 5)
        again = CrashingClient(plane.client, "record", recorded=True)
        async with controller(plane, again) as task:  # resumes from the record, dies again
            await until(task.done, timeout=30, what="the second crash")
            assert isinstance(task.exception(), KilledError)
        job = await plane.job("twice")
        assert job is not None
        assert "succeeded" not in job["status"], "no counter before the finalizers are gone"
        assert len(job["status"]["uncountedTerminatedPods"]["succeeded"]) == 2
        async with controller(plane, plane.client):
            done = await plane.until_condition("twice", "Complete")
            assert done["status"]["succeeded"] == 2
            assert done["status"]["uncountedTerminatedPods"] == {}

    run_plane(server, body, (Node("node", Rules(run_seconds=5)),), with_controller=False)


@pytest.mark.parametrize("at", ["record", "counters"])
def test_a_failure_recorded_before_a_crash_does_not_reach_the_backoff_limit_early(
    server: RunningServer, at: str
) -> None:
    async def body(plane: Plane) -> None:
        await plane.create(batch_job("flaky", completions=1, backoffLimit=1))
        left = await crash_after(plane, at, "flaky", 1, 1)  # the pod fails
        assert "failed" not in left
        async with controller(plane, plane.client):
            await plane.until_status("flaky", lambda s: s.get("failed") == 1)
            await plane.settle()
            job = await plane.job("flaky")
            assert job is not None
            assert job["status"]["failed"] == 1, "one pod, one failure"
            assert "conditions" not in job["status"], "1 failure is within backoffLimit 1"
            await plane.advance(10)  # the replacement back-off
            await until(lambda: _count(plane, "flaky", 2), timeout=30, what="the replacement")
            await plane.advance(1)  # the second pod fails too
            failed = await plane.until_condition("flaky", "Failed")
            assert failed["status"]["failed"] == 2
            assert failed["status"]["conditions"][-1]["message"] == BACKOFF

    rules = Rules(run_seconds=1, exit_code=1)
    run_plane(server, body, (Node("node", rules),), with_controller=False)


async def _count(plane: Plane, job: str, count: int) -> bool:
    return len(await plane.pods(job)) == count
