"""What the Job controller reads from a Job and its pods: the spec with kube's defaults, and
each pod's phase, index, readiness, restarts and finish time (pure).

The API server defaults a Job on every write (``admission.defaults.job``); the defaults are
applied again here so that a Job from a client that skips admission (the unit tests'
``FakeClient``) runs the same. Time stamps are kube's ``RFC 3339`` seconds in UTC.
Neighbours: ``indexes``, ``failure``, ``conditions`` and ``step`` decide with these values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

Pod = Mapping[str, Any]
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
INDEX_KEY = "batch.kubernetes.io/job-completion-index"  # annotation and label
TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
FAILURE_COUNT_KEY = "batch.kubernetes.io/job-index-failure-count"
IGNORED_COUNT_KEY = "batch.kubernetes.io/job-index-ignored-failure-count"
INDEX_ENV = "JOB_COMPLETION_INDEX"
CONTROLLER_NAME = "kubernetes.io/job-controller"
DEFAULT_BACKOFF_LIMIT = 6
_TERMINAL = ("Succeeded", "Failed")


@dataclass(frozen=True, slots=True)
class JobSpec:
    """A Job's spec fields the controller acts on, defaulted as kube-apiserver defaults them."""

    completions: int | None
    parallelism: int
    indexed: bool
    backoff_limit: int
    backoff_limit_per_index: int | None  # set only for Indexed Jobs (admission)
    max_failed_indexes: int | None
    suspend: bool
    replace_only_failed: bool  # podReplacementPolicy Failed
    restart_policy: str
    deadline_seconds: int | None
    ttl_seconds: int | None
    failure_rules: tuple[Mapping[str, Any], ...]
    success_rules: tuple[Mapping[str, Any], ...]
    managed_elsewhere: bool


def spec_of(job: Mapping[str, Any]) -> JobSpec:
    """The Job's ``JobSpec`` (``SetDefaults_Job`` for what the server did not default)."""
    spec: Mapping[str, Any] = job.get("spec") or {}
    completions, parallelism = spec.get("completions"), spec.get("parallelism")
    if completions is None and parallelism is None:
        completions = 1
    template_spec = (spec.get("template") or {}).get("spec") or {}
    failure_policy = spec.get("podFailurePolicy") or {}
    replacement = spec.get("podReplacementPolicy") or (
        "Failed" if failure_policy else "TerminatingOrFailed"
    )
    managed_by = spec.get("managedBy")
    return JobSpec(
        completions=completions,
        parallelism=1 if parallelism is None else int(parallelism),
        indexed=spec.get("completionMode") == "Indexed",
        backoff_limit=int(spec.get("backoffLimit", DEFAULT_BACKOFF_LIMIT)),
        backoff_limit_per_index=spec.get("backoffLimitPerIndex"),
        max_failed_indexes=spec.get("maxFailedIndexes"),
        suspend=bool(spec.get("suspend")),
        replace_only_failed=replacement == "Failed",
        restart_policy=str(template_spec.get("restartPolicy") or "Never"),
        deadline_seconds=spec.get("activeDeadlineSeconds"),
        ttl_seconds=spec.get("ttlSecondsAfterFinished"),
        failure_rules=tuple(failure_policy.get("rules") or ()),
        success_rules=tuple((spec.get("successPolicy") or {}).get("rules") or ()),
        managed_elsewhere=managed_by not in (None, CONTROLLER_NAME),
    )


def parse_time(text: object) -> datetime | None:
    """A kube time stamp as an aware datetime; None for anything else."""
    if not isinstance(text, str) or not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def stamp(now: datetime) -> str:
    """``now`` as kube writes times (seconds, ``Z``)."""
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


def name_of(pod: Pod) -> str:
    return str(pod["metadata"]["name"])


def uid_of(pod: Pod) -> str:
    return str(pod["metadata"].get("uid") or "")


def phase_of(pod: Pod) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def is_terminal(pod: Pod) -> bool:
    return phase_of(pod) in _TERMINAL


def is_deleting(pod: Pod) -> bool:
    return bool(pod["metadata"].get("deletionTimestamp"))


def is_active(pod: Pod) -> bool:
    """Counts in ``status.active``: not finished and not being deleted."""
    return not is_terminal(pod) and not is_deleting(pod)


def is_terminating(pod: Pod) -> bool:
    """Counts in ``status.terminating``: being deleted, not finished yet."""
    return is_deleting(pod) and not is_terminal(pod)


def is_ready(pod: Pod) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def is_tracked(pod: Pod) -> bool:
    """The pod still carries the tracking finalizer: its end is not counted yet."""
    return TRACKING_FINALIZER in (pod["metadata"].get("finalizers") or [])


def index_of(pod: Pod) -> int | None:
    """The completion index of the pod's annotation (label as a fallback); None if invalid."""
    meta = pod["metadata"]
    text = (meta.get("annotations") or {}).get(INDEX_KEY)
    if text is None:
        text = (meta.get("labels") or {}).get(INDEX_KEY)
    if not isinstance(text, str) or not text.isdigit() or (len(text) > 1 and text[0] == "0"):
        return None
    return int(text)


def annotation_count(pod: Pod, key: str) -> int:
    """A non-negative integer annotation of the pod (0 when absent or malformed)."""
    text = (pod["metadata"].get("annotations") or {}).get(key)
    return int(text) if isinstance(text, str) and text.isdigit() else 0


def container_statuses(pod: Pod) -> list[Mapping[str, Any]]:
    """Statuses of the init containers, then of the containers."""
    status = pod.get("status") or {}
    return [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]


def restarts(pod: Pod) -> int:
    return sum(int(s.get("restartCount") or 0) for s in container_statuses(pod))


def finish_time(pod: Pod) -> datetime | None:
    """When the pod ended: its latest container ``finishedAt``, else when it stopped being
    Ready, else its deletion, else its creation (K-backoff's order); None if none is known."""
    finished = [
        parse_time(((s.get("state") or {}).get("terminated") or {}).get("finishedAt"))
        for s in container_statuses(pod)
    ]
    known = [t for t in finished if t is not None]
    if known:
        return max(known)
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready" and c.get("status") == "False":
            found = parse_time(c.get("lastTransitionTime"))
            if found is not None:
                return found
    meta = pod["metadata"]
    return parse_time(meta.get("deletionTimestamp")) or parse_time(meta.get("creationTimestamp"))
