"""Time and retry policies, as pure decisions: restart, backoff, deadline, TTL, cleanup (spec 5).

- ``is_retryable``: Always/OnFailure always; ExitCode when the default container's exit code is
  >= 128 or unknown (evicted: upstream's 0xbeef sentinel); Never never.
- ``backoff_exceeded``: restarts counted are every operator-performed restart (recorded in the
  status, with the container restarts of the pod it replaced) plus the container restart counts
  of live pods; the job fails once they exceed ``backoffLimit``.
- ``deadline_remaining`` / ``ttl_remaining``: exact durations for ``requeue_after``.
- ``cleanup_targets``: pods to delete on completion per ``cleanPodPolicy``.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from trainop.api.types import JobStatus, RunPolicy
from trainop.engine.observed import PodView

RETRYABLE_EXIT_CODE = 128


def is_retryable(policy: str, exit_code: int | None) -> bool:
    """Whether a pod that ended in phase Failed is restarted (deleted and recreated)."""
    if policy in ("Always", "OnFailure"):
        return True
    if policy == "ExitCode":
        return exit_code is None or exit_code >= RETRYABLE_EXIT_CODE
    return False


def recorded_restarts(status: JobStatus) -> int:
    """Operator-performed restarts recorded in the status so far."""
    return status.restarts or 0


def backoff_exceeded(run_policy: RunPolicy, *, restarts: int) -> bool:
    """Whether ``restarts`` (operator restarts + container restarts) exceed ``backoffLimit``."""
    limit = run_policy.backoff_limit
    return limit is not None and restarts > limit


def deadline_remaining(run_policy: RunPolicy, status: JobStatus, now: datetime) -> timedelta | None:
    """Time left before ``activeDeadlineSeconds`` (<= 0: exceeded); None without a deadline."""
    seconds = run_policy.active_deadline_seconds
    if seconds is None or status.start_time is None:
        return None
    return status.start_time + timedelta(seconds=seconds) - now


def ttl_remaining(run_policy: RunPolicy, status: JobStatus, now: datetime) -> timedelta | None:
    """Time left before a finished job is deleted (<= 0: due); None without a TTL."""
    seconds = run_policy.ttl_seconds_after_finished
    if seconds is None or status.completion_time is None:
        return None
    return status.completion_time + timedelta(seconds=seconds) - now


def cleanup_targets(policy: str | None, pods: tuple[PodView, ...]) -> tuple[PodView, ...]:
    """Live pods ``cleanPodPolicy`` deletes once the job finished (Running also takes Pending)."""
    live = tuple(pod for pod in pods if not pod.terminating)
    if policy == "All":
        return live
    if policy == "Running":
        return tuple(pod for pod in live if pod.phase in ("Running", "Pending"))
    return ()
