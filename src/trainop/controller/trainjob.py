"""Reconcile one TrainJob: cache → runtime → ``engine.trainer.plan`` → apply → status.

Trainer v2.3.0's TrainJob controller (spec 2.2) on the operator's runtime: the manager's work
queue, workers and error policy, informers (``trainjob_caches``), background Events. One pass:

1. the TrainJob from its informer (gone → done); ``spec.managedBy`` other than Trainer's →
   done, touching nothing (Kueue's MultiKueue runs it elsewhere, spec 2.7);
2. the runtime (``trainjob_runtime.resolve``: the snapshot first, else the live runtime; an
   unusable snapshot is a Warning event and a retry, except for a finished TrainJob, which
   needs no runtime: nothing is built for it);
3. the plan (``engine.trainer.plan``), a pure function of the TrainJob, the runtime, what the
   caches hold (JobSet, PodGroups, MPI Secret and hostfile, snapshot) and the time: the objects
   to apply (the snapshot while none is cached), the status, the deadline; ``skipped`` for a
   TrainJob managed elsewhere; an unsupported or missing runtime gives
   ``Failed``/``TrainingRuntimeNotSupported`` instead of upstream's nil dereference (7.2);
   ``Complete`` and ``Failed`` are terminal, as fixed upstream after v2.3.0 (spec 7.1);
4. every object of ``plan.apply`` in order, by server-side apply (field manager ``trainer``,
   force); the first failure stops the rest and is reported as upstream does, one Warning
   Event ``TrainJobResourcesCreationFailed`` (message cut at 950 characters + `` ...``);
5. the JobSet deleted when the plan says (deadline; NotFound is success);
6. the status merge-patched through the subresource, only when it changed; then the plan's
   events;
7. ``requeue_after`` (the deadline's remaining time) returned; an error of step 2 or 4, or the
   plan's own, is raised after the status write, so the queue retries with backoff.

Counters: ``training_operator_jobs_*`` with ``framework="trainjob"`` (created: the JobSet
first applied; successful/failed: ``Complete``/``Failed`` becoming true).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

from trainop import errors
from trainop.api.trainer import constants as c
from trainop.controller.metrics import Metrics
from trainop.controller.reconciler import Result
from trainop.controller.sshkeys import new_key_pair
from trainop.controller.topologies import ClusterTrainJobNetworks, Pending, TrainJobNetworks
from trainop.controller.trainjob_caches import JOBSETS, TRAINJOBS, TrainJobCaches
from trainop.controller.trainjob_runtime import ResolutionError, resolve, snapshot_of
from trainop.engine.actions import Event
from trainop.engine.trainer import plan as planner
from trainop.engine.trainer import status as trainjob_status
from trainop.engine.trainer.network import CLUSTER
from trainop.kube.client import Client, Obj
from trainop.kube.clock import Clock
from trainop.kube.events import EventRecorder, ObjectRef, Source
from trainop.kube.resources import resource_for

log = logging.getLogger(__name__)

FIELD_MANAGER = "trainer"


class PlanFailedError(errors.TrainopError):
    """A plugin could not build the objects (its message is in the Warning event): retried."""


COMPONENT = "trainer-trainjob-controller"


def status_patch(old: Any, new: Any) -> Any:
    """The JSON merge patch from ``old`` to ``new`` (maps recursively, anything else whole)."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return new
    patch: dict[str, Any] = {key: None for key in old if key not in new}
    for key, value in new.items():
        if key not in old or old[key] != value:
            patch[key] = status_patch(old.get(key), value)
    return patch


