"""Which replicatedJobs may start now: ``dependsOn`` (spec 2.10) and ``startupPolicy: InOrder``
(spec 2.11; golden cases G10, G11).

Both read this pass's ``replicatedJobsStatus``. A dependency on ``Complete`` holds when all
its replicas succeeded; on ``Ready`` when ``ready + failed + succeeded`` equals its replicas.
A replicatedJob is *started* when ``ready + failed + succeeded`` equals its replicas. InOrder
walks the replicatedJobs in spec order and lets only the first one not started go (creating its
Jobs, or when resuming unsuspending them); a suspended JobSet bypasses InOrder (every Job is
created, suspended) but not ``dependsOn``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from trainop.cluster.controllers.jobset.spec import ReplicatedJob

Statuses = Mapping[str, Mapping[str, Any]]


def index_statuses(entries: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    return {str(e.get("name")): e for e in entries}


def _sum(entry: Mapping[str, Any], *counters: str) -> int:
    return sum(int(entry.get(c) or 0) for c in counters)


def is_started(rj: ReplicatedJob, statuses: Statuses) -> bool:
    entry = statuses.get(rj.name)
    return entry is not None and _sum(entry, "ready", "failed", "succeeded") == rj.replicas


def dependencies_hold(
    rj: ReplicatedJob, all_jobs: Sequence[ReplicatedJob], statuses: Statuses
) -> bool:
    """Whether every ``dependsOn`` item of ``rj`` has reached its status."""
    replicas = {r.name: r.replicas for r in all_jobs}
    for name, wanted in rj.depends_on:
        entry = statuses.get(name)
        if entry is None or name not in replicas:
            return False
        counters = ("succeeded",) if wanted == "Complete" else ("ready", "failed", "succeeded")
        if _sum(entry, *counters) != replicas[name]:
            return False
    return True


@dataclass(frozen=True, slots=True)
class Startup:
    """The replicatedJobs (positions) whose missing Jobs are created now, and the InOrder
    condition to set: "in-progress", "completed" or "" (none)."""

    positions: tuple[int, ...]
    in_order: str = ""


def startup(
    all_jobs: Sequence[ReplicatedJob], statuses: Statuses, *, in_order: bool, suspended: bool
) -> Startup:
    """What to create this pass."""
    ready = [i for i, rj in enumerate(all_jobs) if dependencies_hold(rj, all_jobs, statuses)]
    if not in_order or suspended:
        return Startup(tuple(ready))
    for i, rj in enumerate(all_jobs):
        if not is_started(rj, statuses):
            return Startup((i,), "in-progress")
    return Startup((), "completed")


def resumable(
    all_jobs: Sequence[ReplicatedJob], statuses: Statuses, *, in_order: bool
) -> list[int]:
    """The replicatedJobs (positions) whose suspended Jobs are resumed this pass."""
    found = []
    for i, rj in enumerate(all_jobs):
        if not dependencies_hold(rj, all_jobs, statuses):
            continue
        if in_order and is_started(rj, statuses):
            continue
        found.append(i)
        if in_order:
            break
    return found
