"""The JobSet controller of the local control plane: ``reconcile`` applied through the API.

Informers on JobSets, on the Jobs and on the Services that carry a JobSet's ``jobset-name``
label; a change to a JobSet queues it, a change to a Job or Service queues the JobSet that
controls it (owner reference, kind JobSet). Workers take keys from a ``WorkQueue``: read the
JobSet and its owned Jobs from the caches (owned means a controller reference with the
JobSet's uid, not a label), run the pure pass, then apply the plan in order (delete earlier
attempts' Jobs and finished JobSets' active Jobs with foreground propagation, create the
headless Service, create Jobs, clear ``startTime``, patch Jobs to suspend or resume) and
finally write the status (one replace of the ``status`` subresource; a conflict retries the
key) and, once it is written, the events. Failures of Service or Job creation are Warning
events at once (``HeadlessServiceCreationFailed``, ``JobCreationFailed``) and the key is
retried with backoff, as any error is. A TTL asks for a timed requeue.

A create that meets an existing name (the cache had not seen our own Job yet) is not an
error. Events are core/v1 Events from component ``jobset`` (upstream writes
``events.k8s.io/v1``; the two are one resource to ``kubectl``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from trainop import errors
from trainop.cluster.controllers.jobset import keys, spec
from trainop.cluster.controllers.jobset.reconcile import Plan, reconcile
from trainop.cluster.controllers.jobset.suspension import CLEAR_START_TIME
from trainop.controller.queue import ShutDownError, WorkQueue
from trainop.kube.client import Client, Obj
from trainop.kube.clock import Clock
from trainop.kube.events import EventRecorder, ObjectRef, Source
from trainop.kube.informer import Handlers, Informer
from trainop.kube.resources import SERVICES, resource_for

log = logging.getLogger(__name__)
JOBSETS = resource_for(api_version=keys.API_VERSION, kind=keys.KIND)
JOBS = resource_for(api_version="batch/v1", kind="Job")
_OWNER_INDEX = "jobset-owner"


def _controller_uid(obj: Obj) -> list[str]:
    refs = obj["metadata"].get("ownerReferences") or []
    return [
        str(r.get("uid"))
        for r in refs
        if r.get("controller")
        and r.get("kind") == keys.KIND
        and r.get("apiVersion") == keys.API_VERSION
    ]


def _owner_key(obj: Obj) -> str | None:
    refs = obj["metadata"].get("ownerReferences") or []
    for ref in refs:
        if ref.get("controller") and ref.get("kind") == keys.KIND:
            return f"{obj['metadata'].get('namespace', '')}/{ref.get('name')}"
    return None


class JobSetController:
    """Reconciles every JobSet of ``namespace`` (all when None); ``run`` until cancelled."""

    def __init__(
        self, *, client: Client, clock: Clock, namespace: str | None = None, workers: int = 2
    ) -> None:
        self._client, self._clock, self._workers = client, clock, workers
        selector = keys.JOBSET_NAME
        self._jobsets = Informer(client, JOBSETS, namespace=namespace, sleep=clock.sleep)
        self._jobs = Informer(
            client, JOBS, namespace=namespace, label_selector=selector, sleep=clock.sleep
        )
        self._services = Informer(client, SERVICES, namespace=namespace, sleep=clock.sleep)
        self._jobs.add_index(_OWNER_INDEX, _controller_uid)
        self.queue = WorkQueue(clock=clock)
        self.events = EventRecorder(client=client, clock=clock, source=Source(keys.REPORTER))
        self._jobsets.add_handlers(Handlers(self._on_jobset))
        for informer in (self._jobs, self._services):
            informer.add_handlers(Handlers(self._on_child))

    def _on_jobset(self, old: Obj | None, new: Obj | None) -> None:
        obj = new or old
        if obj is not None:
            self.queue.add(f"{obj['metadata'].get('namespace', '')}/{obj['metadata']['name']}")

    def _on_child(self, old: Obj | None, new: Obj | None) -> None:
        for obj in (old, new):
            key = _owner_key(obj) if obj is not None else None
            if key is not None:
                self.queue.add(key)

    @property
    def synced(self) -> bool:
        return all(i.synced.is_set() for i in (self._jobsets, self._jobs, self._services))

    async def run(self) -> None:
        informers = [
            asyncio.create_task(i.run()) for i in (self._jobsets, self._jobs, self._services)
        ]
        workers: list[asyncio.Task[None]] = []
        try:
            for informer in (self._jobsets, self._jobs, self._services):
                await informer.synced.wait()
            workers = [asyncio.create_task(self._work()) for _ in range(self._workers)]
            await asyncio.gather(*workers)
        finally:
            self.queue.shut_down()
            for task in informers + workers:
                task.cancel()
            await asyncio.gather(*informers, *workers, return_exceptions=True)

    async def _work(self) -> None:
        while True:
            try:
                key = await self.queue.get()
            except ShutDownError:
                return
            try:
                after = await self.sync(key)
            except errors.ConflictError:  # the cached JobSet was stale: read it again
                log.debug("jobset %s: status conflict; retrying", key)
                self.queue.add_rate_limited(key)
            except errors.NotFoundError:  # deleted during the pass (Ctrl-C of trainop run)
                log.debug("jobset %s: an object was gone; retrying", key)
                self.queue.add_rate_limited(key)
            except Exception:  # a worker boundary: log, retry with backoff
                log.warning("jobset %s: pass failed; retrying", key, exc_info=True)
                self.queue.add_rate_limited(key)
            else:
                self.queue.forget(key)
                if after is not None:
                    self.queue.add_after(key, after)
            finally:
                self.queue.done(key)

    async def sync(self, key: str) -> float | None:
        """One pass for ``namespace/name``; returns the requeue delay the plan asks for."""
        namespace, _, name = key.partition("/")
        jobset = self._jobsets.get(namespace, name)
        if jobset is None:
            return None
        uid = str(jobset["metadata"].get("uid") or "")
        jobs = self._jobs.by_index(_OWNER_INDEX, uid)
        service = self._services.get(namespace, spec.subdomain(jobset))
        plan = reconcile(jobset, jobs, service_exists=service is not None, now=self._clock.now())
        await _Apply(self._client, self.events, jobset).run(plan)
        return plan.requeue_after


class _Apply:
    """Carries out one plan for one JobSet (the order is the plan's)."""

    def __init__(self, client: Client, events: EventRecorder, jobset: Obj) -> None:
        self._client, self._events, self._jobset = client, events, jobset
        self._namespace = str(jobset["metadata"].get("namespace") or "")
        self._about = ObjectRef.of(jobset)

    async def run(self, plan: Plan) -> None:
        for name in plan.delete_jobs:
            await _quietly(
                self._client.delete(
                    JOBS, name=name, namespace=self._namespace, propagation_policy="Foreground"
                )
            )
        failures = [await self._create_service(plan)] if plan.create_service else []
        failures += await self._create_jobs(plan.create_jobs)
        for name in plan.clear_start_time:
            await self._patch(name, CLEAR_START_TIME, subresource="status")
        for name, patch in plan.patch_jobs:
            await self._patch(name, patch)
        if plan.status is not None:
            body = {**self._jobset, "status": plan.status}
            await self._client.replace(
                JOBSETS, body, namespace=self._namespace, subresource="status"
            )
            for event in plan.events:
                await self._events.record(self._about, event.type, event.reason, event.message)
        if plan.delete_jobset:
            await _quietly(
                self._client.delete(
                    JOBSETS,
                    name=self._jobset["metadata"]["name"],
                    namespace=self._namespace,
                    propagation_policy="Foreground",
                )
            )
        problems = [f for f in failures if f]
        if problems:
            raise errors.TrainopError("; ".join(problems))

    async def _create_service(self, plan: Plan) -> str:
        try:
            await self._client.create(
                SERVICES, dict(plan.create_service or {}), namespace=self._namespace
            )
        except errors.AlreadyExistsError:
            return ""
        except errors.ApiError as exc:
            await self._events.record(
                self._about, keys.WARNING, keys.SERVICE_CREATION_FAILED, str(exc)
            )
            return str(exc)
        return ""

    async def _create_jobs(self, bodies: list[dict[str, Any]]) -> list[str]:
        problems = []
        for body in bodies:
            try:
                await self._client.create(JOBS, body, namespace=self._namespace)
            except errors.AlreadyExistsError:
                continue
            except errors.ApiError as exc:
                problems.append(
                    f'job "{body["metadata"]["name"]}" creation failed with error: {exc}'
                )
        if problems:
            text = "\n".join(problems)
            await self._events.record(self._about, keys.WARNING, keys.JOB_CREATION_FAILED, text)
        return problems

    async def _patch(self, name: str, patch: dict[str, Any], *, subresource: str = "") -> None:
        await _quietly(
            self._client.patch(
                JOBS, name=name, patch=patch, namespace=self._namespace, subresource=subresource
            )
        )


async def _quietly(call: Any) -> None:
    """Await an API call whose target may be gone already."""
    with contextlib.suppress(errors.NotFoundError):
        await call
