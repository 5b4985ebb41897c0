"""Counting the pods of a Job that ended, each exactly once (pure; spec §3.4, §3.9).

A pod that still carries the tracking finalizer, is not in the controller's ``settled`` set
and is not in the Job's ``uncountedTerminatedPods`` record is uncounted. Once it has ended
(``Succeeded``; ``Failed``; or, unless only failed pods are replaced, deleted before
succeeding) it is counted: a success adds its index to ``completedIndexes`` (Indexed, index
in range) or its UID to the succeeded pods awaiting the record (``uncounted``); a failure
adds its UID to the failed ones unless a podFailurePolicy ``Ignore`` rule matches it
(Indexed: only in-range indexes count). With ``backoffLimitPerIndex`` a failure past the
index's limit (its pod's ``job-index-failure-count`` + 1), or matching a ``FailIndex`` rule,
fails the index. A pod already in the record is counted there: it only loses its finalizer.
The controller then removes the finalizers and remembers the pods as settled, so a cache that
has not caught up yet does not count them twice.
Neighbours: ``model``, ``failure`` (rule matching), ``indexes`` (index sets), ``uncounted``
(the record), ``step``.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from trainop.cluster.controllers.jobs import failure, model
from trainop.cluster.controllers.jobs.model import JobSpec, Pod
from trainop.cluster.controllers.jobs.uncounted import Uncounted


@dataclass(slots=True)
class Tally:
    """What this sync counts: new failures and successes (UIDs for the record, indexes), the
    pods whose finalizer goes, and the FailJob match if any."""

    new: Uncounted = field(default_factory=Uncounted)  # ended pods not yet in the record
    succeeded_indexes: set[int] = field(default_factory=set)
    settled: list[Pod] = field(default_factory=list)
    fail_job: str | None = None  # the message of the first FailJob rule that matched
    failed_indexes: set[int] = field(default_factory=set)  # per-index back-off only


def has_ended_as_failure(pod: Pod, spec: JobSpec) -> bool:
    """kube's ``isPodFailed``: Failed, or deleted before success unless only failed pods are
    replaced."""
    if model.phase_of(pod) == "Failed":
        return True
    if spec.replace_only_failed:
        return False
    return model.is_deleting(pod) and model.phase_of(pod) != "Succeeded"


def _in_range(pod: Pod, spec: JobSpec) -> bool:
    if not spec.indexed:
        return True
    index = model.index_of(pod)
    return index is not None and index < (spec.completions or 0)


def tally(spec: JobSpec, pods: Sequence[Pod], settled: Collection[str], record: Uncounted) -> Tally:
    """Count the uncounted pods that ended (module docstring)."""
    result = Tally()
    for pod in pods:
        uid = model.uid_of(pod)
        if not model.is_tracked(pod) or (uid in settled and uid not in record):
            continue
        if uid in record:  # counted by an earlier sync's first write: only the finalizer is left
            result.settled.append(pod)
        elif model.phase_of(pod) == "Succeeded":
            result.settled.append(pod)
            if _in_range(pod, spec):
                index = model.index_of(pod)
                if spec.indexed and index is not None:
                    result.succeeded_indexes.add(index)
                else:
                    result.new.succeeded.add(uid)
        elif has_ended_as_failure(pod, spec):
            result.settled.append(pod)
            if _in_range(pod, spec):
                _count_failure(spec, pod, result)
    return result


def _count_failure(spec: JobSpec, pod: Pod, result: Tally) -> None:
    match = failure.match_rule(spec.failure_rules, pod) if spec.failure_rules else None
    if match is not None and match.action == "Ignore":
        return
    result.new.failed.add(model.uid_of(pod))
    if match is not None and match.action == "FailJob" and result.fail_job is None:
        result.fail_job = match.message
    index, limit = model.index_of(pod), spec.backoff_limit_per_index
    if limit is None or index is None:
        return
    failures = model.annotation_count(pod, model.FAILURE_COUNT_KEY) + 1
    if (match is not None and match.action == "FailIndex") or failures > limit:
        result.failed_indexes.add(index)
