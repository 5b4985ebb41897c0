"""The TrainJob scenario of the RBAC coverage test (``operator_calls``): Trainer v2's
reconciler and runtime controllers over a FakeClient, through the recording client.

One MPI TrainingRuntime with coscheduling (so every child kind is applied: snapshot ConfigMap,
JobSet, PodGroup, SSH Secret, hostfile ConfigMap), both runtime kinds carrying the legacy
finalizer, a TrainJob that reaches its active deadline (JobSet deleted), and two TrainJobs
whose runtimes are not cached (read once more from the API, then ``Failed``); the TrainJob
validating webhook's reads (the live runtime and JobSet).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from trainop.api.trainer import constants as c
from trainop.controller import trainjob_admission
from trainop.controller.trainjob import TrainJobReconciler
from trainop.controller.trainjob_caches import (
    CLUSTER_TRAINING_RUNTIMES,
    TRAINING_RUNTIMES,
    TRAINJOBS,
    TrainJobCaches,
)
from trainop.controller.trainjob_controllers import LegacyFinalizerRemover
from trainop.controller.trainjob_runtime import live_lookup
from trainop.kube import resources as r
from trainop.kube.client import Client, Obj
from trainop.kube.clock import FakeClock
from trainop.kube.events import EventRecorder
from trainop.kube.fake import FakeClient
from trainop.kube.informer import Informer

Settle = Callable[[FakeClient, list[Informer]], Awaitable[None]]


def _runtime(kind: str) -> Obj:
    container = {"name": c.NODE, "image": "mpi:1", "resources": {"requests": {"cpu": "1"}}}
    pod = {"spec": {"containers": [container]}}

    def job(name: str, ancestor: str | None) -> dict[str, Any]:
        labels = {c.LABEL_ANCESTOR: ancestor} if ancestor else {}
        template = {"metadata": {"labels": labels}, "spec": {"template": pod}}
        return {"name": name, "replicas": 1, "template": template}

    return {
        "apiVersion": c.API_VERSION,
        "kind": kind,
        "metadata": {"name": "mpi", "finalizers": [c.LEGACY_RUNTIME_FINALIZER]},
        "spec": {
            "mlPolicy": {"numNodes": 2, "mpi": {"numProcPerNode": 1}},
            "podGroupPolicy": {"coscheduling": {"scheduleTimeoutSeconds": 60}},
            "template": {"spec": {"replicatedJobs": [job(c.LAUNCHER, None),
                                                     job(c.NODE, c.ANCESTOR_TRAINER)]}},
        },
    }  # fmt: skip


def _trainjob(name: str, runtime_kind: str, runtime: str = "mpi", **spec: Any) -> Obj:
    ref = {"name": runtime, "kind": runtime_kind, "apiGroup": c.GROUP}
    return {"apiVersion": c.API_VERSION, "kind": c.TRAINJOB, "metadata": {"name": name},
            "spec": {"runtimeRef": ref, **spec}}  # fmt: skip


async def trainjobs(make_client: Callable[[FakeClient], Client], settle: Settle) -> None:
    server, clock = FakeClient(), FakeClock()
    client = make_client(server)
    pod_groups = (r.COSCHEDULING_PODGROUPS,)
    caches = TrainJobCaches(lambda res, **kw: Informer(client, res, **kw), pod_groups=pod_groups)
    reconciler = TrainJobReconciler(client=client, caches=caches, clock=clock,
                                    recorder=EventRecorder(client=client, clock=clock))  # fmt: skip
    removers = {kind: LegacyFinalizerRemover(client=client, informer=informer)
                for kind, informer in caches.runtimes.items()}  # fmt: skip
    await server.create(TRAINING_RUNTIMES, _runtime(c.TRAINING_RUNTIME), namespace="default")
    await server.create(CLUSTER_TRAINING_RUNTIMES, _runtime(c.CLUSTER_TRAINING_RUNTIME))
    informers = caches.informers()
    tasks = [asyncio.create_task(i.run()) for i in informers]

    async def reconcile(name: str) -> None:
        await settle(server, informers)
        await reconciler.reconcile(f"default/{name}")
        await settle(server, informers)

    try:
        await settle(server, informers)
        await removers[c.TRAINING_RUNTIME].reconcile("default/mpi")
        await removers[c.CLUSTER_TRAINING_RUNTIME].reconcile("/mpi")
        job = _trainjob("job", c.TRAINING_RUNTIME, activeDeadlineSeconds=60)
        job["metadata"]["creationTimestamp"] = clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")
        await server.create(TRAINJOBS, job, namespace="default")
        await reconcile("job")
        await reconcile("job")  # the hostfile is applied again, the status unchanged
        clock.advance(61)
        await reconcile("job")
        assert (await server.list(caches.jobsets.resource)).items == [], "deadline: deleted"
        # The validating webhook reads the live runtime and, on an update, the live JobSet.
        old = await server.get(TRAINJOBS, name="job", namespace="default")
        new = {**old, "spec": {**old["spec"], "suspend": True}}
        await trainjob_admission.decide(c.TRAINJOB, new, old, live_lookup(client))
        for name, kind in (
            ("gone", c.TRAINING_RUNTIME),
            ("gone-cluster", c.CLUSTER_TRAINING_RUNTIME),
        ):
            await server.create(TRAINJOBS, _trainjob(name, kind, "absent"), namespace="default")
            await reconcile(name)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
