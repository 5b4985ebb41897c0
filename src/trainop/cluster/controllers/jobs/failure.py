"""Why a Job fails, and how long a failed pod's replacement waits (pure; spec §3.5, K-pfp,
K-backoff).

``match_rule`` applies ``podFailurePolicy`` to one failed pod: the rules in order, the first
that matches decides (``FailJob``, ``Ignore``, ``Count``, ``FailIndex`` with per-index
back-off). ``onExitCodes`` looks at terminated containers and init
containers with a non-zero exit code (only ``containerName`` when given), ``In``/``NotIn``
``values``; ``onPodConditions`` needs a pod condition of that type and status.
``limit_failure`` is the backoff limit (failed pods, or ``OnFailure`` restarts of live pods)
and the active deadline. ``replacement_delay`` is the global back-off: 10 s doubling per
failure since the last success, at most 10 minutes, from the last failure's end.
Neighbours: ``model`` (pod facts), ``step``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from trainop.cluster.controllers.jobs import model
from trainop.cluster.controllers.jobs.model import JobSpec, Pod

BACKOFF_BASE_SECONDS = 10.0
BACKOFF_MAX_SECONDS = 600.0
BACKOFF_LIMIT = ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
DEADLINE = ("DeadlineExceeded", "Job was active longer than specified deadline")
POD_FAILURE_POLICY = "PodFailurePolicy"
MAX_FAILED_INDEXES = (
    "MaxFailedIndexesExceeded",
    "Job has exceeded the specified maximal number of failed indexes",
)
FAILED_INDEXES = ("FailedIndexes", "Job has failed indexes")


@dataclass(frozen=True, slots=True)
class RuleMatch:
    """The action of the first matching rule, and the FailJob message it would give."""

    action: str
    message: str


def _exit_matches(rule: Mapping[str, Any], pod: Pod) -> RuleMatch | None:
    requirement = rule["onExitCodes"]
    wanted_container = requirement.get("containerName")
    values = {int(v) for v in requirement.get("values") or []}
    operator = requirement.get("operator")
    status = pod.get("status") or {}
    for key in ("containerStatuses", "initContainerStatuses"):
        for container in status.get(key) or []:
            terminated = (container.get("state") or {}).get("terminated") or {}
            code = int(terminated.get("exitCode") or 0)
            if code == 0 or wanted_container not in (None, container.get("name")):
                continue
            if (code in values) == (operator == "In"):
                namespace = pod["metadata"].get("namespace")
                message = (
                    f"Container {container.get('name')} for pod {namespace}/{model.name_of(pod)}"
                    f" failed with exit code {code} matching {rule.get('action')} rule at index"
                )
                return RuleMatch(str(rule.get("action")), message)
    return None


def _condition_matches(rule: Mapping[str, Any], pod: Pod) -> RuleMatch | None:
    conditions = (pod.get("status") or {}).get("conditions") or []
    for pattern in rule["onPodConditions"]:
        wanted = (pattern.get("type"), pattern.get("status") or "True")
        if any((c.get("type"), c.get("status")) == wanted for c in conditions):
            namespace = pod["metadata"].get("namespace")
            message = (
                f"Pod {namespace}/{model.name_of(pod)} has condition {wanted[0]} matching "
                f"{rule.get('action')} rule at index"
            )
            return RuleMatch(str(rule.get("action")), message)
    return None


def match_rule(rules: Sequence[Mapping[str, Any]], pod: Pod) -> RuleMatch | None:
    """The first rule matching the failed ``pod``; its message ends with the rule's index."""
    for number, rule in enumerate(rules):
        found = None
        if rule.get("onExitCodes"):
            found = _exit_matches(rule, pod)
        elif rule.get("onPodConditions"):
            found = _condition_matches(rule, pod)
        if found is not None:
            return RuleMatch(found.action, f"{found.message} {number}")
    return None


def limit_failure(
    spec: JobSpec,
    *,
    failed: int,
    live: Sequence[Pod],
    started: datetime | None,
    now: datetime,
) -> tuple[str, str] | None:
    """The reason and message of a backoff-limit or deadline failure, or None (§3.5 3-4)."""
    if failed > spec.backoff_limit:
        return BACKOFF_LIMIT
    if spec.restart_policy == "OnFailure":
        restarts = sum(
            model.restarts(p) for p in live if model.phase_of(p) in ("Running", "Pending")
        )
        if restarts > 0 and restarts >= spec.backoff_limit:
            return BACKOFF_LIMIT
    if deadline_in(spec, started, now) == 0.0:
        return DEADLINE
    return None


def deadline_in(spec: JobSpec, started: datetime | None, now: datetime) -> float | None:
    """Seconds until the active deadline, when one is running."""
    if spec.deadline_seconds is None or started is None or spec.suspend:
        return None
    return max(0.0, (started + timedelta(seconds=spec.deadline_seconds) - now).total_seconds())


def replacement_delay(pods: Sequence[Pod], now: datetime) -> float:
    """Seconds a new pod must still wait after the failures since the last success."""
    successes = [model.finish_time(p) for p in pods if model.phase_of(p) == "Succeeded"]
    last_success = max((t for t in successes if t is not None), default=None)
    failures = [
        t
        for t in (model.finish_time(p) for p in pods if model.phase_of(p) == "Failed")
        if last_success is None or (t is not None and t >= last_success)  # same instant: after
    ]
    if not failures:
        return 0.0
    delay = min(BACKOFF_BASE_SECONDS * 2 ** (len(failures) - 1), BACKOFF_MAX_SECONDS)
    known = [t for t in failures if t is not None]
    if not known:
        return 0.0  # no finish time: the back-off counts from long ago
    return max(0.0, (max(known) + timedelta(seconds=delay) - now).total_seconds())
