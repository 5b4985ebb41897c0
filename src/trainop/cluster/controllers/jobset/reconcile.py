"""One pass over one JobSet (spec 2.1, 2.2): observed state in, a ``Plan`` out (pure).

Order, as upstream's: count the current attempt; a finished JobSet only deletes its active
Jobs and runs its TTL; otherwise the Jobs of earlier attempts are deleted, ``RestartingJobSet``
turns False once every replica is ready or succeeded again, a failed Job runs the failure
policy (and ends the pass: failure is judged before success), a succeeded one the success
policy (ending the pass when it completes the JobSet); then the headless Service, the missing
Jobs (``dependsOn``/InOrder, and with ``BlockingRecreate`` none while an earlier attempt's Job
exists), and suspension or resumption. Every pass ends with the status to write, when it
changed, and the events to emit after that write.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from trainop.cluster.controllers.jobset import (
    children,
    counts,
    failure,
    gating,
    keys,
    spec,
    success,
    suspension,
    ttl,
)
from trainop.cluster.controllers.jobset.conditions import Conditions, Draft, Event
from trainop.cluster.controllers.jobset.service import headless_service
from trainop.cluster.controllers.jobset.spec import Raw, as_int, as_list, as_map


@dataclass(slots=True)
class Plan:
    """What one pass asks the controller to do, in this order."""

    delete_jobs: list[str] = field(default_factory=list)  # foreground
    create_service: dict[str, Any] | None = None
    create_jobs: list[dict[str, Any]] = field(default_factory=list)
    clear_start_time: list[str] = field(default_factory=list)  # status patches, before resuming
    patch_jobs: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # merge patches
    status: dict[str, Any] | None = None  # the new status, when it changed
    events: list[Event] = field(default_factory=list)
    delete_jobset: bool = False  # foreground (TTL)
    requeue_after: float | None = None


def is_skipped(jobset: Raw) -> bool:
    """Deleting, or managed by another controller: not reconciled."""
    managed = spec.spec_of(jobset).get("managedBy")
    deleting = as_map(jobset.get("metadata")).get("deletionTimestamp") is not None
    return deleting or managed not in (None, keys.CONTROLLER_NAME)


def _deleting(job: Raw) -> bool:
    return as_map(job.get("metadata")).get("deletionTimestamp") is not None


def _names(jobs: Sequence[Raw]) -> list[str]:
    return [spec.name_of(job) for job in jobs if not _deleting(job)]


def reconcile(jobset: Raw, jobs: Sequence[Raw], *, service_exists: bool, now: datetime) -> Plan:
    """The plan for ``jobset`` given its owned Jobs (may raise ``counts.BadAttemptLabelError`` or
    ``failure.GatedActionError``: the pass fails and is retried)."""
    plan = Plan()
    if is_skipped(jobset):
        return plan
    status = spec.status_of(jobset)
    draft = Draft(
        Conditions(as_list(status.get("conditions")), now),
        restarts=spec.restarts(jobset),
        counted=as_int(status.get("restartsCountTowardsMax")),
        terminal=str(status.get("terminalState") or ""),
    )
    found = counts.classify(jobset, jobs)
    entries = counts.replicated_jobs_status(jobset, found)
    _steps(jobset, jobs, found, entries, draft, plan, service_exists=service_exists, now=now)
    plan.status = _new_status(status, draft, entries)
    plan.events = draft.all_events() if plan.status is not None else []
    return plan


def _steps(
    jobset: Raw,
    jobs: Sequence[Raw],
    found: counts.Children,
    entries: list[dict[str, Any]],
    draft: Draft,
    plan: Plan,
    *,
    service_exists: bool,
    now: datetime,
) -> None:
    if draft.conditions.finished():
        plan.delete_jobs = _names(found.active)
        expiry = ttl.expiry(jobset, draft.conditions, now)
        plan.delete_jobset, plan.requeue_after = expiry.delete, expiry.after
        return
    plan.delete_jobs = _names(found.previous)
    all_jobs = spec.replicated_jobs(jobset)
    replicas = sum(rj.replicas for rj in all_jobs)
    if (
        not spec.is_suspended(jobset)
        and sum(e["ready"] + e["succeeded"] for e in entries) == replicas
    ):
        draft.conditions.set(keys.RESTARTING, False, keys.JOBS_READY)
    if found.failed:
        failure.apply(spec.failure_policy(jobset), found.failed, draft)
        return
    if found.succeeded and success.is_met(jobset, found.succeeded):
        success.complete(draft)
        return
    if spec.dns_hostnames(jobset) and not service_exists:
        plan.create_service = headless_service(jobset)
    statuses = gating.index_statuses(entries)
    _create(jobset, jobs, found, statuses, draft, plan)
    _suspend_or_resume(jobset, found, statuses, draft, plan)


def _create(
    jobset: Raw,
    jobs: Sequence[Raw],
    found: counts.Children,
    statuses: gating.Statuses,
    draft: Draft,
    plan: Plan,
) -> None:
    policy = as_map(spec.failure_policy(jobset))
    if policy.get("restartStrategy") == "BlockingRecreate" and found.previous:
        return
    decision = gating.startup(
        spec.replicated_jobs(jobset),
        statuses,
        in_order=spec.in_order(jobset),
        suspended=spec.is_suspended(jobset),
    )
    taken = {spec.name_of(job) for job in jobs}
    for position in decision.positions:
        plan.create_jobs += children.missing_jobs(jobset, position, taken)
    if decision.in_order == "in-progress":
        draft.conditions.set(keys.STARTUP_IN_PROGRESS, True, keys.IN_ORDER_IN_PROGRESS)
    elif decision.in_order == "completed":
        draft.conditions.set(keys.STARTUP_COMPLETED, True, keys.IN_ORDER_COMPLETED)


def _suspend_or_resume(
    jobset: Raw, found: counts.Children, statuses: gating.Statuses, draft: Draft, plan: Plan
) -> None:
    if spec.is_suspended(jobset):
        plan.patch_jobs = [
            (n, suspension.SUSPEND_PATCH) for n in suspension.to_suspend(found.active)
        ]
        draft.conditions.set(keys.SUSPENDED, True, keys.SUSPENDED_JOBS)
        draft.conditions.set(keys.RESTARTING, False, keys.JOBSET_SUSPENDED)
        return
    all_jobs = spec.replicated_jobs(jobset)
    for position in gating.resumable(all_jobs, statuses, in_order=spec.in_order(jobset)):
        rj = all_jobs[position]
        for job in found.active:
            mine = counts.labels_of(job).get(keys.REPLICATED_JOB) == rj.name
            if not mine or as_map(job.get("spec")).get("suspend") is not True:
                continue
            if suspension.needs_start_time_cleared(job):
                plan.clear_start_time.append(spec.name_of(job))
            plan.patch_jobs.append((spec.name_of(job), suspension.resume_patch(job, rj.template)))
    draft.conditions.set(keys.SUSPENDED, False, keys.RESUME_JOBS)


def _new_status(old: Raw, draft: Draft, entries: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The status to write (restarts always present), or None when nothing changed."""
    new: dict[str, Any] = {
        k: v
        for k, v in old.items()
        if k
        not in ("conditions", "restartsCountTowardsMax", "terminalState", "replicatedJobsStatus")
    }
    if draft.conditions.items:
        new["conditions"] = draft.conditions.items
    new["restarts"] = draft.restarts
    if draft.counted:
        new["restartsCountTowardsMax"] = draft.counted
    if draft.terminal:
        new["terminalState"] = draft.terminal
    if entries:
        new["replicatedJobsStatus"] = entries
    return None if new == dict(old) else new
