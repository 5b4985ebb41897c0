"""Replica counts and the framework's success/failure rules (spec 6, 4.5).

``tally`` counts, per replica type, the pods of indexes below ``replicas`` as the plan leaves
them (pods the plan deletes are no longer active): active (Running), succeeded, failed, and of
the failed ones those being restarted (``retrying``) and those that fail the job (``permanent``:
``Never``, or ``ExitCode`` below 128). ``conditions_for`` applies one rule for every kind,
parametrised by the plugin: restarts in flight → Restarting, else the primary type (or one of
the plugin's ``running_types``) running → Running; the primary type all succeeded (or the
plugin's ``succeeded`` rule) → Succeeded; otherwise a permanent failure of a type the plugin
does not tolerate → Failed.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from trainop.api.types import (
    FAILED,
    RESTARTING,
    RUNNING,
    SUCCEEDED,
    Job,
    JobStatus,
    ReplicaStatus,
)
from trainop.engine import conditions, naming, policies
from trainop.engine.actions import Event
from trainop.engine.observed import PodView
from trainop.frameworks.base import Framework, Messages, replicas_of


@dataclass(frozen=True, slots=True)
class Tally:
    """Pod counts of one replica type."""

    active: int = 0
    succeeded: int = 0
    failed: int = 0
    retrying: int = 0
    permanent: int = 0
    exit_code_permanent: int = 0  # of ``permanent``: ExitCode replicas that exited below 128


def _count(tally: Tally, pod: PodView, policy: str, deleted: bool) -> Tally:
    if pod.phase == "Running" and not (pod.terminating or deleted):
        return replace(tally, active=tally.active + 1)
    if pod.phase == "Succeeded":
        return replace(tally, succeeded=tally.succeeded + 1)
    if pod.phase != "Failed":
        return tally
    retry = policies.is_retryable(policy, pod.exit_code)
    return replace(
        tally,
        failed=tally.failed + 1,
        retrying=tally.retrying + retry,
        permanent=tally.permanent + (not retry),
        exit_code_permanent=tally.exit_code_permanent + (policy == "ExitCode" and not retry),
    )


def tally(job: Job, pods: tuple[PodView, ...], deleted: frozenset[str]) -> dict[str, Tally]:
    """Counts per replica type (every type of the spec, in spec order)."""
    result = {rt: Tally() for rt in job.spec.replica_specs}
    for pod in pods:
        spec = job.spec.replica_specs[pod.replica.type]
        if pod.replica.position >= replicas_of(job, pod.replica.type):
            continue
        policy = spec.restart_policy or "Never"
        result[pod.replica.type] = _count(
            result[pod.replica.type], pod, policy, pod.name in deleted
        )
    return result


def replica_statuses(
    job: Job, framework: Framework, tallies: dict[str, Tally]
) -> dict[str, ReplicaStatus]:
    """``status.replicaStatuses``: zero counts omitted; selector for kinds with /scale."""
    result = {}
    for rt, counts in tallies.items():
        fields = {"active": counts.active, "succeeded": counts.succeeded, "failed": counts.failed}
        update = {key: value for key, value in fields.items() if value}
        if framework.info.has_scale:
            update["selector"] = naming.selector(job, framework, rt)  # type: ignore[assignment]
        result[rt] = ReplicaStatus.model_validate(update)
    return result


def without_active(current: JobStatus, into: str | None) -> dict[str, ReplicaStatus]:
    """Replica statuses with ``active`` zeroed (and added to ``into`` when given)."""
    result = {}
    for rt, counts in (current.replica_statuses or {}).items():
        update: dict[str, object] = {"active": None}
        if into is not None and counts.active:
            update[into] = (getattr(counts, into) or 0) + counts.active
        result[rt] = counts.model_copy(update=update)
    return result


def _messages(framework: Framework, primary: str | None) -> tuple[str, str]:
    messages: Messages = framework.messages
    if primary == "Worker":
        return messages.worker_running, messages.worker_succeeded
    return messages.running, messages.succeeded


def _has_succeeded(
    job: Job,
    framework: Framework,
    primary: str | None,
    tallies: dict[str, Tally],
    pods: tuple[PodView, ...],
) -> bool:
    if primary is not None and replicas_of(job, primary) - tallies[primary].succeeded <= 0:
        return True
    rule = framework.succeeded
    return rule is not None and rule(job=job, pods=tuple(p.outcome for p in pods))


def _is_running(framework: Framework, primary: str, tallies: dict[str, Tally]) -> bool:
    """The primary type, or one of the plugin's ``running_types``, has a running pod."""
    types = (primary, *(rt for rt in framework.running_types if rt in tallies))
    return any(tallies[rt].active > 0 for rt in types)


