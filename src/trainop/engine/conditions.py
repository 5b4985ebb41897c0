"""Job conditions: upstream's ``setCondition`` rules (spec 4.9) and the condition events.

Rules: once ``Failed`` is True nothing changes; a condition of the same type, status and reason
is left alone; same type and status with another reason is replaced keeping its transition time;
otherwise the new condition is appended after removing the same type (and ``Restarting`` when
adding ``Running``, ``Running`` when adding ``Restarting``); adding ``Succeeded``/``Failed`` flips a
``Running`` condition to False. Neighbours: ``status`` decides what to set; ``plan`` collects the
events returned here.
"""

from __future__ import annotations

from datetime import datetime

from trainop.api.types import FAILED, RESTARTING, RUNNING, SUCCEEDED, JobCondition
from trainop.engine.actions import Event, EventType

Conditions = tuple[JobCondition, ...]
_WARNING_TYPES = (RESTARTING,)


def is_true(conditions: Conditions, condition_type: str) -> bool:
    """Whether ``condition_type`` is present with status True."""
    return any(c.type == condition_type and c.status == "True" for c in conditions)


def is_finished(conditions: Conditions) -> bool:
    return is_true(conditions, SUCCEEDED) or is_true(conditions, FAILED)


def _flip_running(conditions: Conditions) -> Conditions:
    return tuple(
        c.model_copy(update={"status": "False"}) if c.type == RUNNING else c for c in conditions
    )


def _dropped_by(condition_type: str) -> set[str]:
    """Types removed when ``condition_type`` is appended: itself, and Running/Restarting
    replace each other."""
    exclusive = {RUNNING: RESTARTING, RESTARTING: RUNNING}
    return {condition_type, *((exclusive[condition_type],) if condition_type in exclusive else ())}


def set_condition(
    conditions: Conditions,
    *,
    type: str,
    reason: str,
    message: str,
    now: datetime,
    status: str = "True",
) -> tuple[Conditions, tuple[Event, ...]]:
    """``conditions`` with one condition set, and the event for the transition (if any)."""
    if is_true(conditions, FAILED):
        return conditions, ()
    current = next((c for c in conditions if c.type == type), None)
    if current is not None and current.status == status and current.reason == reason:
        return conditions, ()
    new = JobCondition.model_validate(
        {"type": type, "status": status, "reason": reason, "message": message,
         "lastUpdateTime": now, "lastTransitionTime": now}
    )  # fmt: skip
    if current is not None and current.status == status:
        new = new.model_copy(update={"last_transition_time": current.last_transition_time})
        return tuple(new if c.type == type else c for c in conditions), (_event(new),)
    kept = tuple(c for c in conditions if c.type not in _dropped_by(type))
    if type in (SUCCEEDED, FAILED) and status == "True":
        kept = _flip_running(kept)
    return (*kept, new), (_event(new),)


def _event(condition: JobCondition) -> Event:
    kind: EventType = "Warning" if condition.type in _WARNING_TYPES else "Normal"
    return Event(kind, condition.reason or condition.type, condition.message or "")
