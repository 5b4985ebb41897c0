"""One sync of one Job: what to create, delete, count and write (pure; spec §3.3-§3.8).

``step(job, pods, now, settled)`` is the whole decision, in kube's order:

1. a finished Job only has its pods' finalizers removed, and is deleted once
   ``ttlSecondsAfterFinished`` has passed; a Job being deleted (or managed by another
   controller) only loses its finalizers (or is left alone);
2. the pods that ended are counted (``counting``);
3. failure: an existing ``FailureTarget``, a ``FailJob`` rule, the backoff limit, the deadline
   (``failure``), failed indexes (``perindex``); success: a batch ``successPolicy`` rule;
4. with neither: suspend (delete the active pods, uncounted), or create and delete pods as
   ``indexes`` plans them, after the replacement back-off; then ``CompletionsReached``;
5. with an interim condition: the active pods are deleted (counted as failed on failure),
   and once nothing is terminating the terminal condition follows (``conditions``).

Pods removed on purpose (suspension, surplus, bad index) lose the finalizer before they are
deleted and are never counted. ``Step.settled`` names every pod whose end must not be counted
again; the controller remembers them until their finalizer is gone. Ended pods that need the
``uncountedTerminatedPods`` record (``uncounted``: NonIndexed successes, failures) make two
status writes: ``Step.record`` before the finalizers go, ``Step.status`` after.
Neighbours: ``model``, ``counting``, ``failure``, ``indexes``, ``conditions``, ``pods``;
``controller`` applies the ``Step``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from trainop.cluster.controllers.jobs import (
    conditions,
    counting,
    failure,
    indexes,
    model,
    perindex,
    pods,
    ttl,
    uncounted,
)
from trainop.cluster.controllers.jobs.model import JobSpec, Pod
from trainop.cluster.controllers.jobs.uncounted import Uncounted

Event = tuple[str, str, str]  # type, reason, message


@dataclass(slots=True)
class Step:
    """What to do for one Job (applied in this order: record, strip, status, delete,
    create)."""

    record: dict[str, Any] | None = None  # step (1): ended pods recorded, none counted yet
    status: dict[str, Any] | None = None  # the final status (None when unchanged)
    after_strip: bool = False  # pods pass through the record: ``status`` waits for the strips
    strip: list[str] = field(default_factory=list)  # pods whose tracking finalizer goes
    delete: list[str] = field(default_factory=list)
    create: list[dict[str, Any]] = field(default_factory=list)
    settled: set[str] = field(default_factory=set)  # pod uids never to count (again)
    events: list[Event] = field(default_factory=list)
    delete_job: bool = False
    requeue_after: float | None = None


def _tracked_names(pods: Sequence[Pod]) -> list[str]:
    return [model.name_of(p) for p in pods if model.is_tracked(p)]


def _ttl_step(spec: JobSpec, status: Mapping[str, Any], pods: Sequence[Pod], now: datetime) -> Step:
    """A finished Job: finalizers removed; deleted once its TTL has passed (``ttl``)."""
    delete, later = ttl.after_finish(spec, status, now)
    return Step(strip=_tracked_names(pods), delete_job=delete, requeue_after=later)


@dataclass(slots=True)
class _Sync:
    """The state of one sync while ``step`` works through it."""

    job: Mapping[str, Any]
    spec: JobSpec
    pods: Sequence[Pod]
    now: datetime
    conditions: list[dict[str, Any]]
    status: dict[str, Any]
    active: list[Pod]
    terminating: int
    failed: int
    succeeded: int
    completed: set[int]
    failed_indexes: set[int]
    record: Uncounted  # the Job's uncountedTerminatedPods
    awaiting: Uncounted  # the pods of this sync that pass through the record
    result: Step = field(default_factory=Step)


def step(
    job: Mapping[str, Any], pods: Sequence[Pod], now: datetime, settled: Collection[str] = ()
) -> Step:
    """The decision for one Job given the pods it owns (module docstring)."""
    spec = model.spec_of(job)
    status: dict[str, Any] = dict(job.get("status") or {})
    if spec.managed_elsewhere:
        return Step()
    if conditions.is_finished(status.get("conditions") or []):
        return _ttl_step(spec, status, pods, now)
    if job["metadata"].get("deletionTimestamp"):
        return Step(strip=_tracked_names(pods))
    sync = _start(job, spec, status, pods, now, settled)
    target = conditions.interim(sync.conditions)
    if target is None:
        _judge(sync)
        target = conditions.interim(sync.conditions)
    if target is None:
        _manage(sync)
    else:
        _end(sync, success=target["type"] == "SuccessCriteriaMet")
    return _finish(sync)


def _start(
    job: Mapping[str, Any],
    spec: JobSpec,
    status: dict[str, Any],
    pods: Sequence[Pod],
    now: datetime,
    settled: Collection[str],
) -> _Sync:
    """Count what ended and set up the sync's state."""
    record = uncounted.recorded(status)
    counted = counting.tally(spec, pods, settled, record)
    tracked = {model.uid_of(p) for p in counted.settled}
    awaiting = Uncounted(
        succeeded=(record.succeeded & tracked) | counted.new.succeeded,
        failed=(record.failed & tracked) | counted.new.failed,
    )
    completed = indexes.parse_intervals(status.get("completedIndexes")) | counted.succeeded_indexes
    if spec.indexed:
        completed = {i for i in completed if i < (spec.completions or 0)}
    sync = _Sync(
        job=job,
        spec=spec,
        pods=pods,
        now=now,
        conditions=[dict(c) for c in status.get("conditions") or []],
        status=status,
        active=[p for p in pods if model.is_active(p) and model.uid_of(p) not in settled],
        terminating=sum(
            1
            for p in pods
            if model.is_terminating(p) or (model.is_active(p) and model.uid_of(p) in settled)
        ),
        failed=int(status.get("failed") or 0) + len(record.failed | counted.new.failed),
        succeeded=len(completed)
        if spec.indexed
        else int(status.get("succeeded") or 0) + len(record.succeeded | counted.new.succeeded),
        completed=completed,
        failed_indexes=set(),
        record=record,
        awaiting=awaiting,
    )
    if perindex.is_on(spec):
        known = indexes.parse_intervals(status.get("failedIndexes"))
        sync.failed_indexes = (known | counted.failed_indexes) - completed
    sync.result.settled = {model.uid_of(p) for p in counted.settled}
    sync.result.strip = [model.name_of(p) for p in counted.settled]
    if status.get("startTime") is None and not spec.suspend:
        status["startTime"] = model.stamp(now)
    if counted.fail_job is not None and conditions.interim(sync.conditions) is None:
        _interim(sync, "FailureTarget", failure.POD_FAILURE_POLICY, counted.fail_job)
    return sync


