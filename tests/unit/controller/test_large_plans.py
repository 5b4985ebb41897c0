"""A large job's plan does not stall the event loop the local API server and kubelet share."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime

import pytest

from tests.unit.api.builders import manifest
from trainop import errors
from trainop.api import manifest as wire
from trainop.api.kinds import kind_info
from trainop.controller.caches import OwnedObjects
from trainop.controller.clock import FakeClock
from trainop.controller.events import EventRecorder
from trainop.controller.reconciler import OFFLOAD_REPLICAS, JobReconciler, replica_total
from trainop.controller.topologies import ClusterTopologySource
from trainop.engine.observed import Observed
from trainop.engine.plan import plan
from trainop.frameworks.registry import framework_for
from trainop.frameworks.topology import ClusterTopology
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


def test_the_event_loop_keeps_ticking_while_a_large_job_is_planned() -> None:
    job = wire.parse_job(big_tfjob())
    assert replica_total(job) > OFFLOAD_REPLICAS
    started = time.perf_counter()
    plan(job, Observed(), framework_for("TFJob"), ClusterTopology(), datetime.now(UTC))
    plan_seconds = time.perf_counter() - started

    async def main() -> float:
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
        await client.create(TFJOB, big_tfjob(), namespace="default")
        async with asyncio.timeout(10):
            while jobs.get("default", "big") is None:
                await asyncio.sleep(0)
        widest = 0.0
        done = asyncio.Event()

        async def ticker() -> None:
            nonlocal widest
            last = time.perf_counter()
            while not done.is_set():
                await asyncio.sleep(0)
                now = time.perf_counter()
                widest, last = max(widest, now - last), now

        await asyncio.to_thread(lambda: None)  # start the executor's thread beforehand
        ticks = asyncio.create_task(ticker())
        await asyncio.sleep(0)  # the ticker runs once before the reconcile starts
        # Only the plan matters here: the reconcile stops at the first pod it creates.
        client.inject("create", errors.UnreachableError("stop after the plan"), resource=PODS)
        started = time.perf_counter()
        with pytest.raises(errors.UnreachableError):
            await reconciler.reconcile("default/big")
        assert time.perf_counter() - started >= plan_seconds * 0.5, "the plan really ran"
        done.set()
        await ticks
        for task in tasks:
            task.cancel()
        return widest

    widest = asyncio.run(main())
    assert widest < plan_seconds / 3, (widest, plan_seconds)
