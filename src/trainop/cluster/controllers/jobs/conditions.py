"""A Job's conditions, as the Job controller of Kubernetes 1.36 writes them (pure; spec §3.6).

Ending is two steps: the interim condition (``SuccessCriteriaMet`` or ``FailureTarget``) as
soon as the criteria are met, then the terminal one (``Complete`` or ``Failed``, same reason
and message) once no pod is terminating. ``Suspended`` is True while suspended and turns
False on resume; a False ``Suspended`` is never added from nothing. Every entry carries
``lastProbeTime`` = ``lastTransitionTime`` = the time of the change.
Neighbours: ``model`` (time stamps), ``step``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from trainop.cluster.controllers.jobs import model

Condition = dict[str, Any]
COMPLETIONS_REACHED = ("CompletionsReached", "Reached expected number of succeeded pods")
SUSPENDED = ("JobSuspended", "Job suspended")
RESUMED = ("JobResumed", "Job resumed")
FINAL = {"SuccessCriteriaMet": "Complete", "FailureTarget": "Failed"}


def find(conditions: Sequence[Mapping[str, Any]], ctype: str) -> Mapping[str, Any] | None:
    """The condition of type ``ctype`` whose status is True, or None."""
    return next(
        (c for c in conditions if c.get("type") == ctype and c.get("status") == "True"), None
    )


def is_finished(conditions: Sequence[Mapping[str, Any]]) -> bool:
    return find(conditions, "Complete") is not None or find(conditions, "Failed") is not None


def new(ctype: str, status: str, reason: str, message: str, now: datetime) -> Condition:
    """A condition entry changed at ``now``."""
    at = model.stamp(now)
    return {
        "type": ctype,
        "status": status,
        "lastProbeTime": at,
        "lastTransitionTime": at,
        "reason": reason,
        "message": message,
    }


def with_condition(
    conditions: Sequence[Mapping[str, Any]], entry: Condition
) -> tuple[list[Condition], bool]:
    """``conditions`` with ``entry`` set (added, or replacing one of its type whose status
    differs); also whether anything changed."""
    found = next((c for c in conditions if c.get("type") == entry["type"]), None)
    if found is not None and found.get("status") == entry["status"]:
        return [dict(c) for c in conditions], False
    if found is None and entry["type"] == "Suspended" and entry["status"] == "False":
        return [dict(c) for c in conditions], False
    kept = [dict(c) for c in conditions if c is not found]
    if found is not None:
        kept.insert(list(conditions).index(found), entry)
        return kept, True
    return [*kept, entry], True


def suspension(
    conditions: Sequence[Mapping[str, Any]], *, suspend: bool, now: datetime
) -> tuple[list[Condition], str | None]:
    """Conditions with ``Suspended`` set for ``suspend``; the Event reason when it changed
    (``Suspended`` or ``Resumed``)."""
    if suspend:
        entry = new("Suspended", "True", *SUSPENDED, now)
    else:
        entry = new("Suspended", "False", *RESUMED, now)
    changed_list, changed = with_condition(conditions, entry)
    if not changed:
        return changed_list, None
    return changed_list, "Suspended" if suspend else "Resumed"


def interim(conditions: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The True ``SuccessCriteriaMet`` or ``FailureTarget``, success first."""
    return find(conditions, "SuccessCriteriaMet") or find(conditions, "FailureTarget")


def finish(conditions: Sequence[Mapping[str, Any]], now: datetime) -> list[Condition]:
    """Conditions with the terminal one after the interim one (which must be present)."""
    target = interim(conditions)
    assert target is not None
    final = new(FINAL[target["type"]], "True", target["reason"], target["message"], now)
    return with_condition(conditions, final)[0]
