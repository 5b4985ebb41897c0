"""Trainer v2's three controllers on the manager's runtime (spec 2.1; docs/design/112).

``TrainJobControllers`` holds what the manager runs for ``--enable-scheme trainjob``: the
``trainjob_controller`` (``trainjob.TrainJobReconciler``) and the ``trainingruntime_controller``
and ``clustertrainingruntime_controller``, whose only work in v2.3.0 is to strip the legacy
``trainer.kubeflow.org/resource-in-use`` finalizer from runtimes (spec 2.8). Each has a work
queue, workers and controller-runtime metrics under upstream's controller name, run by the
manager's own worker loop and error policy.

Start-up (``start``): the JobSet CRD must be served — while it is not, nothing of Trainer v2
starts, ``not_ready_reason`` names ``jobsets.jobset.x-k8s.io`` (so ``/readyz`` fails) and the
check repeats every ``JOBSET_CRD_RECHECK_SECONDS``; the v1 kinds run meanwhile. Then the
PodGroup CRDs that are served get informers (upstream watches them only when they exist),
every informer starts, and ``start`` returns once they have synced.
Event routing: a TrainJob event queues it; a JobSet, ConfigMap, Secret or PodGroup event
queues its controlling TrainJob; a runtime event queues the runtime when it carries the
legacy finalizer.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from trainop.api.trainer import constants as c
from trainop.controller.metrics import Metrics
from trainop.controller.queue import WorkQueue
from trainop.controller.reconciler import Result
from trainop.controller.topologies import TrainJobNetworks
from trainop.controller.trainjob import TrainJobReconciler
from trainop.controller.trainjob_caches import (
    JOBSET_CRD_MISSING,
    JOBSETS,
    POD_GROUP_RESOURCES,
    RUNTIME_RESOURCES,
    MakeInformer,
    TrainJobCaches,
    controlling_trainjob,
    served,
)
from trainop.kube.client import Client, Obj
from trainop.kube.clock import Clock
from trainop.kube.events import EventRecorder
from trainop.kube.informer import Handlers, Informer

log = logging.getLogger(__name__)

JOBSET_CRD_RECHECK_SECONDS = 10.0
# Upstream's controller names (metrics ``controller`` / work queue ``name`` labels).
CONTROLLER_NAMES = {
    c.TRAINJOB: "trainjob_controller",
    c.TRAINING_RUNTIME: "trainingruntime_controller",
    c.CLUSTER_TRAINING_RUNTIME: "clustertrainingruntime_controller",
}


def has_legacy_finalizer(obj: Obj) -> bool:
    return c.LEGACY_RUNTIME_FINALIZER in ((obj.get("metadata") or {}).get("finalizers") or [])


class LegacyFinalizerRemover:
    """A runtime controller of v2.3.0: removes ``trainer.kubeflow.org/resource-in-use``
    (merge patch of the remaining finalizers, guarded by the cached resourceVersion)."""

    def __init__(self, *, client: Client, informer: Informer) -> None:
        self._client = client
        self._informer = informer

    async def reconcile(self, key: str) -> Result:
        namespace, _, name = key.partition("/")
        obj = self._informer.get(namespace, name)
        if obj is None or not has_legacy_finalizer(obj):
            return Result()
        meta = obj["metadata"]
        kept = [f for f in meta["finalizers"] if f != c.LEGACY_RUNTIME_FINALIZER]
        patch = {"metadata": {"finalizers": kept, "resourceVersion": meta["resourceVersion"]}}
        resource = self._informer.resource
        await self._client.patch(
            resource, name=name, namespace=namespace if resource.namespaced else None, patch=patch
        )
        return Result()


class TrainJobControllers:
    """The Trainer v2 controllers of one manager; see the module docstring."""

    def __init__(
        self,
        *,
        client: Client,
        clock: Clock,
        make_informer: MakeInformer,
        namespace: str | None,
        recorder: EventRecorder,
        metrics: Metrics,
        networks: TrainJobNetworks | None = None,
    ) -> None:
        self._client, self._clock = client, clock
        self._networks = networks  # how pods address each other (note 133); None: the cluster's
        self._make, self._namespace = make_informer, namespace
        self._recorder, self._metrics = recorder, metrics
        self.queues = {
            kind: WorkQueue(clock=clock, metrics=metrics.for_queue(name))
            for kind, name in CONTROLLER_NAMES.items()
        }
        self.caches: TrainJobCaches | None = None
        self.reconcilers: dict[str, TrainJobReconciler | LegacyFinalizerRemover] = {}
        self.missing_crd: str | None = JOBSET_CRD_MISSING  # until ``start`` has seen it
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def ready(self) -> bool:
        return (
            self.missing_crd is None
            and self.caches is not None
            and all(i.synced.is_set() for i in self.caches.informers())
        )

    async def start(self) -> None:
        """Wait for the JobSet CRD, start every informer, return once they have synced."""
        await self._await_jobset_crd()
        pod_groups = tuple(
            [r for r in POD_GROUP_RESOURCES if await served(self._client, r, self._namespace)]
        )
        caches = TrainJobCaches(self._make, pod_groups=pod_groups)
        self.reconcilers = {
            c.TRAINJOB: TrainJobReconciler(
                client=self._client,
                caches=caches,
                clock=self._clock,
                recorder=self._recorder,
                metrics=self._metrics,
                networks=self._networks,
            ),
            **{
                kind: LegacyFinalizerRemover(client=self._client, informer=informer)
                for kind, informer in caches.runtimes.items()
            },
        }
        caches.trainjobs.add_handlers(Handlers(self._queue_trainjob))
        for informer in caches.owned():
            informer.add_handlers(Handlers(self._queue_owner))
        for kind, informer in caches.runtimes.items():
            informer.add_handlers(Handlers(self._runtime_handler(kind)))
        self.caches = caches
        self._tasks = [asyncio.create_task(i.run()) for i in caches.informers()]
        await asyncio.gather(*(i.synced.wait() for i in caches.informers()))

    async def stop(self) -> None:
        for queue in self.queues.values():
            queue.shut_down()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _await_jobset_crd(self) -> None:
        logged = False
        while not await served(self._client, JOBSETS, self._namespace):
            if not logged:
                log.error(
                    "%s (checking again every %ss)", JOBSET_CRD_MISSING, JOBSET_CRD_RECHECK_SECONDS
                )
                logged = True
            await self._clock.sleep(JOBSET_CRD_RECHECK_SECONDS)
        if logged:
            log.info("the JobSet CRD %s is served now; starting", c.JOBSET_CRD_NAME)
        self.missing_crd = None

    def _queue_trainjob(self, old: Obj | None, new: Obj | None) -> None:
        obj = new or old
        if obj is not None:
            meta = obj["metadata"]
            self.queues[c.TRAINJOB].add(f"{meta.get('namespace', '')}/{meta['name']}")

    def _queue_owner(self, old: Obj | None, new: Obj | None) -> None:
        obj = new or old
        owner = controlling_trainjob(obj) if obj is not None else None
        if owner is not None:
            self.queues[c.TRAINJOB].add(owner)

    def _runtime_handler(self, kind: str) -> Callable[[Obj | None, Obj | None], None]:
        scoped = RUNTIME_RESOURCES[kind].namespaced

        def on_change(old: Obj | None, new: Obj | None) -> None:
            del old
            if new is not None and has_legacy_finalizer(new):
                meta = new["metadata"]
                namespace = meta.get("namespace", "") if scoped else ""
                self.queues[kind].add(f"{namespace}/{meta['name']}")

        return on_change