def _interim(sync: _Sync, ctype: str, reason: str, message: str) -> None:
    entry = conditions.new(ctype, "True", reason, message, sync.now)
    sync.conditions = conditions.with_condition(sync.conditions, entry)[0]


def _judge(sync: _Sync) -> None:
    """Failure by backoff limit or deadline, else success by a batch success policy."""
    spec = sync.spec
    started = None if spec.suspend else model.parse_time(sync.status.get("startTime"))
    failed = failure.limit_failure(
        spec, failed=sync.failed, live=sync.active, started=started, now=sync.now
    )
    if failed is None and perindex.is_on(spec):
        failed = perindex.verdict(
            spec, failed=sync.failed_indexes, completed=sync.completed, active=len(sync.active)
        )
    if failed is not None:
        _interim(sync, "FailureTarget", *failed)
        return
    matched = indexes.success_rule(spec, sync.completed)
    if matched is not None:
        _interim(sync, "SuccessCriteriaMet", "SuccessPolicy", f"Matched rules at index {matched}")
    wait = failure.deadline_in(spec, started, sync.now)
    if wait is not None:
        sync.result.requeue_after = wait


def _remove(sync: _Sync, victims: Sequence[Pod], *, count_as_failed: bool) -> None:
    """Delete active pods: counted as failed, or first stripped so they never count (their
    finalizer goes either way: a counted pod is settled). A pod without the finalizer was
    counted when it lost it, one in the record by an earlier sync."""
    for pod in victims:
        name, uid = model.name_of(pod), model.uid_of(pod)
        if model.is_tracked(pod) and name not in sync.result.strip:
            sync.result.strip.append(name)
        sync.result.settled.add(uid)
        sync.result.delete.append(name)
        sync.result.events.append(("Normal", "SuccessfulDelete", f"Deleted pod: {name}"))
        if count_as_failed and model.is_tracked(pod) and uid not in sync.record:
            sync.failed += 1
            sync.awaiting.failed.add(uid)
    gone = {id(p) for p in victims}
    sync.active = [p for p in sync.active if id(p) not in gone]
    sync.terminating += len(victims)


