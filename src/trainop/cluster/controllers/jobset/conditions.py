"""JobSet's condition-update rules (spec 1.8) and the events they raise (spec 2.16).

``Conditions`` holds a pass's copy of ``status.conditions``. ``set`` applies upstream's rules:
a changed status replaces the condition with a new ``lastTransitionTime``; a changed reason or
message alone keeps the old time; an identical condition changes nothing; an absent type is
only ever added as True; ``StartupPolicyInProgress`` and ``StartupPolicyCompleted`` exclude
each other (setting one True flips the other to False in place). Each change queues one event:
Warning for ``Failed`` and ``RestartingJobSet=True``, Normal otherwise, reason and note the
condition's. ``observedGeneration`` is never set.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from trainop.cluster.controllers.jobset import keys

_EXCLUSIVE = {
    keys.STARTUP_IN_PROGRESS: keys.STARTUP_COMPLETED,
    keys.STARTUP_COMPLETED: keys.STARTUP_IN_PROGRESS,
}


@dataclass(frozen=True, slots=True)
class Event:
    """An event about the JobSet: type (Normal/Warning), reason, note."""

    type: str
    reason: str
    message: str


def stamp(now: datetime) -> str:
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: object) -> datetime | None:
    if not isinstance(text, str):
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


class Conditions:
    """A pass's conditions, changed by ``set``; ``events`` lists what the changes raise."""

    def __init__(self, existing: Iterable[Mapping[str, Any]], now: datetime) -> None:
        self.items: list[dict[str, Any]] = [dict(c) for c in existing]
        self.events: list[Event] = []
        self._now = now

    def find(self, ctype: str) -> dict[str, Any] | None:
        return next((c for c in self.items if c.get("type") == ctype), None)

    def is_true(self, ctype: str) -> bool:
        found = self.find(ctype)
        return found is not None and found.get("status") == "True"

    def set(self, ctype: str, status: bool, reason_message: tuple[str, str]) -> bool:
        """Apply one condition; True when something changed (and an event was queued)."""
        reason, message = reason_message
        wanted = {
            "type": ctype,
            "status": "True" if status else "False",
            "reason": reason,
            "message": message,
        }
        current = self.find(ctype)
        if current is None:
            if not status:
                return False
            self.items.append({**wanted, "lastTransitionTime": stamp(self._now)})
        elif current.get("status") != wanted["status"]:
            current.update(wanted, lastTransitionTime=stamp(self._now))
        elif (current.get("reason"), current.get("message")) != (reason, message):
            current.update(reason=reason, message=message)
        else:
            return False
        other = self.find(_EXCLUSIVE.get(ctype, "")) if status else None
        if other is not None and other.get("status") == "True":
            other["status"] = "False"
        warning = ctype == keys.FAILED or (ctype == keys.RESTARTING and status)
        self.events.append(Event(keys.WARNING if warning else keys.NORMAL, reason, message))
        return True

    def finished(self) -> bool:
        return self.is_true(keys.COMPLETED) or self.is_true(keys.FAILED)


@dataclass(slots=True)
class Draft:
    """The status a pass is writing: conditions, restart counters, terminal state, and the
    events beyond the conditions' (restarts) to emit once it is written."""

    conditions: Conditions
    restarts: int = 0
    counted: int = 0  # restartsCountTowardsMax
    terminal: str = ""
    events: list[Event] = field(default_factory=list)

    def all_events(self) -> list[Event]:
        return self.conditions.events + self.events
