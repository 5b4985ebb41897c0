"""``LocalJobController``: runs ``step.step`` over every batch/v1 Job and applies the result
through the API (kube-controller-manager's Job controller, for the local control plane).

A pass syncs every cached Job; passes run when a Job or one of its pods changes, when a
Job's timer (deadline, replacement back-off, TTL) fires, and at least every
``PASS_SECONDS``. Applying a ``Step`` follows kube's counting protocol: (1) a PUT of
``/status`` — the record of ended pods in ``uncountedTerminatedPods`` when a pod needs it,
else the whole status (so counts are stored before any finalizer goes); (2) the finalizer
removals; (3) when there was a record, the final status with the counters. Then the pod
deletions, the creations (``SuccessfulCreate``/``FailedCreate`` Events), the Events of the
step, a Job deletion (foreground, as the TTL controller deletes). A crash anywhere counts
each pod once after a restart (``uncounted``); an error stops the apply, and the next pass
resumes from the last write.

Memory that makes the caches' lag harmless (each entry dropped once the caches caught up):
``_written`` (the Job as our last status write returned it, used while the cache is older),
``_settled`` (pods counted or removed on purpose, per Job: never counted again, while
they exist), ``_stripping`` (finalizer removals that took, until the pod cache shows them),
``_unseen`` (pods created but not yet cached: the Job gets no new pods meanwhile, as kube's
expectations do). Pods whose Job is gone lose the tracking finalizer here too, so the garbage
collector can remove them.
Neighbours: ``step`` (the decision), ``kube.informer`` (caches), ``kube.events``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from datetime import datetime, timedelta
from typing import Any

from trainop import errors
from trainop.cluster.controllers.jobs import model
from trainop.cluster.controllers.jobs.step import Step, step
from trainop.kube.client import Client, Obj
from trainop.kube.clock import Clock, Timer
from trainop.kube.events import EventRecorder, ObjectRef, Source
from trainop.kube.informer import Handlers, Informer
from trainop.kube.resources import PODS, resource_for

log = logging.getLogger(__name__)
JOBS = resource_for(api_version="batch/v1", kind="Job")
PASS_SECONDS = 1.0
UNSEEN_SECONDS = 5.0  # a created pod not cached by then no longer holds creations back
_OWNER_INDEX = "owner-uid"


def _owner_uids(pod: Obj) -> list[str]:
    refs = pod["metadata"].get("ownerReferences") or []
    return [str(r.get("uid")) for r in refs if r.get("kind") == "Job" and r.get("controller")]


def _version(obj: Obj) -> int:
    text = str(obj["metadata"].get("resourceVersion") or "")
    return int(text) if text.isdigit() else -1


class LocalJobController:
    """Runs ``step`` over every Job whenever a Job or pod changes (module docstring)."""

    def __init__(self, *, client: Client, clock: Clock, namespace: str | None = None) -> None:
        self._client, self._clock = client, clock
        self._jobs = Informer(client, JOBS, namespace=namespace, sleep=clock.sleep)
        self._pods = Informer(
            client,
            PODS,
            namespace=namespace,
            label_selector=model.JOB_NAME_LABEL,
            sleep=clock.sleep,
        )
        self._pods.add_index(_OWNER_INDEX, _owner_uids)
        self.events = EventRecorder(client=client, clock=clock, source=Source("job-controller"))
        self._wake = asyncio.Event()
        self._written: dict[str, Obj] = {}
        self._settled: dict[str, set[str]] = {}
        self._stripping: set[str] = set()
        self._unseen: dict[str, dict[str, datetime]] = {}
        self._timers: dict[str, Timer] = {}
        self.synced = asyncio.Event()  # set once both caches are filled
        for informer in (self._jobs, self._pods):
            informer.add_handlers(Handlers(lambda old, new: self._wake.set()))

    async def run(self) -> None:
        """Sync until cancelled."""
        tasks = [asyncio.create_task(i.run()) for i in (self._jobs, self._pods)]
        try:
            await self._jobs.synced.wait()
            await self._pods.synced.wait()
            self.synced.set()
            while True:
                self._wake.clear()
                await self.sync_once()
                ticker = asyncio.create_task(self._clock.sleep(PASS_SECONDS))
                waker = asyncio.create_task(self._wake.wait())
                await asyncio.wait({ticker, waker}, return_when=asyncio.FIRST_COMPLETED)
                for task in (ticker, waker):
                    task.cancel()
        finally:
            for task in tasks:
                task.cancel()
            for timer in self._timers.values():
                timer.cancel()
            self.events.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def sync_once(self) -> None:
        """One pass over every cached Job, then the orphans (errors are logged; the next pass
        retries)."""
        jobs = self._jobs.items()
        self._forget_gone({str(j["metadata"].get("uid")) for j in jobs})
        for cached in jobs:
            job = self._latest(cached)
            uid = str(job["metadata"].get("uid") or "")
            pods = self._pods.by_index(_OWNER_INDEX, uid)
            self._forget_caught_up(uid, pods)
            decision = step(job, pods, self._clock.now(), self._settled.get(uid, set()))
            if self._unseen.get(uid):
                decision.create = []
            try:
                await self._apply(job, decision)
            except errors.ApiError as exc:
                log.warning("job %s: %s; retrying", job["metadata"]["name"], exc)
        await self._release_orphans({str(j["metadata"].get("uid")) for j in jobs})

    def _latest(self, cached: Obj) -> Obj:
        """The cached Job, or our own last write of it while the cache is older."""
        uid = str(cached["metadata"].get("uid") or "")
        written = self._written.get(uid)
        if written is not None and _version(written) > _version(cached):
            return written
        self._written.pop(uid, None)
        return cached

    def _forget_caught_up(self, uid: str, pods: list[Obj]) -> None:
        """Drop the memory the caches no longer need (module docstring)."""
        settled = self._settled.get(uid)
        if settled is not None:  # kept while the pod exists: a stale cache may show it active
            settled &= {model.uid_of(p) for p in pods}
        names = {model.name_of(p) for p in pods}
        now = self._clock.now()
        unseen = self._unseen.get(uid, {})
        self._unseen[uid] = {
            n: at
            for n, at in unseen.items()
            if n not in names and now < at + timedelta(seconds=UNSEEN_SECONDS)
        }

    def _forget_gone(self, job_uids: set[str]) -> None:
        """Drop the memory of Jobs that are gone and of finalizer removals that took."""
        for memory in (self._written, self._settled, self._unseen):
            for uid in [u for u in memory if u not in job_uids]:
                del memory[uid]
        for uid in [u for u in self._timers if u not in job_uids]:
            self._timers.pop(uid).cancel()
        self._stripping &= {model.uid_of(p) for p in self._pods.items() if model.is_tracked(p)}

    async def _apply(self, job: Obj, decision: Step) -> None:
        meta = job["metadata"]
        namespace, name, uid = meta.get("namespace"), str(meta["name"]), str(meta.get("uid"))
        # (1) the record of ended pods, or the whole status when none needs it: counts
        # (completedIndexes, the UIDs) are stored before any finalizer goes
        first, last = decision.record, decision.status
        if not decision.after_strip:
            first, last = last, None
        if first is not None:
            job = await self._write_status(job, first)
        self._settled.setdefault(uid, set()).update(decision.settled)
        pods = {model.name_of(p): p for p in self._pods.by_index(_OWNER_INDEX, uid)}
        for victim in decision.strip:  # (2) an error here leaves the record for the next pass
            if victim in pods:
                await self._strip(pods[victim])
        if last is not None:  # (3) the counters bumped, the record emptied
            await self._write_status(job, last)
        for victim in decision.delete:
            await _ignore_missing(self._client.delete(PODS, name=victim, namespace=namespace))
        about = ObjectRef.of(job)
        for pod in decision.create:
            await self._create(job, about, pod)
        for type_, reason, message in decision.events:
            self.events.record_nowait(about, type_, reason, message)
        if decision.delete_job:
            await _ignore_missing(
                self._client.delete(
                    JOBS, name=name, namespace=namespace, propagation_policy="Foreground"
                )
            )
        self._set_timer(uid, decision.requeue_after)

    async def _write_status(self, job: Obj, status: dict[str, Any]) -> Obj:
        """PUT ``status`` on ``job`` (its resourceVersion guards the write); remembered as
        the Job's latest state while the cache is older."""
        meta = job["metadata"]
        written = await self._client.replace(
            JOBS, {**job, "status": status}, namespace=meta.get("namespace"), subresource="status"
        )
        self._written[str(meta.get("uid"))] = written
        return written

    async def _create(self, job: Obj, about: ObjectRef, pod: Obj) -> None:
        namespace, uid = job["metadata"].get("namespace"), str(job["metadata"].get("uid"))
        try:
            created = await self._client.create(PODS, pod, namespace=namespace)
        except errors.ApiError as exc:
            self.events.record_nowait(about, "Warning", "FailedCreate", f"Error creating: {exc}")
            raise
        name = str(created["metadata"]["name"])
        self._unseen.setdefault(uid, {})[name] = self._clock.now()
        self.events.record_nowait(about, "Normal", "SuccessfulCreate", f"Created pod: {name}")

    async def _strip(self, pod: Obj) -> None:
        """Remove the tracking finalizer from ``pod`` (once per pod; a pod that is gone has
        none). Returns only once the removal took, which the counters' write relies on."""
        uid = model.uid_of(pod)
        if uid in self._stripping or not model.is_tracked(pod):
            return
        left = [f for f in pod["metadata"].get("finalizers") or [] if f != model.TRACKING_FINALIZER]
        patch: dict[str, Any] = {"metadata": {"finalizers": left or None}}
        await _ignore_missing(
            self._client.patch(
                PODS,
                name=model.name_of(pod),
                namespace=pod["metadata"].get("namespace"),
                patch=patch,
            )
        )
        self._stripping.add(uid)

    async def _release_orphans(self, job_uids: set[str]) -> None:
        """Tracked pods whose Job is gone lose the finalizer (kube strips orphans too)."""
        for pod in self._pods.items():
            owners = _owner_uids(pod)
            if model.is_tracked(pod) and not any(o in job_uids for o in owners):
                try:
                    await self._strip(pod)
                except errors.ApiError as exc:
                    log.warning("pod %s: %s; retrying", model.name_of(pod), exc)

    def _set_timer(self, uid: str, delay: float | None) -> None:
        previous = self._timers.pop(uid, None)
        if previous is not None:
            previous.cancel()
        if delay is not None:
            self._timers[uid] = self._clock.call_later(delay, self._wake.set)


async def _ignore_missing(call: Awaitable[Any]) -> None:
    try:
        await call
    except errors.NotFoundError:
        return
