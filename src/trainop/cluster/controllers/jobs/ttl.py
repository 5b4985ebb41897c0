"""``ttlSecondsAfterFinished``: when a finished Job is deleted (pure; spec §3.2).

The clock starts at ``completionTime``, else at the terminal condition's transition time.
Neighbours: ``conditions``, ``model``, ``step`` (a finished Job's sync).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from trainop.cluster.controllers.jobs import conditions, model
from trainop.cluster.controllers.jobs.model import JobSpec


def after_finish(
    spec: JobSpec, status: Mapping[str, Any], now: datetime
) -> tuple[bool, float | None]:
    """Whether to delete the finished Job now, else in how many seconds to look again."""
    if spec.ttl_seconds is None:
        return False, None
    found = status.get("conditions") or []
    ended = conditions.find(found, "Complete") or conditions.find(found, "Failed")
    done_at = model.parse_time(status.get("completionTime")) or model.parse_time(
        (ended or {}).get("lastTransitionTime")
    )
    if done_at is None:
        return False, None
    left = (done_at + timedelta(seconds=spec.ttl_seconds) - now).total_seconds()
    return (True, None) if left <= 0 else (False, left)
