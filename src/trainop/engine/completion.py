"""The finished step: what happens to a job with ``Succeeded`` or ``Failed`` True (spec 4.3.3).

``cleanPodPolicy`` decides which pods (and their Services) go (a later phase is not started:
``phases``); the PodGroup goes; the completion
time is set on every terminal condition (docs/design/005, quirk 4); a succeeded job's active
counts move to succeeded; the TTL deletes the job or asks for an exact requeue.
"""

from __future__ import annotations

from datetime import timedelta

from trainop.api.types import SUCCEEDED
from trainop.engine import conditions, phases, policies, status
from trainop.engine.actions import DeleteJob
from trainop.engine.draft import Draft, delete_pod, delete_pod_group


def finish(draft: Draft) -> None:
    """Clean up a finished job and apply its TTL."""
    run_policy = draft.job.run_policy
    phases.withdraw_later_phases(draft)
    for pod in policies.cleanup_targets(run_policy.clean_pod_policy, draft.pods):
        delete_pod(draft, pod)
    delete_pod_group(draft)
    if draft.status.completion_time is None:
        draft.update_status(completion_time=draft.now)
    if conditions.is_true(draft.conditions, SUCCEEDED):
        draft.update_status(replica_statuses=status.without_active(draft.status, "succeeded"))
    remaining = policies.ttl_remaining(run_policy, draft.status, draft.now)
    if remaining is not None and remaining <= timedelta(0):
        draft.actions.append(DeleteJob(draft.job.metadata.name or ""))
    else:
        draft.requeue(remaining)
