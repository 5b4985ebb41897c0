"""``status.uncountedTerminatedPods``: kube's record of ended pods whose tracking finalizer
is being removed, so a crash at any point counts each pod exactly once (pure; spec §3.4).

kube counts an ended pod, still carrying ``batch.kubernetes.io/job-tracking``, in three
writes: (1) its UID goes to ``uncountedTerminatedPods.succeeded`` or ``.failed``; (2) the
pod's finalizer is removed; (3) the counter is bumped and the UID dropped, in one status
write. A UID in the record is therefore part of the Job's count already: it is never added
again, and it moves to its counter once its pod has lost the finalizer or is gone, whichever
step a restart resumes from. Indexed successes skip the record: ``completedIndexes`` is a
set, so writing the index before the finalizer goes cannot count it twice.

``first_write`` is step (1) as a whole status: the sync's final status with the awaiting
pods moved back from the counters into the record, and without the terminal condition
(``Complete``/``Failed`` and ``completionTime``), which only follows once nothing is
uncounted — a finished Job is never synced again, so a record written with it would be lost.
Neighbours: ``counting`` (which pods await), ``step`` (both writes), ``controller``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

_TERMINAL = ("Complete", "Failed")


@dataclass(slots=True)
class Uncounted:
    """UIDs of ended pods counted in the record, by how they ended."""

    succeeded: set[str] = field(default_factory=set)
    failed: set[str] = field(default_factory=set)

    def __bool__(self) -> bool:
        return bool(self.succeeded or self.failed)

    def __contains__(self, uid: object) -> bool:
        return uid in self.succeeded or uid in self.failed

    def wire(self) -> dict[str, list[str]]:
        """The record as the API writes it (empty lists left out, kube's ``omitempty``)."""
        lists = {"succeeded": sorted(self.succeeded), "failed": sorted(self.failed)}
        return {k: v for k, v in lists.items() if v}


def recorded(status: Mapping[str, Any]) -> Uncounted:
    """The record of a Job's status (empty when absent)."""
    record = status.get("uncountedTerminatedPods") or {}
    return Uncounted(
        succeeded={str(u) for u in record.get("succeeded") or []},
        failed={str(u) for u in record.get("failed") or []},
    )


def first_write(final: Mapping[str, Any], awaiting: Uncounted) -> dict[str, Any]:
    """Step (1): ``final`` with the ``awaiting`` pods recorded instead of counted, and no
    terminal condition yet (module docstring)."""
    first = {k: v for k, v in final.items() if k != "completionTime"}
    for key, uids in (("succeeded", awaiting.succeeded), ("failed", awaiting.failed)):
        left = int(final.get(key) or 0) - len(uids)
        first.pop(key, None)
        if left:
            first[key] = left
    if "conditions" in final:
        kept = [c for c in final["conditions"] if c.get("type") not in _TERMINAL]
        first.pop("conditions")
        if kept:
            first["conditions"] = kept
    first["uncountedTerminatedPods"] = awaiting.wire()
    return first
