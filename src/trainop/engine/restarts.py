"""Restarts and the retry limits: which failed pods are restarted, and backoff/deadline failure.

A Failed pod of an index below ``replicas`` is restarted when its replica's policy says so
(``policies.is_retryable``). Before restarting, the backoff limit (every operator restart plus
container restarts, docs/design/005) and the active deadline are checked (spec 5.3, 5.4); when
either is exceeded the job fails, every pod is deleted and the finished step runs in the same
pass. Restarts done are recorded in ``status.restarts``.
"""

from __future__ import annotations

from datetime import timedelta

from trainop.api.types import FAILED
from trainop.engine import policies, status
from trainop.engine.completion import finish
from trainop.engine.draft import Draft, delete_pod
from trainop.engine.observed import PodView
from trainop.frameworks.base import replicas_of


def pending(draft: Draft) -> tuple[PodView, ...]:
    """Live pods in phase Failed that their replica's restart policy restarts."""
    found = []
    for pod in draft.pods:
        spec = draft.job.spec.replica_specs[pod.replica.type]
        in_range = pod.replica.position < replicas_of(draft.job, pod.replica.type)
        policy = spec.restart_policy or "Never"
        failed = pod.phase == "Failed" and not pod.terminating and in_range
        if failed and policies.is_retryable(policy, pod.exit_code):
            found.append(pod)
    return tuple(found)


def _failure_reason(draft: Draft, restarts: tuple[PodView, ...]) -> str | None:
    """Why the job fails by backoff or deadline now; None when it does not."""
    run_policy, name = draft.job.run_policy, draft.job.metadata.name
    live = sum(pod.restarts for pod in draft.pods if not pod.terminating)
    total = policies.recorded_restarts(draft.status) + live + len(restarts)
    remaining = policies.deadline_remaining(run_policy, draft.status, draft.now)
    if policies.backoff_exceeded(run_policy, restarts=total):
        return f"Job {name} has failed because it has reached the specified backoff limit"
    if remaining is not None and remaining <= timedelta(0):
        return f"Job {name} has failed because it was active longer than specified deadline"
    return None


def fail_by_policy(draft: Draft, restarts: tuple[PodView, ...]) -> bool:
    """Backoff limit or active deadline exceeded: fail the job, delete every pod, finish."""
    reason = _failure_reason(draft, restarts)
    if reason is None:
        draft.requeue(policies.deadline_remaining(draft.job.run_policy, draft.status, draft.now))
        return False
    for pod in draft.pods:
        delete_pod(draft, pod)
    tallies = status.tally(draft.job, draft.pods, frozenset(draft.deleted))
    draft.update_status(
        replica_statuses=status.replica_statuses(draft.job, draft.framework, tallies)
    )
    draft.set(FAILED, "Failed", reason)
    finish(draft)
    return True


def restart(draft: Draft, restarts: tuple[PodView, ...]) -> None:
    """Delete the pods to restart (recreated once gone) and record the restarts done."""
    for pod in restarts:
        delete_pod(draft, pod, with_service=False)
    if restarts:
        done = policies.recorded_restarts(draft.status) + sum(1 + pod.restarts for pod in restarts)
        draft.update_status(restarts=done)
