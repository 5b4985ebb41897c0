"""Per-index back-off (``backoffLimitPerIndex``, ``maxFailedIndexes``; spec §3.2-§3.5, pure).

Each pod of a Job with ``backoffLimitPerIndex`` carries how often its index failed before it
(``batch.kubernetes.io/job-index-failure-count``) and, when some failures were ignored by an
``Ignore`` rule, how many (``…-ignored-failure-count``). A new pod takes the counts of its
index's last failed pod, one more in the one that failure adds to. Failed indexes are not
created again; the Job fails with ``MaxFailedIndexesExceeded`` when more indexes failed than
``maxFailedIndexes``, or with ``FailedIndexes`` once every index succeeded or failed and at
least one failed.
Neighbours: ``counting`` (which fails an index), ``failure`` (rules), ``pods``, ``step``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from trainop.cluster.controllers.jobs import counting, failure, model
from trainop.cluster.controllers.jobs.model import JobSpec, Pod

_LONG_AGO = datetime.min.replace(tzinfo=UTC)


def is_on(spec: JobSpec) -> bool:
    return spec.indexed and spec.backoff_limit_per_index is not None


def failure_counts(spec: JobSpec, pods: Sequence[Pod], index: int) -> dict[str, str]:
    """The count annotations of a new pod of ``index``."""
    failed = [
        p for p in pods if model.index_of(p) == index and counting.has_ended_as_failure(p, spec)
    ]
    count = ignored = 0
    if failed:
        last = max(failed, key=lambda p: (model.finish_time(p) or _LONG_AGO, model.name_of(p)))
        count = model.annotation_count(last, model.FAILURE_COUNT_KEY)
        ignored = model.annotation_count(last, model.IGNORED_COUNT_KEY)
        match = failure.match_rule(spec.failure_rules, last) if spec.failure_rules else None
        if match is not None and match.action == "Ignore":
            ignored += 1
        else:
            count += 1
    annotations = {model.FAILURE_COUNT_KEY: str(count)}
    if ignored:
        annotations[model.IGNORED_COUNT_KEY] = str(ignored)
    return annotations


def verdict(
    spec: JobSpec, *, failed: set[int], completed: set[int], active: int
) -> tuple[str, str] | None:
    """The Job's failure by its failed indexes, or None (§3.5 item 5)."""
    if not failed:
        return None
    if spec.max_failed_indexes is not None and len(failed) > spec.max_failed_indexes:
        return failure.MAX_FAILED_INDEXES
    if not active and len(completed | failed) >= (spec.completions or 0):
        return failure.FAILED_INDEXES
    return None
