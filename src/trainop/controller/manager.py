"""The manager: informers, work queues and workers for every enabled job kind.

Wiring (controller-runtime's, in asyncio):
- one informer per enabled kind's jobs, and one per owned resource (pods, services, the gang
  scheduler's PodGroups, ConfigMaps/RBAC for MPI, HPAs for PyTorch), label-selected to the
  operator's own objects and indexed by controlling owner (``caches.OwnedObjects``);
- a job event queues ``<ns>/<name>`` on its kind's queue; an owned-object event queues its
  controlling owner's key on the owner kind's queue, and an ownerless pod or Service labelled
  for a job (``operator-name``, ``job-name``) that job's key, so it is adopted (``claims``);
- with MPIJob enabled, the informers MPIJob v2beta1 jobs are read from
  (``mpi_v2beta1.V2Beta1Caches``: launcher Jobs, Services, ConfigMaps, Secrets on the ``app``
  label, PodGroups): their events queue the controlling MPIJob too (docs/design/100);
- Events are queued by the reconcilers and sent in the background (``EventRecorder.run``), so
  a reconcile never waits for them;
- ``threads`` workers per kind take keys and run ``JobReconciler.reconcile``. The error policy
  lives in one function (``_settle``): done → forget; requeue-after → ``add_after``;
  ``TerminalError`` → forget (the reconciler explained it in an event); a write conflict →
  retried with backoff, logged at debug; anything else → logged once here with its traceback
  and retried with the key's exponential backoff.
``ready`` turns true when every informer has synced (``/readyz``); ``not_ready_reason`` says
why not. With a gang scheduler configured, ``run`` first checks that its PodGroup CRD is served
(spec 8.1): while it is not, nothing starts (no informer, no reconcile, so no pod of any job is
created without its PodGroup), ``/readyz`` fails naming the CRD, and the check is repeated every
``GANG_CRD_RECHECK_SECONDS`` (upstream exited; installing the CRD later heals without a restart).
With ``TrainJob`` among the kinds (``--enable-scheme trainjob``; not in the default set, which
stays the v1 kinds, so a cluster without JobSet keeps a ready operator), Trainer v2's
controllers (``trainjob_controllers``) run beside them on the same workers, error policy and
metrics; they start once the JobSet CRD is served, and until then ``/readyz`` fails naming it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

from trainop import errors
from trainop.api.kinds import KindInfo, kind_info
from trainop.api.trainer import constants as trainer
from trainop.controller import caches
from trainop.controller.metrics import ControllerMetrics, Metrics
from trainop.controller.mpi_v2beta1 import (
    APP_SELECTOR,
    VERSION_OPERATOR_NAMES,
    VERSION_RECONCILERS,
    V2Beta1Caches,
    informer_resources,
)
from trainop.controller.queue import ShutDownError, WorkQueue
from trainop.controller.reconciler import JobReconciler, Result, VersionDelegate
from trainop.controller.topologies import (
    ClusterTopologySource,
    TopologySource,
    TrainJobNetworks,
)
from trainop.controller.trainjob_controllers import CONTROLLER_NAMES, TrainJobControllers
from trainop.engine.gang import GangScheduler
from trainop.engine.naming import JOB_NAME_LABEL, OPERATOR_NAME_LABEL
from trainop.engine.plan import EngineOptions
from trainop.frameworks.registry import REGISTRY, framework_for
from trainop.frameworks.topology import ClusterTopology
from trainop.kube import resources
from trainop.kube.client import Client, Obj
from trainop.kube.clock import Clock
from trainop.kube.events import EventRecorder
from trainop.kube.informer import Handlers, Informer, Projection, slim

log = logging.getLogger(__name__)

OWNED_SELECTOR = JOB_NAME_LABEL  # "the label exists": every child the engine creates has it
GANG_CRD_RECHECK_SECONDS = 10.0
NOT_SYNCED = "caches are not synced yet"


class KeyReconciler(Protocol):
    """What a worker runs: controller-runtime's contract, a key in and a ``Result`` out."""

    async def reconcile(self, key: str) -> Result: ...


@dataclass(frozen=True, slots=True)
class ManagerOptions:
    """What to run: kinds (empty: all), namespace scope, workers per kind, engine options.

    ``cluster_domain`` is appended (as ``.svc.<domain>``) to the qualified host names of the
    cluster topology (TF_CONFIG); upstream reads it from ``CUSTOM_CLUSTER_DOMAIN``, so does the
    default.
    """

    kinds: tuple[str, ...] = ()
    namespace: str | None = None
    threads: int = 1
    engine: EngineOptions = field(default_factory=EngineOptions)
    cluster_domain: str = field(default_factory=lambda: os.environ.get("CUSTOM_CLUSTER_DOMAIN", ""))

    def enabled(self) -> list[KindInfo]:
        """The enabled kubeflow.org/v1 kinds (all of them when ``kinds`` names none)."""
        names = [k for k in self.kinds if k != trainer.TRAINJOB] or (
            [] if self.kinds else list(REGISTRY)
        )
        return [kind_info(name) for name in names]

    @property
    def trainjobs(self) -> bool:
        """Whether Trainer v2's controllers run (only when named: docs/design/112)."""
        return trainer.TRAINJOB in self.kinds


