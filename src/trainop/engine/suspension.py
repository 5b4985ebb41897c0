"""Suspend and resume (spec 5.7).

A suspended job has no pods, Services or PodGroup (and, for kinds that ask, no extra objects such
as the elastic HPA); its active counts are zeroed, ``Running`` becomes False and ``Suspended``
True. Resuming sets ``Suspended`` False and restarts the clock (``startTime = now``).
"""

from __future__ import annotations

from trainop.api.types import RUNNING, SUSPENDED
from trainop.engine import conditions, status
from trainop.engine.actions import Delete
from trainop.engine.draft import Draft, delete_pod, delete_pod_group
from trainop.engine.observed import name_of


def suspend(draft: Draft) -> None:
    """Delete the job's children and mark it suspended."""
    for pod in draft.pods:
        delete_pod(draft, pod, with_service=False)
    for service in draft.observed.services:
        draft.actions.append(Delete("v1", "Service", name_of(service)))
    delete_pod_group(draft)
    if draft.framework.deletes_extras_on_suspend:
        for obj in draft.observed.objects:
            draft.actions.append(
                Delete(str(obj.get("apiVersion")), str(obj.get("kind")), name_of(obj))
            )
    draft.update_status(replica_statuses=status.without_active(draft.status, None))
    message = f"{draft.framework.kind} {draft.job.metadata.name} is suspended."
    if conditions.is_true(draft.conditions, RUNNING):
        draft.set(RUNNING, "Suspended", message, status="False")
    draft.set(SUSPENDED, "Suspended", message)


def resume_if_suspended(draft: Draft) -> None:
    """A job no longer suspended: ``Suspended`` False and a fresh start time."""
    if conditions.is_true(draft.conditions, SUSPENDED):
        message = f"{draft.framework.kind} {draft.job.metadata.name} is resumed."
        draft.set(SUSPENDED, "Resumed", message, status="False")
        draft.update_status(start_time=draft.now)
