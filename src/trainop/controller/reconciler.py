"""Reconcile one job: cache → ``engine.plan`` → apply → status → result.

The contract is controller-runtime's: a key in, a small ``Result`` out. Outcomes:
- ``Result()`` — done; ``Result(requeue_after=...)`` — look again at that time (deadlines, TTL);
- ``TerminalError`` — the job cannot be acted on (unparseable); recorded as an event, not retried;
- any other exception — retried with the queue's backoff (the worker decides, ``manager``).

Reads come from caches only (zero GET/LIST per reconcile). Creates carry deterministic names,
so ``AlreadyExists`` after a crash or a stale cache is success, never a duplicate; ``NotFound`` on
delete is success too. The status is written only when it changed, with the cached
resourceVersion: a conflict fails the reconcile and the retry sees the newer object. A status
that finishes the job is written *before* the plan's actions, so its cleanup never runs ahead
of the outcome it follows from (upstream's order: cleanup on the reconcile after the write).
What the job may use is ``claims``'s: orphans matching the job's selector are adopted and
mismatches released before planning; a create whose name is taken by an object the job does
not control is not an AlreadyExists success but a foreign object (``ErrResourceExists``).
"""

from __future__ import annotations

import asyncio
import functools
from dataclasses import dataclass
from datetime import timedelta
from typing import Protocol

from trainop import errors
from trainop.api import manifest
from trainop.api.kinds import KindInfo, kind_info
from trainop.api.types import CREATED, Job, JobStatus
from trainop.controller.caches import OwnedObjects
from trainop.controller.claims import FOREIGN_RECHECK, Claims
from trainop.controller.metrics import Metrics
from trainop.controller.topologies import Pending, TopologySource
from trainop.engine import conditions
from trainop.engine import plan as engine
from trainop.engine.actions import Action, Create, Delete, DeleteJob, Event, Plan, Update
from trainop.engine.observed import Observed
from trainop.frameworks.base import Framework
from trainop.frameworks.topology import Topology
from trainop.kube.client import Client, Obj
from trainop.kube.clock import Clock
from trainop.kube.events import EventRecorder, ObjectRef, Source
from trainop.kube.informer import Informer
from trainop.kube.resources import Resource, job_resource, resource_for

# Jobs with more replicas than this are planned in a worker thread (``JobReconciler._plan``).
OFFLOAD_REPLICAS = 64


def replica_total(job: Job) -> int:
    """The replicas a job asks for (an absent count is 1; a negative one counts as 0)."""
    specs = job.spec.replica_specs.values()
    return sum(max(s.replicas if s.replicas is not None else 1, 0) for s in specs)


YIELD_EVERY = 64  # actions applied between two turns given to the event loop


@dataclass(frozen=True, slots=True)
class Result:
    """What the worker does next with the key."""

    requeue_after: timedelta | None = None


class VersionDelegate(Protocol):
    """Runs the jobs of this kind that have another API version's semantics (MPIJob
    v2beta1, docs/design/100): ``handles`` picks them, ``reconcile`` does all of it."""

    def handles(self, raw: Obj) -> bool: ...

    async def reconcile(self, raw: Obj) -> Result: ...


