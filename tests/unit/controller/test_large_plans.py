"""A large job's plan does not stall the event loop the local API server and kubelet share."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from tests.polling import until
from tests.unit.api.builders import manifest
from trainop import errors
from trainop.api import manifest as wire
from trainop.api.kinds import kind_info
from trainop.controller import reconciler as reconciler_module
from trainop.controller.caches import OwnedObjects
from trainop.controller.reconciler import OFFLOAD_REPLICAS, JobReconciler, replica_total
from trainop.controller.topologies import ClusterTopologySource
from trainop.frameworks.registry import framework_for
from trainop.kube.clock import FakeClock
from trainop.kube.events import EventRecorder
from trainop.kube.fake import FakeClient
from trainop.kube.informer import Informer
from trainop.kube.resources import PODS, SERVICES, job_resource

TFJOB = job_resource(kind_info("TFJob"))
WORKERS = 600  # TF_CONFIG names every replica in every pod: the plan is quadratic


def big_tfjob() -> dict[str, object]:
    body = manifest("TFJob", name="big")
    body["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = WORKERS
    return body


def test_replica_total_counts_absent_as_one_and_negative_as_zero() -> None:
    body = manifest("TFJob")
    body["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = 5
    del body["spec"]["tfReplicaSpecs"]["PS"]["replicas"]
    body["spec"]["tfReplicaSpecs"]["Chief"]["replicas"] = -1
    assert replica_total(wire.parse_job(body)) == 6


def planning_threads(body: dict[str, object], monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Reconcile ``body`` once; for each plan computed, whether it ran on the event loop's thread.

    The property that keeps the shared loop serving (API server, kubelet, other jobs) is where
    the plan runs, not how long it takes, so this asserts the thread and never a duration."""
    on_loop_thread: list[bool] = []
    original = reconciler_module.engine.plan

    def recording_plan(*args: Any, **kwargs: Any) -> Any:
        on_loop_thread.append(threading.current_thread() is threading.main_thread())
        return original(*args, **kwargs)

    monkeypatch.setattr(reconciler_module.engine, "plan", recording_plan)

    async def main() -> None:
        client, clock = FakeClient(), FakeClock()
        jobs = Informer(client, TFJOB)
        owned = OwnedObjects(pods=Informer(client, PODS), services=Informer(client, SERVICES))
        reconciler = JobReconciler(
            client=client,
            jobs=jobs,
            owned=owned,
            framework=framework_for("TFJob"),
            topologies=ClusterTopologySource(),
            clock=clock,
            recorder=EventRecorder(client=client, clock=clock),
        )
        tasks = [asyncio.create_task(i.run()) for i in [jobs, *owned.all()]]
        name = body["metadata"]["name"]  # type: ignore[index]
        await client.create(TFJOB, body, namespace="default")
        await until(
            lambda: jobs.get("default", name), timeout=10, what=f"{name} cached", interval=0
        )
        # Only the plan matters here: the reconcile stops at the first pod it creates.
        client.inject("create", errors.UnreachableError("stop after the plan"), resource=PODS)
        with pytest.raises(errors.UnreachableError):
            await reconciler.reconcile(f"default/{name}")
        for task in tasks:
            task.cancel()

    asyncio.run(main())
    return on_loop_thread


def test_a_large_job_is_planned_off_the_event_loop_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    job = big_tfjob()
    assert replica_total(wire.parse_job(job)) > OFFLOAD_REPLICAS
    assert planning_threads(job, monkeypatch) == [False]


def test_a_small_job_is_planned_on_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    job = big_tfjob()
    job["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = 2  # type: ignore[index]
    job["metadata"]["name"] = "small"  # type: ignore[index]
    assert replica_total(wire.parse_job(job)) <= OFFLOAD_REPLICAS
    assert planning_threads(job, monkeypatch) == [True]
