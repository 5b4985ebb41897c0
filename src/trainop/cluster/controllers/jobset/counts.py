"""Which child Jobs belong to the current attempt, and what they add up to (spec 2.4, 2.5).

A Job whose ``restart-attempt`` label is below ``status.restarts`` is *previous* (a restart
has passed it by: it is deleted). The others are succeeded (``Complete=True``), failed
(``Failed=True``) or active; ``FailureTarget``/``SuccessCriteriaMet`` alone finish nothing.
``replicatedJobsStatus`` counts only current-attempt Jobs, one entry per replicatedJob (zeros
included), sorted by name descending as upstream persists it (golden cases G4, G10).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from trainop.cluster.controllers.jobset import keys
from trainop.cluster.controllers.jobset.spec import (
    Raw,
    as_int,
    as_list,
    as_map,
    replicated_jobs,
    restarts,
)
from trainop.errors import TrainopError

COUNTERS = ("ready", "succeeded", "failed", "active", "suspended")


class BadAttemptLabelError(TrainopError):
    """A child Job's restart-attempt label is not an integer: the pass fails (upstream too)."""


def condition(job: Raw, ctype: str) -> Raw | None:
    """The Job's ``ctype`` condition when it is True."""
    found = (
        c for c in as_list(as_map(job.get("status")).get("conditions")) if c.get("type") == ctype
    )
    return next((c for c in found if c.get("status") == "True"), None)


def labels_of(job: Raw) -> Raw:
    return as_map(as_map(job.get("metadata")).get("labels"))


@dataclass(slots=True)
class Children:
    """Owned Jobs sorted by state."""

    previous: list[Raw] = field(default_factory=list)
    active: list[Raw] = field(default_factory=list)
    succeeded: list[Raw] = field(default_factory=list)
    failed: list[Raw] = field(default_factory=list)

    def current(self) -> list[Raw]:
        return self.active + self.succeeded + self.failed


def classify(jobset: Raw, jobs: Sequence[Raw]) -> Children:
    """Sort owned Jobs into previous / succeeded / failed / active (spec 2.4)."""
    attempt, found = restarts(jobset), Children()
    for job in jobs:
        label = labels_of(job).get(keys.RESTART_ATTEMPT)
        try:
            number = int(str(label))
        except ValueError as exc:
            raise BadAttemptLabelError(
                f"job {as_map(job.get('metadata')).get('name')}: {exc}"
            ) from exc
        if number < attempt:
            found.previous.append(job)
        elif condition(job, "Complete"):
            found.succeeded.append(job)
        elif condition(job, "Failed"):
            found.failed.append(job)
        else:
            found.active.append(job)
    return found


def is_ready(job: Raw) -> bool:
    """An active Job is ready when ``succeeded + ready >= min(parallelism, completions)``."""
    spec, status = as_map(job.get("spec")), as_map(job.get("status"))
    wanted = as_int(spec.get("parallelism"), 1)
    completions = spec.get("completions")
    if isinstance(completions, int):
        wanted = min(wanted, completions)
    return as_int(status.get("succeeded")) + as_int(status.get("ready")) >= wanted


def replicated_jobs_status(jobset: Raw, children: Children) -> list[dict[str, Any]]:
    """``status.replicatedJobsStatus`` (spec 2.5), names descending."""
    table = {rj.name: dict.fromkeys(COUNTERS, 0) for rj in replicated_jobs(jobset)}

    def entry(job: Raw) -> dict[str, int] | None:
        return table.get(str(labels_of(job).get(keys.REPLICATED_JOB)))

    for job in children.active:
        counts = entry(job)
        if counts is None:
            continue
        counts["ready"] += is_ready(job)
        counts["active"] += as_int(as_map(job.get("status")).get("active")) > 0
        counts["suspended"] += as_map(job.get("spec")).get("suspend") is True
    for jobs, counter in ((children.succeeded, "succeeded"), (children.failed, "failed")):
        for job in jobs:
            counts = entry(job)
            if counts is not None:
                counts[counter] += 1
    return [{"name": name, **table[name]} for name in sorted(table, reverse=True)]