def _wanted(
    job: Job,
    framework: Framework,
    tallies: dict[str, Tally],
    pods: tuple[PodView, ...],
) -> list[tuple[str, str]]:
    """The (condition type, message) pairs this reconcile sets, in order."""
    primary = framework.primary_type(job)
    running, succeeded = _messages(framework, primary)
    words = {"kind": framework.kind, "name": job.metadata.name, "namespace": job.metadata.namespace}
    found: list[tuple[str, str]] = []
    retrying = [(rt, t.retrying) for rt, t in tallies.items() if t.retrying]
    if retrying:
        rtype, count = retrying[0]
        restarting = framework.messages.restarting
        found.append((RESTARTING, restarting.format(**words, rtype=rtype, count=count)))
    elif primary is not None and _is_running(framework, primary, tallies):
        found.append((RUNNING, running.format(**words)))
    if _has_succeeded(job, framework, primary, tallies, pods):
        return [*found, (SUCCEEDED, succeeded.format(**words))]
    return found + _failures(job, framework, tallies, words)


def conditions_for(
    job: Job,
    framework: Framework,
    tallies: dict[str, Tally],
    pods: tuple[PodView, ...],
    current: conditions.Conditions,
    now: datetime,
) -> tuple[conditions.Conditions, tuple[Event, ...]]:
    """The job's conditions after this reconcile, and the transition events."""
    events: tuple[Event, ...] = ()
    exit_code_failure = _exit_code_failure(framework, job, tallies)
    for condition_type, message in _wanted(job, framework, tallies, pods):
        reason = f"{framework.kind}{condition_type}"
        current, new_events = conditions.set_condition(
            current, type=condition_type, reason=reason, message=message, now=now
        )
        if message == exit_code_failure:  # upstream records this one as a Warning
            new_events = tuple(Event("Warning", e.reason, e.message) for e in new_events)
        events += new_events
    return current, events


def _failures(
    job: Job, framework: Framework, tallies: dict[str, Tally], words: dict[str, str | None]
) -> list[tuple[str, str]]:
    """The Failed condition, if a permanent failure fails the job.

    An ExitCode replica that exited below 128 fails the job whatever the plugin tolerates, with
    upstream's common message (its pod logic decided before any kind's status rule ran);
    otherwise the first type with a failed ``Never`` replica the plugin does not tolerate.
    """
    messages: Messages = framework.messages
    exit_code_failure = _exit_code_failure(framework, job, tallies)
    if exit_code_failure is not None:
        return [(FAILED, exit_code_failure)]
    tolerated = framework.tolerates_failure
    for rt, counts in tallies.items():
        if counts.permanent and not (tolerated and tolerated(job=job, replica_type=rt)):
            return [(FAILED, messages.failed.format(**words, rtype=rt, count=counts.permanent))]
    return []


def _exit_code_failure(framework: Framework, job: Job, tallies: dict[str, Tally]) -> str | None:
    """Upstream's message when an ExitCode replica exited below 128 (None when none did)."""
    for rt, counts in tallies.items():
        if counts.exit_code_permanent:
            return framework.messages.failing_exit_code.format(name=job.metadata.name, rtype=rt)
    return None
