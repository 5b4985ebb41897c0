"""The TrainJob status (spec §1.4, §2.5, §2.6), as pure decisions on plain dicts.

Conditions follow Kubernetes' ``meta.SetStatusCondition``: a new type is appended (list order is
first-set order; the printer column shows the last), an existing one keeps its place, and its
``lastTransitionTime`` moves only when its status changes. ``Complete`` and ``Failed`` copy the
JobSet's ``Completed``/``Failed`` conditions; ``jobsStatus`` mirrors its
``replicatedJobsStatus``. **Terminal** (as fixed upstream after v2.3.0, spec §7.1): once
``Complete`` or ``Failed`` is True the conditions never change again and a vanished JobSet
leaves ``jobsStatus`` as it was. Times are RFC 3339 strings; ``now`` is an argument.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from trainop.api.trainer import constants as c
from trainop.engine.trainer.containers import Raw, Wire, as_map, maps

_COUNTERS = ("ready", "succeeded", "failed", "active", "suspended")


def timestamp(now: datetime) -> str:
    return now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: object) -> datetime | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def find(conditions: list[Wire], condition_type: str) -> Wire | None:
    return next((x for x in conditions if x.get("type") == condition_type), None)


def is_true(conditions: list[Wire], condition_type: str) -> bool:
    found = find(conditions, condition_type)
    return found is not None and found.get("status") == "True"


def is_finished(status: Raw) -> bool:
    conditions = maps(status.get("conditions"))
    return is_true(conditions, c.CONDITION_COMPLETE) or is_true(conditions, c.CONDITION_FAILED)


def set_condition(conditions: list[Wire], new: Mapping[str, Any], now: datetime) -> None:
    """``meta.SetStatusCondition`` on ``conditions`` (in place)."""
    current = find(conditions, str(new["type"]))
    if current is None:
        added = dict(new)
        added.setdefault("lastTransitionTime", timestamp(now))
        conditions.append(added)
        return
    if current.get("status") != new.get("status"):
        current["status"] = new["status"]
        current["lastTransitionTime"] = new.get("lastTransitionTime") or timestamp(now)
    current["reason"] = new.get("reason", "")
    current["message"] = new.get("message", "")
    if "observedGeneration" in new:
        current["observedGeneration"] = new["observedGeneration"]


def condition(condition_type: str, status: str, reason: str, message: str) -> Wire:
    return {"type": condition_type, "status": status, "reason": reason, "message": message}


def set_suspended(conditions: list[Wire], suspended: bool, now: datetime) -> None:
    """``Suspended`` True while suspended; False/``Resumed`` once it was True (§1.4)."""
    if suspended:
        new = condition(c.CONDITION_SUSPENDED, "True", c.REASON_SUSPENDED, c.MESSAGE_SUSPENDED)
        set_condition(conditions, new, now)
    elif is_true(conditions, c.CONDITION_SUSPENDED):
        new = condition(c.CONDITION_SUSPENDED, "False", c.REASON_RESUMED, c.MESSAGE_RESUMED)
        set_condition(conditions, new, now)


def _copied(jobset_condition: Raw, condition_type: str) -> Wire:
    keys = ("status", "reason", "message", "lastTransitionTime", "observedGeneration")
    copied = {k: jobset_condition[k] for k in keys if k in jobset_condition}
    copied.setdefault("reason", "")
    copied.setdefault("message", "")
    return {"type": condition_type, **copied}


def from_jobset(status: Wire, jobset: Raw, now: datetime) -> None:
    """§2.5 steps 3-6 on ``status`` (in place): Complete/Failed copied, jobsStatus mirrored."""
    jobset_status = as_map(jobset.get("status"))
    found = maps(jobset_status.get("conditions"))
    conditions = maps(status.get("conditions"))
    for source, target in (
        (c.JOBSET_CONDITION_COMPLETED, c.CONDITION_COMPLETE),
        (c.JOBSET_CONDITION_FAILED, c.CONDITION_FAILED),
    ):
        if is_true(found, source) and not is_finished({"conditions": conditions}):
            set_condition(conditions, _copied(find(found, source) or {}, target), now)
    if conditions:
        status["conditions"] = conditions
    jobs = [
        {"name": j.get("name", ""), **{k: _count(j.get(k)) for k in _COUNTERS}}
        for j in maps(jobset_status.get("replicatedJobsStatus"))
    ]
    if jobs:
        status["jobsStatus"] = jobs
    else:
        status.pop("jobsStatus", None)


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def deadline(trainjob: Raw, status: Raw, now: datetime) -> tuple[bool, float | None]:
    """§2.6: (exceeded, seconds until it is) for an unfinished, unsuspended TrainJob with
    ``activeDeadlineSeconds``; the clock starts at the ``Suspended=False`` transition if the
    TrainJob was resumed, else at its creation."""
    spec = as_map(trainjob.get("spec"))
    seconds = spec.get("activeDeadlineSeconds")
    if not isinstance(seconds, int) or seconds <= 0 or spec.get("suspend") or is_finished(status):
        return False, None
    suspended = find(maps(status.get("conditions")), c.CONDITION_SUSPENDED)
    if suspended is not None and suspended.get("status") == "False":
        start = parse_time(suspended.get("lastTransitionTime"))
    else:
        start = parse_time(as_map(trainjob.get("metadata")).get("creationTimestamp"))
    if start is None:
        return False, None
    end = start + timedelta(seconds=seconds)
    if now > end:
        return True, None
    return False, max((end - now).total_seconds(), 1.0)


def fail_deadline(status: Wire, now: datetime) -> None:
    conditions = maps(status.get("conditions"))
    new = condition(
        c.CONDITION_FAILED, "True", c.REASON_DEADLINE_EXCEEDED, c.MESSAGE_DEADLINE_EXCEEDED
    )
    set_condition(conditions, new, now)
    status["conditions"] = conditions


def current(trainjob: Raw) -> Wire:
    """A deep copy of the TrainJob's status (``trainerStatus`` and all kept)."""
    return copy.deepcopy(dict(as_map(trainjob.get("status"))))