class TrainJobReconciler:
    """Reconciles one TrainJob per call (stateless between calls); see the module docstring."""

    def __init__(
        self,
        *,
        client: Client,
        caches: TrainJobCaches,
        clock: Clock,
        recorder: EventRecorder,
        metrics: Metrics | None = None,
        new_ssh_keys: Callable[[], tuple[str, str]] | None = None,
        networks: TrainJobNetworks | None = None,
    ) -> None:
        self._client = client
        self._caches = caches
        self._clock = clock
        self._recorder = recorder
        self._metrics = metrics
        self._new_ssh_keys = new_ssh_keys or _ssh_key_pair
        self._networks: TrainJobNetworks = networks or ClusterTrainJobNetworks()
        self.status_writes = 0
        # TrainJobs whose JobSet this process applied first (key → uid): a stale JobSet cache
        # right after the create must not count the TrainJob as created twice.
        self._counted: dict[str, str] = {}

    async def reconcile(self, key: str) -> Result:
        namespace, _, name = key.partition("/")
        raw = self._caches.trainjobs.get(namespace, name)
        if raw is None:
            self._counted.pop(key, None)
            await self._networks.forget_trainjob(namespace=namespace, name=name)
            return Result()
        if not planner.is_managed(raw):
            return Result()
        try:
            runtime = await resolve(self._client, self._caches, raw)
        except ResolutionError as exc:
            if trainjob_status.is_finished(trainjob_status.current(raw)):  # nothing is built
                runtime = None
            else:
                await self._record(raw, planner.creation_failed(str(exc)))
                raise
        network = CLUSTER
        if runtime is not None:
            found = await self._networks.for_trainjob(raw=raw, runtime=runtime)
            if found is None:  # addresses recorded on the TrainJob: its watch event comes back
                return Result()
            if isinstance(found, Pending):
                if found.event is not None:
                    await self._record(raw, found.event)
                return Result(requeue_after=found.retry_after)
            network = found
        plan = planner.plan(
            raw,
            runtime,
            observed=self._observe(raw),
            now=self._clock.now(),
            new_ssh_keys=self._new_ssh_keys,
            network=network,
        )
        if plan.skipped:
            return Result()
        return await self._carry_out(raw, plan)

    async def _carry_out(self, raw: Obj, plan: planner.Plan) -> Result:
        """Apply, delete, write status, record: the plan's effects, in upstream's order."""
        failure: errors.TrainopError | None = None
        if plan.error is not None:
            failure = PlanFailedError(plan.error)
        created = self._creates_jobset(raw, plan)
        try:
            await self._apply(plan.apply)
        except errors.ApiError as exc:
            await self._record(raw, planner.creation_failed(str(exc)))
            failure, created = exc, False
        if created:
            meta = raw["metadata"]
            self._counted[f"{meta.get('namespace', '')}/{meta['name']}"] = str(meta.get("uid"))
        if plan.delete_jobset:
            await self._delete_jobset(raw)
        await self._write_status(raw, plan.status, created=created)
        for event in plan.events:
            await self._record(raw, event)
        if failure is not None:
            raise failure
        if plan.requeue_after:
            return Result(requeue_after=timedelta(seconds=plan.requeue_after))
        return Result()

    def _observe(self, raw: Obj) -> planner.Observed:
        meta = raw["metadata"]
        namespace, name = str(meta.get("namespace") or ""), str(meta["name"])
        pod_groups = {
            informer.resource.api_version: found
            for informer in self._caches.pod_groups.values()
            if (found := informer.get(namespace, name)) is not None
        }
        return planner.Observed(
            jobset=self._caches.jobsets.get(namespace, name),
            pod_groups=pod_groups,
            mpi_secret=self._caches.secrets.get(namespace, f"{name}-mpi-ssh-auth"),
            mpi_hostfile=self._caches.config_maps.get(namespace, f"{name}-mpi-hostfile"),
            snapshot=snapshot_of(self._caches, raw),
        )

    async def _apply(self, objects: list[dict[str, Any]]) -> None:
        for body in objects:
            meta = body["metadata"]
            resource = resource_for(api_version=body["apiVersion"], kind=body["kind"])
            await self._client.patch(
                resource,
                name=meta["name"],
                namespace=meta.get("namespace"),
                patch=body,
                patch_type="apply",
                field_manager=FIELD_MANAGER,
                force=True,
            )

    async def _delete_jobset(self, raw: Obj) -> None:
        meta = raw["metadata"]
        try:
            await self._client.delete(JOBSETS, name=meta["name"], namespace=meta.get("namespace"))
        except errors.NotFoundError:
            pass
        except errors.ApiError as exc:  # upstream logs it and carries on; the next pass retries
            log.warning("%s/%s: JobSet not deleted: %s", meta.get("namespace"), meta["name"], exc)

    def _creates_jobset(self, raw: Obj, plan: planner.Plan) -> bool:
        """Whether this pass applies the TrainJob's first JobSet (the ``created`` count)."""
        meta = raw["metadata"]
        namespace = str(meta.get("namespace") or "")
        if self._caches.jobsets.get(namespace, meta["name"]) is not None:
            return False
        if self._counted.get(f"{namespace}/{meta['name']}") == str(meta.get("uid")):
            return False
        return any(body.get("kind") == c.JOBSET for body in plan.apply)

    async def _write_status(self, raw: Obj, status: Mapping[str, Any], *, created: bool) -> None:
        old = raw.get("status") or {}
        meta = raw["metadata"]
        namespace = str(meta.get("namespace") or "")
        if dict(status) != old:
            await self._client.patch(
                TRAINJOBS,
                name=meta["name"],
                namespace=namespace,
                patch={"status": status_patch(old, dict(status))},
                subresource="status",
            )
            self.status_writes += 1
        if self._metrics is not None:
            self._metrics.count_trainjob(namespace=namespace, old=old, new=status, created=created)

    async def _record(self, raw: Obj, event: Event) -> None:
        about, source = ObjectRef.of(raw), Source(COMPONENT)
        await self._recorder.record(about, event.type, event.reason, event.message, source=source)


def _ssh_key_pair() -> tuple[str, str]:
    keys = new_key_pair()
    return keys.private_pem, keys.public_line