class Manager:
    """Runs the controllers of the enabled kinds until cancelled."""

    def __init__(
        self,
        *,
        client: Client,
        clock: Clock,
        options: ManagerOptions,
        metrics: Metrics | None = None,
        topologies: TopologySource | None = None,
        networks: TrainJobNetworks | None = None,
    ) -> None:
        self._client = client
        self._clock = clock
        self._options = options
        self._networks = networks  # TrainJobs' addresses (note 133); None: the cluster's
        self.metrics = metrics or Metrics()
        self._kinds = {info.kind: info for info in options.enabled()}
        self._by_controller = {info.controller_name: kind for kind, info in self._kinds.items()}
        self.queues = {
            kind: WorkQueue(clock=clock, metrics=self.metrics.for_queue(info.controller_name))
            for kind, info in self._kinds.items()
        }
        for kind, info in self._kinds.items():
            self.metrics.watch_progress(info.controller_name, self.queues[kind].progress)
        self._controller_metrics = {
            kind: self.metrics.for_controller(info.controller_name, workers=max(1, options.threads))
            for kind, info in self._kinds.items()
        }
        self.jobs = {
            kind: self._informer(resources.job_resource(i)) for kind, i in self._kinds.items()
        }
        self.owned = caches.OwnedObjects(
            pods=self._informer(resources.PODS, owned=True, project=caches.slim_pod),
            services=self._informer(resources.SERVICES, owned=True, project=caches.slim_service),
            pod_groups=self._pod_group_informers(),
            others=[self._informer(r, owned=True) for r in self._extra_resources()],
        )
        # What jobs with another version's semantics read (MPIJob v2beta1, docs/design/100).
        self.version_caches = self._version_caches()
        self.recorder = EventRecorder(client=client, clock=clock, background=True)
        self.missing_crd: str | None = None  # why gang scheduling cannot start, while it cannot
        self.reconcilers: dict[str, KeyReconciler] = {
            kind: JobReconciler(
                client=client,
                jobs=self.jobs[kind],
                owned=self.owned,
                framework=framework_for(kind),
                topologies=topologies or self._cluster_topologies(),
                clock=clock,
                recorder=self.recorder,
                options=options.engine,
                metrics=self.metrics,
                delegate=self._delegate(kind),
            )
            for kind in self._kinds
        }
        for kind, informer in self.jobs.items():
            informer.add_handlers(Handlers(self._job_handler(kind)))
        for informer in self._owned_informers():
            informer.add_handlers(Handlers(self._on_owned_change))
        self.trainjobs = self._trainjob_controllers()

    def _trainjob_controllers(self) -> TrainJobControllers | None:
        """Trainer v2's controllers, their queues and metrics beside the v1 kinds'."""
        if not self._options.trainjobs:
            return None
        controllers = TrainJobControllers(
            client=self._client,
            clock=self._clock,
            make_informer=self._informer,
            namespace=self._options.namespace,
            recorder=self.recorder,
            metrics=self.metrics,
            networks=self._networks,
        )
        workers = max(1, self._options.threads)
        for kind, name in CONTROLLER_NAMES.items():
            self.queues[kind] = controllers.queues[kind]
            self.metrics.watch_progress(name, controllers.queues[kind].progress)
            self._controller_metrics[kind] = self.metrics.for_controller(name, workers=workers)
        return controllers

    def _version_caches(self) -> V2Beta1Caches | None:
        if not any(kind in VERSION_RECONCILERS for kind in self._kinds):
            return None
        wanted = informer_resources(self._options.engine.gang_scheduler_name)
        made = {
            name: self._informer(resource, selector="" if name == "pod_groups" else APP_SELECTOR)
            for name, resource in wanted.items()
        }
        return V2Beta1Caches(pods=self.owned.pods, **made)

    def _owned_informers(self) -> list[Informer]:
        """Every informer of objects jobs own: their events queue the controlling owner."""
        extra = self.version_caches.informers() if self.version_caches is not None else []
        return [*self.owned.all(), *extra]

    def _delegate(self, kind: str) -> VersionDelegate | None:
        """The reconciler of ``kind``'s jobs with another version's semantics, if any."""
        factory = VERSION_RECONCILERS.get(kind)
        if factory is None:
            return None
        assert self.version_caches is not None  # made for every kind with a factory
        return factory(
            client=self._client,
            caches=self.version_caches,
            clock=self._clock,
            recorder=self.recorder,
            cluster_domain=self._options.cluster_domain,
            frameworks=self._options.engine.frameworks,
            gang_scheduler_name=self._options.engine.gang_scheduler_name,
            metrics=self.metrics,
        )

    def _cluster_topologies(self) -> TopologySource:
        return ClusterTopologySource(ClusterTopology(cluster_domain=self._options.cluster_domain))

    @property
    def ready(self) -> bool:
        v1 = self.missing_crd is None and all(i.synced.is_set() for i in self.informers())
        return v1 and (self.trainjobs is None or self.trainjobs.ready)

    @property
    def not_ready_reason(self) -> str:
        """Why ``ready`` is false (for ``/readyz``)."""
        trainjob_crd = self.trainjobs.missing_crd if self.trainjobs is not None else None
        return self.missing_crd or trainjob_crd or NOT_SYNCED

    def informers(self) -> list[Informer]:
        return [*self.jobs.values(), *self._owned_informers()]

    async def run(self) -> None:
        """Start informers, wait for their first sync, then run the workers until cancelled."""
        await self._await_pod_group_crd()
        tasks = [asyncio.create_task(i.run()) for i in self.informers()]
        tasks.append(asyncio.create_task(self.recorder.run()))
        if self.trainjobs is not None:
            tasks.append(asyncio.create_task(self._run_trainjobs(self.trainjobs)))
        try:
            await asyncio.gather(*(i.synced.wait() for i in self.informers()))
            log.info("caches synced; reconciling %s", ", ".join(self._kinds))
            workers = [
                self._worker(kind)
                for kind in self._kinds
                for _ in range(max(1, self._options.threads))
            ]
            tasks += [asyncio.create_task(w) for w in workers]
            await asyncio.gather(*tasks)
        finally:
            for queue in self.queues.values():
                queue.shut_down()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            if self.trainjobs is not None:
                await self.trainjobs.stop()

    async def _run_trainjobs(self, controllers: TrainJobControllers) -> None:
        """Trainer v2's controllers: once their CRD is served and caches synced, the workers."""
        await controllers.start()
        log.info("TrainJob caches synced; reconciling %s", ", ".join(CONTROLLER_NAMES))
        self.reconcilers.update(controllers.reconcilers)
        threads = max(1, self._options.threads)
        await asyncio.gather(
            *(self._worker(kind) for kind in CONTROLLER_NAMES for _ in range(threads))
        )

    def _informer(
        self,
        resource: resources.Resource,
        *,
        owned: bool = False,
        project: Projection = slim,
        selector: str | None = None,
    ) -> Informer:
        if selector is None:
            selector = OWNED_SELECTOR if owned else ""
        return Informer(
            self._client,
            resource,
            namespace=self._options.namespace,
            label_selector=selector,
            sleep=self._clock.sleep,
            project=project,
        )

    def _pod_group_informers(self) -> list[Informer]:
        name = self._options.engine.gang_scheduler_name
        if not name:
            return []
        is_volcano = GangScheduler(name).is_volcano
        group = resources.VOLCANO_PODGROUPS if is_volcano else resources.COSCHEDULING_PODGROUPS
        return [self._informer(group, owned=True)]

    async def _await_pod_group_crd(self) -> None:
        """Return once the gang scheduler's PodGroup resource is served (at once without one)."""
        name = self._options.engine.gang_scheduler_name
        if not name:
            return
        group = (
            resources.VOLCANO_PODGROUPS
            if GangScheduler(name).is_volcano
            else resources.COSCHEDULING_PODGROUPS
        )
        crd = f"{group.plural}.{group.group}"
        message = (
            f"gang scheduler {name!r} needs the PodGroup CRD {crd} "
            f"({group.group}/{group.version}), which is not installed: crd might be missing, "
            "please install crd; no job is reconciled until it is"
        )
        self.missing_crd = message  # not ready until the first answer says it is there
        logged = False
        while True:
            try:
                await self._client.list(group, namespace=self._options.namespace, limit=1)
            except errors.NotFoundError:
                if not logged:
                    log.error("%s (checking again every %ss)", message, GANG_CRD_RECHECK_SECONDS)
                    logged = True
                await self._clock.sleep(GANG_CRD_RECHECK_SECONDS)
                continue
            except errors.ApiError as exc:  # e.g. forbidden: the informer will say so too
                log.warning("could not check the PodGroup CRD %s: %s", crd, exc)
            if logged:
                log.info("the PodGroup CRD %s is served now; starting", crd)
            self.missing_crd = None
            return

    def _extra_resources(self) -> Iterable[resources.Resource]:
        wanted: list[resources.Resource] = []
        for kind in self._kinds:
            for api_version, object_kind in framework_for(kind).extra_kinds:
                wanted.append(resources.resource_for(api_version=api_version, kind=object_kind))
        return list(dict.fromkeys(wanted))

    def _job_handler(self, kind: str) -> Callable[[Obj | None, Obj | None], None]:
        def on_change(old: Obj | None, new: Obj | None) -> None:
            obj = new or old
            if obj is not None:
                self.queues[kind].add(_key(obj["metadata"].get("namespace", ""), obj))
                self.metrics.queue_depth.labels(kind=kind).set(self.queues[kind].depth)

        return on_change

    def _on_owned_change(self, old: Obj | None, new: Obj | None) -> None:
        obj = new or old
        if obj is None:
            return
        namespace = obj["metadata"].get("namespace", "")
        refs = obj["metadata"].get("ownerReferences") or []
        for ref in refs:
            if ref.get("controller") and ref.get("kind") in self.queues:
                self.queues[ref["kind"]].add(f"{namespace}/{ref['name']}")
        if new is not None and not any(ref.get("controller") for ref in refs):
            # An orphan labelled for a job: that job may adopt it (``claims``).
            labels = obj["metadata"].get("labels") or {}
            kind = self._by_controller.get(str(labels.get(OPERATOR_NAME_LABEL)))
            if kind is not None and labels.get(JOB_NAME_LABEL):
                self.queues[kind].add(f"{namespace}/{labels[JOB_NAME_LABEL]}")
        # A v2beta1 MPIJob's launcher pods are owned by its launcher Job: queue the MPIJob
        # they are labelled for, so its status follows them (docs/design/100).
        labels = obj["metadata"].get("labels") or {}
        kind = VERSION_OPERATOR_NAMES.get(str(labels.get(OPERATOR_NAME_LABEL)))
        if kind in self.queues and labels.get(JOB_NAME_LABEL):
            self.queues[kind].add(f"{namespace}/{labels[JOB_NAME_LABEL]}")

    async def _worker(self, kind: str) -> None:
        queue, reconciler = self.queues[kind], self.reconcilers[kind]
        while True:
            try:
                key = await queue.get()
            except ShutDownError:
                return
            started = time.perf_counter()
            standard = self._controller_metrics[kind]
            standard.active_workers.inc()
            try:
                outcome = await self._settle(queue, key, reconciler)
            finally:
                standard.active_workers.dec()
            elapsed = time.perf_counter() - started
            self.metrics.reconcile_seconds.labels(kind=kind, outcome=outcome).observe(elapsed)
            _count_standard(standard, outcome, elapsed)
            queue.done(key)
            self.metrics.queue_depth.labels(kind=kind).set(queue.depth)

    async def _settle(self, queue: WorkQueue, key: str, reconciler: KeyReconciler) -> str:
        """The error policy: reconcile ``key`` and decide what happens to it next."""
        try:
            result: Result = await reconciler.reconcile(key)
        except errors.TerminalError as exc:
            log.warning("%s: not retried: %s", key, exc)
            queue.forget(key)
            return "terminal"
        except asyncio.CancelledError:
            raise
        except errors.ConflictError as exc:
            # Routine with optimistic concurrency: the cache was behind; the retry sees the
            # newer object. Not an error worth a traceback.
            delay = queue.add_rate_limited(key)
            log.debug("%s: %s; retrying in %.3fs", key, exc, delay)
            return "conflict"
        except Exception:  # worker boundary: log once with traceback, retry with backoff
            delay = queue.add_rate_limited(key)
            log.exception("%s: reconcile failed; retrying in %.3fs", key, delay)
            return "error"
        queue.forget(key)
        if result.requeue_after is not None:
            queue.add_after(key, result.requeue_after.total_seconds())
            return "requeue"
        return "done"


def _count_standard(standard: ControllerMetrics, outcome: str, elapsed: float) -> None:
    """controller-runtime's counting of one reconcile: a terminal error or a conflict is an
    error too; ``requeue`` (an immediate requeue) never happens here."""
    result = {"done": "success", "requeue": "requeue_after"}.get(outcome, "error")
    standard.results[result].inc()
    standard.time.observe(elapsed)
    if result == "error":
        standard.errors.inc()
    if outcome == "terminal":
        standard.terminal_errors.inc()


def _key(namespace: str, obj: Obj) -> str:
    return f"{namespace}/{obj['metadata']['name']}"
