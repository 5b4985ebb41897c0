"""A replica run as a ``batch/v1`` Job (MPIJob v2beta1's launcher), and what the Job reports.

``batch_job`` wraps a pod template: the training job's runPolicy limits (``backoffLimit``,
``activeDeadlineSeconds``, ``ttlSecondsAfterFinished``) become the Job's, a pod is replaced
only once it Failed (``podReplacementPolicy``), and the Job is suspended with the training job.
``condition`` and ``is_finished`` read its status back; ``suspension_spec`` is the patch that
suspends or resumes it. Retries, deadline and TTL are then the Job controller's.

Pure. Neighbours: ``mpi_v2beta1_objects`` renders the launcher with it, ``mpi_v2beta1`` plans.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trainop.api.types import RunPolicy
from trainop.engine.actions import Wire


def batch_job(metadata: Wire, template: Wire, policy: RunPolicy, *, suspended: bool) -> Wire:
    """The Job running ``template`` under ``policy``'s limits."""
    spec: Wire = {"template": template, "podReplacementPolicy": "Failed"}
    for key, value in (
        ("ttlSecondsAfterFinished", policy.ttl_seconds_after_finished),
        ("activeDeadlineSeconds", policy.active_deadline_seconds),
        ("backoffLimit", policy.backoff_limit),
    ):
        if value is not None:
            spec[key] = value
    if suspended:
        spec["suspend"] = True
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata, "spec": spec}


def condition(job: Mapping[str, Any] | None, ctype: str) -> dict[str, Any] | None:
    """The Job's condition ``ctype`` when it is ``True``."""
    for found in ((job or {}).get("status") or {}).get("conditions") or []:
        if found.get("type") == ctype and found.get("status") == "True":
            return dict(found)
    return None


def is_finished(job: Mapping[str, Any] | None) -> bool:
    """Whether the Job is ``Complete`` or ``Failed``."""
    return condition(job, "Complete") is not None or condition(job, "Failed") is not None


def suspension_spec(job: Wire, suspended: bool) -> Wire:
    """The spec patch that suspends or resumes ``job`` (a freshly rendered body): on resume
    the template's metadata and scheduling directives go along, as upstream sends them."""
    spec: Wire = {"suspend": suspended}
    if not suspended:
        template = job["spec"]["template"]
        directives = {
            key: template["spec"].get(key)
            for key in ("nodeSelector", "tolerations", "schedulingGates")
            if template["spec"].get(key) is not None
        }
        spec["template"] = {"metadata": template["metadata"], "spec": directives}
    return spec
