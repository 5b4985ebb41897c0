"""``ttlSecondsAfterFinished`` (spec 2.13; golden case G13).

Finish time is the ``lastTransitionTime`` of the True ``Completed`` or ``Failed`` condition.
Once ``now >= finish + ttl`` the JobSet is deleted (foreground: its Jobs, pods and Service go
first, by the garbage collector); before that the pass asks to be run again when it is due.
No TTL: kept for ever.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from trainop.cluster.controllers.jobset import keys
from trainop.cluster.controllers.jobset.conditions import Conditions, parse_time
from trainop.cluster.controllers.jobset.spec import Raw, spec_of


@dataclass(frozen=True, slots=True)
class Expiry:
    """Delete now, or look again after ``after`` seconds (None: never)."""

    delete: bool = False
    after: float | None = None


def finished_at(conditions: Conditions) -> datetime | None:
    for ctype in (keys.COMPLETED, keys.FAILED):
        found = conditions.find(ctype)
        if found is not None and found.get("status") == "True":
            return parse_time(found.get("lastTransitionTime"))
    return None


def expiry(jobset: Raw, conditions: Conditions, now: datetime) -> Expiry:
    """What the TTL asks of a finished JobSet at ``now``."""
    ttl = spec_of(jobset).get("ttlSecondsAfterFinished")
    done = finished_at(conditions)
    if not isinstance(ttl, int) or isinstance(ttl, bool) or done is None:
        return Expiry()
    left = (done - now).total_seconds() + ttl
    return Expiry(delete=True) if left <= 0 else Expiry(after=left)
