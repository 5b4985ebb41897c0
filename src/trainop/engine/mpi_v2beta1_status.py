"""The status of an MPIJob v2beta1 (mpi-v2beta1-spec 4.2), and the plan under construction.

Success comes only from the launcher Job's ``Complete`` (``completionTime`` from the Job),
failure from its ``Failed`` (``BackoffLimitExceeded/<pod reason>`` with the newest failed
launcher pod's words), evicted workers fail the job (``MPIJobEvicted``), ``Running`` needs a
running launcher pod and every worker running; suspension and resumption set ``Suspended``
(a resume restarts ``startTime``). Replica counts: the launcher's from its Job, the workers'
from their pods.

Pure: ``now`` is the draft's. Neighbours: ``mpi_v2beta1`` (the planner) builds a ``Draft`` and
calls ``report`` last; ``batch_jobs`` reads the launcher Job's conditions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from trainop.api import mpi_v2beta1 as api
from trainop.api.types import FAILED, RUNNING, SUCCEEDED, SUSPENDED, JobStatus, ReplicaStatus
from trainop.engine import batch_jobs, conditions
from trainop.engine.actions import Action, Event, Plan
from trainop.engine.gang import GangScheduler

Raw = Mapping[str, Any]


@dataclass(slots=True)
class Draft:
    """A v2beta1 plan under construction: the job, the time, the new status, actions, events."""

    job: api.MPIJobV2Beta1
    now: datetime
    status: JobStatus
    gang: GangScheduler | None
    actions: list[Action] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)

    def set(self, ctype: str, reason: str, message: str, status: str = "True") -> None:
        current = tuple(self.status.conditions or ())
        new, events = conditions.set_condition(
            current, type=ctype, reason=reason, message=message, now=self.now, status=status
        )
        self.status = self.status.model_copy(update={"conditions": list(new)})
        self.events += events

    def has(self, ctype: str) -> bool:
        return any(c.type == ctype for c in self.status.conditions or ())

    def result(self) -> Plan:
        return Plan(tuple(self.actions), self.status, tuple(self.events))


def _phase(pod: Raw) -> Any:
    return (pod.get("status") or {}).get("phase")


def report(
    draft: Draft,
    *,
    launcher: Raw | None,
    launcher_pods: tuple[Raw, ...],
    workers: list[Raw],
    suspended: bool,
) -> None:
    """Conditions and replica statuses of the job as the plan leaves it."""
    job, now = draft.job, draft.now
    ident = f"{job.metadata.namespace}/{job.metadata.name}"
    if suspended:
        draft.set(SUSPENDED, "MPIJobSuspended", "MPIJob suspended")
    elif draft.has(SUSPENDED):
        before = draft.status.conditions
        draft.set(SUSPENDED, "MPIJobResumed", "MPIJob resumed", status="False")
        if draft.status.conditions != before:
            draft.status = draft.status.model_copy(update={"start_time": now})
    statuses: dict[str, ReplicaStatus] = {}
    if launcher is not None:
        statuses[api.LAUNCHER] = _launcher_status(draft, launcher, launcher_pods, ident)
    statuses[api.WORKER] = _count(workers)
    evicted = sum(
        1
        for p in workers
        if _phase(p) == "Failed" and (p.get("status") or {}).get("reason") == "Evicted"
    )
    if evicted:
        draft.set(FAILED, "MPIJobEvicted", f"{evicted}/{len(workers)} workers are evicted")
    old = draft.status.replica_statuses or {}
    merged = {api.LAUNCHER: ReplicaStatus(), api.WORKER: ReplicaStatus(), **old, **statuses}
    draft.status = draft.status.model_copy(update={"replica_statuses": merged})
    finished = conditions.is_finished(tuple(draft.status.conditions or ()))
    if suspended:
        draft.set(RUNNING, "MPIJobSuspended", f"MPIJob {ident} is suspended.", status="False")
    elif finished:
        if not draft.has(RUNNING):
            draft.set(
                RUNNING,
                "MPIJobRunning",
                f"MPIJob {ident} is finished but Running condition was never set.",
                status="False",
            )
    elif launcher is not None:
        launcher_running = any(_phase(p) == "Running" for p in launcher_pods)
        if launcher_running and all(_phase(p) == "Running" for p in workers):
            draft.set(RUNNING, "MPIJobRunning", f"MPIJob {ident} is running.")


def _count(pods: list[Raw]) -> ReplicaStatus:
    phases = [_phase(p) for p in pods]
    counts = {
        "active": phases.count("Running"),
        "succeeded": phases.count("Succeeded"),
        "failed": phases.count("Failed"),
    }
    return ReplicaStatus(**{k: v for k, v in counts.items() if v})


def _launcher_status(
    draft: Draft, launcher: Raw, launcher_pods: tuple[Raw, ...], ident: str
) -> ReplicaStatus:
    failed = int((launcher.get("status") or {}).get("failed") or 0)
    result: dict[str, int] = {"failed": failed} if failed else {}
    complete = batch_jobs.condition(launcher, "Complete")
    failure = batch_jobs.condition(launcher, "Failed")
    if complete is not None:
        result["succeeded"] = 1
        if draft.status.completion_time is None:
            text = (launcher.get("status") or {}).get("completionTime")
            when = _time(text) if isinstance(text, str) else draft.now
            draft.status = draft.status.model_copy(update={"completion_time": when})
        draft.set(SUCCEEDED, "MPIJobSucceeded", f"MPIJob {ident} successfully completed.")
    elif failure is not None:
        reason = str(failure.get("reason") or "MPIJobFailed")
        message = str(failure.get("message") or f"MPIJob {ident} has failed")
        if reason == "BackoffLimitExceeded":
            reason, message = _with_last_pod(reason, message, launcher_pods)
        if draft.status.completion_time is None:
            draft.status = draft.status.model_copy(update={"completion_time": draft.now})
        draft.set(FAILED, reason, message)
    else:
        running = sum(1 for p in launcher_pods if _phase(p) == "Running")
        if running:
            result["active"] = running
    return ReplicaStatus(**result)


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _with_last_pod(reason: str, message: str, pods: tuple[Raw, ...]) -> tuple[str, str]:
    """``BackoffLimitExceeded/<pod reason>`` and ``<message>: <pod message>`` from the newest
    Failed launcher pod (upstream's wording, trailing separators included)."""
    failed = [p for p in pods if _phase(p) == "Failed"]
    if not failed:
        return reason, message
    newest = max(failed, key=lambda p: str(p["metadata"].get("creationTimestamp") or ""))
    status = newest.get("status") or {}
    text = f"{message}: {status.get('message') or ''}"
    return f"{reason}/{status.get('reason') or ''}", text[:1024]
