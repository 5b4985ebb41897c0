"""Suspending and resuming child Jobs (spec 2.12; golden case G12), as merge patches, so a Job
changed meanwhile is not lost.

Suspended JobSet: every active current-attempt Job not yet suspended gets ``spec.suspend:
true`` (the Job controller removes its pods); finished Jobs are left alone. Resuming a Job:
its ``status.startTime`` is cleared first (a status patch), then the replicatedJob's *current*
pod template is merged into the Job's (labels, annotations and nodeSelector as maps with the
JobSet's values winning; tolerations and schedulingGates as a union: upstream's order there is
random, ours is the Job's then the new ones) and ``spec.suspend`` becomes false, so template
edits made while suspended (Kueue's way) reach the Jobs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from trainop.cluster.controllers.jobset.spec import Raw, as_map, name_of

SUSPEND_PATCH: dict[str, Any] = {"spec": {"suspend": True}}
CLEAR_START_TIME: dict[str, Any] = {"status": {"startTime": None}}


def to_suspend(active: Sequence[Raw]) -> list[str]:
    """The active Jobs (names) that must be suspended (merge patch ``SUSPEND_PATCH``)."""
    return [name_of(job) for job in active if as_map(job.get("spec")).get("suspend") is not True]


def _union(mine: object, theirs: object) -> list[Any]:
    merged = list(mine) if isinstance(mine, list) else []
    merged += [x for x in (theirs if isinstance(theirs, list) else []) if x not in merged]
    return merged


def resume_patch(job: Raw, replicated_job_template: Raw) -> dict[str, Any]:
    """A merge patch that unsuspends the Job with the replicatedJob's current pod template
    merged in (maps merged, JobSet values winning; lists as a union)."""
    pod = as_map(as_map(job.get("spec")).get("template"))
    meta, pod_spec = as_map(pod.get("metadata")), as_map(pod.get("spec"))
    source = as_map(as_map(replicated_job_template.get("spec")).get("template"))
    source_meta, source_spec = as_map(source.get("metadata")), as_map(source.get("spec"))
    new_meta = {
        key: {**as_map(meta.get(key)), **as_map(source_meta.get(key))}
        for key in ("labels", "annotations")
        if source_meta.get(key)
    }
    new_spec: dict[str, Any] = {}
    if source_spec.get("nodeSelector"):
        new_spec["nodeSelector"] = {
            **as_map(pod_spec.get("nodeSelector")),
            **as_map(source_spec.get("nodeSelector")),
        }
    for key in ("tolerations", "schedulingGates"):
        if source_spec.get(key):
            new_spec[key] = _union(pod_spec.get(key), source_spec.get(key))
    template = {k: v for k, v in (("metadata", new_meta), ("spec", new_spec)) if v}
    patch: dict[str, Any] = {"suspend": False}
    if template:
        patch["template"] = template
    return {"spec": patch}


def needs_start_time_cleared(job: Raw) -> bool:
    return as_map(job.get("status")).get("startTime") is not None