class JobReconciler:
    """Reconciles the jobs of one kind."""

    def __init__(
        self,
        *,
        client: Client,
        jobs: Informer,
        owned: OwnedObjects,
        framework: Framework,
        topologies: TopologySource,
        clock: Clock,
        recorder: EventRecorder,
        options: engine.EngineOptions | None = None,
        metrics: Metrics | None = None,
        delegate: VersionDelegate | None = None,
    ) -> None:
        self._delegate = delegate
        self._client = client
        self._jobs = jobs
        self._owned = owned
        self._framework = framework
        self._info: KindInfo = kind_info(framework.kind)
        self._topologies = topologies
        self._clock = clock
        self._recorder = recorder
        self._options = options or engine.EngineOptions()
        self._metrics = metrics or Metrics()
        self.claims = Claims(client=client, owned=owned, info=self._info)
        self.status_writes = 0

    async def reconcile(self, key: str) -> Result:
        namespace, _, name = key.partition("/")
        raw = self._jobs.get(namespace, name)
        if raw is None:
            await self._topologies.forget(kind=self._info.kind, namespace=namespace, name=name)
            self.claims.forget(key)
            return Result()
        if raw["metadata"].get("deletionTimestamp"):
            self.claims.forget(key)
            return Result()
        if self._delegate is not None and self._delegate.handles(raw):
            return await self._delegate.reconcile(raw)
        job = await self._parse(raw)
        observed = self._owned.observed(str(raw["metadata"].get("uid", "")))
        observed = await self.claims.claim(raw, observed)
        topology = await self._topologies.for_job(job=job, raw=raw)
        if topology is None:
            return Result()  # the job was just updated; its watch event brings it back
        if isinstance(topology, Pending):
            await self._wait_for_topology(raw, job, topology)
            return Result(requeue_after=topology.retry_after)
        plan = await self._plan(job, observed, topology)
        deleted = any(isinstance(action, DeleteJob) for action in plan.actions)
        writes_status = not plan.skipped and not deleted  # a deleted job has no status left
        # A terminal status goes first: were the cleanup it triggers (pods, PodGroup) applied
        # and the write then to conflict, the retry would plan a running job without them.
        status_first = writes_status and conditions.is_finished(tuple(plan.status.conditions or ()))
        if status_first:
            await self._write_status(raw, job, plan.status)
        for event in await self.claims.recheck(raw):
            await self._record(raw, event)
        # Pods are created last: a foreign object met by any other create (a Service, the MPI
        # ConfigMap) then stops them before one could use it.
        pods = [a for a in plan.actions if isinstance(a, Create) and a.kind == "Pod"]
        others = [a for a in plan.actions if not (isinstance(a, Create) and a.kind == "Pod")]
        for done, action in enumerate([*others, *pods], start=1):
            if not self.claims.blocks(raw, action):
                await self._apply(raw, action)
            if done % YIELD_EVERY == 0:  # a client that answers at once must not hold the loop
                await asyncio.sleep(0)
        if writes_status and not status_first:
            await self._write_status(raw, job, plan.status)
        for event in plan.events:
            await self._record(raw, event)
        requeue = plan.requeue_after
        if self.claims.has_foreign(raw):  # nothing tells when a foreign object goes away
            requeue = FOREIGN_RECHECK if requeue is None else min(requeue, FOREIGN_RECHECK)
        return Result(requeue)

    async def _plan(self, job: Job, observed: Observed, topology: Topology) -> Plan:
        """``engine.plan``; for a large job in a worker thread, so that its cost (TF_CONFIG
        alone is quadratic in replicas) never stalls the event loop, which in local mode the
        API server and the kubelet share. The plan is pure and the cached objects it reads are
        replaced, never mutated, by the informers, so the thread sees a stable snapshot."""
        call = functools.partial(
            engine.plan,
            job,
            observed,
            self._framework,
            topology,
            self._clock.now(),
            options=self._options,
        )
        if replica_total(job) <= OFFLOAD_REPLICAS:
            return call()
        return await asyncio.to_thread(call)

    async def _wait_for_topology(self, raw: Obj, job: Job, pending: Pending) -> None:
        """The job waits (e.g. for local ports): say why once, and show it as Created."""
        if pending.event is not None:
            await self._record(raw, pending.event)
        status = job.status or JobStatus()
        if any(c.type == CREATED for c in status.conditions or ()):
            return
        new, events = conditions.set_condition(
            tuple(status.conditions or ()),
            type=CREATED,
            reason=f"{self._info.kind}Created",
            message=f"{self._info.kind} {job.metadata.name} is created.",
            now=self._clock.now(),
        )
        await self._write_status(raw, job, status.model_copy(update={"conditions": list(new)}))
        for event in events:
            await self._record(raw, event)

    async def _parse(self, raw: Obj) -> Job:
        try:
            return manifest.parse_job(raw)
        except errors.InvalidJobError as exc:
            detail = "; ".join(str(e) for e in exc.errors)
            message = f"{self._info.kind} failed validation because {detail}"
            await self._record(raw, Event("Warning", f"{self._info.kind}FailedValidation", message))
            raise errors.TerminalError(message) from exc

    async def _apply(self, job: Obj, action: Action) -> None:
        namespace = job["metadata"].get("namespace")
        try:
            await self._send(job, action, namespace)
        except errors.AlreadyExistsError:
            # Deterministic names: the object is the job's own (the cache was behind), one to
            # adopt, or a foreign object the job must not use (``claims``).
            if isinstance(action, Create):
                for event in await self.claims.exists(job, action):
                    await self._record(job, event)
            return
        except errors.NotFoundError as exc:
            if not isinstance(action, Create):
                return  # deleting (or updating) what is already gone
            # A create answered NotFound: its resource is not served (a PodGroup CRD removed
            # while running) or the namespace is gone. Never a success: nothing after it runs.
            await self._record(job, action.outcome_event(str(exc)))
            raise
        except errors.ApiError as exc:
            if isinstance(action, Create | Delete | DeleteJob):
                await self._record(job, action.outcome_event(str(exc)))
            raise
        if isinstance(action, DeleteJob):
            labels = {"job_namespace": namespace or "", "framework": self._info.framework}
            self._metrics.jobs_deleted.labels(**labels).inc()
        if isinstance(action, Create | Delete | DeleteJob):
            await self._record(job, action.outcome_event())

    async def _send(self, job: Obj, action: Action, namespace: str | None) -> None:
        if isinstance(action, DeleteJob):
            await self._client.delete(
                job_resource(self._info),
                name=action.name,
                namespace=namespace,
                preconditions_uid=str(job["metadata"].get("uid", "")),
            )
        else:
            await send_child_action(self._client, action, namespace)

    async def _write_status(self, raw: Obj, job: Job, status: JobStatus) -> None:
        old = job.status or JobStatus()
        if status == old:
            return
        await replace_status(self._client, job_resource(self._info), raw, status)
        self.status_writes += 1
        self._metrics.count_transitions(
            namespace=raw["metadata"].get("namespace", ""),
            framework=self._info.framework,
            old=old,
            new=status,
        )

    async def _record(self, job: Obj, event: Event) -> None:
        about, source = ObjectRef.of(job), Source(self._info.controller_name)
        await self._recorder.record(about, event.type, event.reason, event.message, source=source)


async def send_child_action(
    client: Client, action: Create | Update | Delete, namespace: str | None
) -> None:
    """Sends one action on a job's child object: create it, merge-patch it (``Update``) or
    delete it. Errors are the caller's to handle."""
    if isinstance(action, Create):
        resource = resource_for(api_version=action.body["apiVersion"], kind=action.kind)
        await client.create(resource, action.body, namespace=namespace)
    elif isinstance(action, Update):
        resource = resource_for(api_version=action.body["apiVersion"], kind=action.kind)
        await client.patch(resource, name=action.name, namespace=namespace, patch=action.body)
    else:
        resource = resource_for(api_version=action.api_version, kind=action.kind)
        await client.delete(resource, name=action.name, namespace=namespace)


async def replace_status(client: Client, resource: Resource, raw: Obj, status: JobStatus) -> None:
    """Writes ``status`` through the status subresource of the job ``raw`` (of ``resource``)."""
    body = dict(raw)  # a shallow copy: the cached job is only read, and sent as it is
    body["status"] = status.model_dump(mode="json", by_alias=True, exclude_none=True)
    await client.replace(
        resource, body, namespace=raw["metadata"].get("namespace"), subresource="status"
    )