def _manage(sync: _Sync) -> None:
    """No interim condition: suspend, or create/delete pods, then check for completion."""
    spec = sync.spec
    sync.conditions, event = conditions.suspension(
        sync.conditions, suspend=spec.suspend, now=sync.now
    )
    if event is not None:
        sync.result.events.append(("Normal", event, f"Job {event.lower()}"))
        if event == "Resumed":
            sync.status["startTime"] = model.stamp(sync.now)
    if spec.suspend:
        _remove(sync, list(sync.active), count_as_failed=False)
        return
    _plan(sync)
    if spec.completions is None:
        complete = sync.succeeded > 0 and not sync.active
    else:
        complete = sync.succeeded >= spec.completions and not sync.active
    if complete:
        _interim(sync, "SuccessCriteriaMet", *conditions.COMPLETIONS_REACHED)
        _end(sync, success=True)
    elif not spec.indexed and spec.completions is not None and sync.succeeded > spec.completions:
        message = "Too many succeeded pods running after completion count reached"
        sync.result.events.append(("Warning", "TooManySucceededPods", message))


def _plan(sync: _Sync) -> None:
    """Create and delete pods as ``indexes`` plans them, after the replacement back-off."""
    spec = sync.spec
    terminating = [p for p in sync.pods if model.is_terminating(p)]
    if spec.indexed:
        plan = indexes.plan_indexed(
            spec, sync.active, terminating, sync.completed, sync.failed_indexes
        )
    else:
        plan = indexes.plan_non_indexed(spec, sync.active, terminating, sync.succeeded)
    _remove(sync, plan.delete, count_as_failed=False)
    if not plan.create:
        return
    delay = failure.replacement_delay(sync.pods, sync.now)
    if delay > 0:
        later = sync.result.requeue_after
        sync.result.requeue_after = delay if later is None else min(later, delay)
        return
    sync.result.create = [
        pods.pod_for(sync.job, i, _counts(sync, i) if i is not None else None) for i in plan.create
    ]


def _counts(sync: _Sync, index: int) -> dict[str, str] | None:
    if not perindex.is_on(sync.spec):
        return None
    return perindex.failure_counts(sync.spec, sync.pods, index)


def _end(sync: _Sync, *, success: bool) -> None:
    """An interim condition holds: remove the active pods; finish once none terminates."""
    _remove(sync, list(sync.active), count_as_failed=not success)
    if sync.terminating:
        return
    sync.conditions = conditions.finish(sync.conditions, sync.now)
    final = sync.conditions[-1]
    if success:
        sync.status["completionTime"] = model.stamp(sync.now)
        sync.result.events.append(("Normal", "Completed", "Job completed"))
    else:
        sync.result.events.append(("Warning", final["reason"], final["message"]))


def _finish(sync: _Sync) -> Step:
    """The statuses to write: the record first when a pod passes through it, then the final
    status (None when unchanged)."""
    spec, status = sync.spec, sync.status
    ready = sum(1 for p in sync.active if model.is_ready(p))
    new: dict[str, Any] = {
        k: v for k, v in status.items() if k not in _COUNTERS and k != "conditions"
    }
    if sync.conditions:
        new["conditions"] = sync.conditions
    counters = {
        "active": len(sync.active) + len(sync.result.create),
        "succeeded": sync.succeeded,
        "failed": sync.failed,
    }
    new |= {k: v for k, v in counters.items() if v}
    new |= {"ready": ready, "terminating": sync.terminating, "uncountedTerminatedPods": {}}
    if spec.indexed and sync.completed:
        new["completedIndexes"] = indexes.format_intervals(sync.completed)
    if perindex.is_on(spec):
        new["failedIndexes"] = indexes.format_intervals(sync.failed_indexes)
    current = dict(sync.job.get("status") or {})
    if sync.awaiting:  # the record may be written already (a restart after step 1)
        record = uncounted.first_write(new, sync.awaiting)
        sync.result.record = record if record != current else None
        sync.result.after_strip, current = True, record
    if new != current:
        sync.result.status = new
    return sync.result


_COUNTERS = (
    "active",
    "succeeded",
    "failed",
    "ready",
    "terminating",
    "completedIndexes",
    "failedIndexes",
    "uncountedTerminatedPods",
)
