"""Gang scheduling: the PodGroup, pod decoration and admission (spec 8).

The scheduler comes from ``EngineOptions.gang_scheduler_name``: empty disables gang scheduling,
``volcano`` (any case) selects Volcano (``scheduling.volcano.sh/v1beta1``), anything else the
scheduler-plugins coscheduler (``scheduling.x-k8s.io/v1alpha1``) under that scheduler name.
``minResources`` is summed over the first ``minMember`` pods, replica types in the kind's order
(upstream's priority ordering never worked: quirk 7). Only Volcano holds pod creation until its
PodGroup is admitted (has a phase other than Pending).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from trainop.api.kinds import info_of
from trainop.api.types import Job
from trainop.engine import naming, quantities
from trainop.engine.actions import Event, Wire
from trainop.frameworks.base import Replica, containers_of, replicas_of

SCHEDULER_NAME_WARNING = Event(
    "Warning",
    "SetPodTemplateSchedulerName",
    "Another scheduler is specified when gang-scheduling is enabled and it will not be overwritten",
)


@dataclass(frozen=True, slots=True)
class GangScheduler:
    """The selected gang scheduler: its scheduler name and PodGroup flavour."""

    scheduler_name: str

    @property
    def is_volcano(self) -> bool:
        return self.scheduler_name.lower() == "volcano"

    @property
    def api_version(self) -> str:
        return (
            "scheduling.volcano.sh/v1beta1" if self.is_volcano else "scheduling.x-k8s.io/v1alpha1"
        )


def scheduler_for(name: str) -> GangScheduler | None:
    """The gang scheduler for an operator setting; None when gang scheduling is off."""
    return GangScheduler("volcano" if name.lower() == "volcano" else name) if name else None


def _requested(container: Mapping[str, Any]) -> Mapping[str, Any]:
    """A container's requests, or its limits when it sets no requests at all (upstream)."""
    resources = container.get("resources") or {}
    requests = resources.get("requests")
    return (resources.get("limits") if requests is None else requests) or {}


def min_resources(job: Job, min_member: int, *, left_out: tuple[str, ...] = ()) -> dict[str, str]:
    """Summed requests (or limits) of the first ``min_member`` pods' regular containers,
    replica types in the kind's order (quirk 7: upstream's priority order never worked),
    the ``left_out`` types skipped."""
    specs = job.spec.replica_specs
    known = info_of(job).replica_types
    total: dict[str, quantities.Quantity] = {}
    budget = min_member
    ordered = [*(t for t in known if t in specs), *(t for t in specs if t not in known)]
    for rt in (t for t in ordered if t not in left_out):
        count = min(budget, replicas_of(job, rt))
        budget -= count
        if count == 0:
            continue  # no pod of this type counts towards minMember: adds nothing, not zeros
        for container in containers_of(specs[rt].template):
            for key, value in _requested(container).items():
                added = quantities.parse(value) * count
                total[key] = total[key] + added if key in total else added
    return {key: quantities.render(value) for key, value in sorted(total.items())}


def pod_group(
    job: Job,
    gang: GangScheduler,
    observed: Mapping[str, Any] | None,
    *,
    left_out: tuple[str, ...] = (),
) -> Wire:
    """The desired PodGroup (named after the job); an existing Volcano queue is kept. By
    default the gang is every replica but those of the ``left_out`` types (created only in a
    later phase: waiting for them would hold the gang forever)."""
    policy = job.run_policy.scheduling_policy
    min_member = policy.min_available if policy and policy.min_available is not None else None
    gang_types = [rt for rt in job.spec.replica_specs if rt not in left_out]
    default = sum(replicas_of(job, rt) for rt in gang_types)
    member = default if min_member is None else min_member
    resources = dict(policy.min_resources) if policy and policy.min_resources else None
    spec: dict[str, Any] = {
        "minMember": member,
        "minResources": resources or min_resources(job, member, left_out=left_out),
    }
    if gang.is_volcano:
        kept = ((observed or {}).get("spec") or {}).get("queue")
        spec["queue"] = kept or (policy.queue if policy and policy.queue else "default")
        if policy and policy.priority_class:
            spec["priorityClassName"] = policy.priority_class
    elif policy and policy.schedule_timeout_seconds is not None:
        spec["scheduleTimeoutSeconds"] = policy.schedule_timeout_seconds
    annotations = dict(job.metadata.annotations or {})
    meta = naming.owned_metadata(job, job.metadata.name or "", annotations=annotations)
    return {"apiVersion": gang.api_version, "kind": "PodGroup", "metadata": meta, "spec": spec}


def is_admitted(gang: GangScheduler, observed: Mapping[str, Any] | None) -> bool:
    """Whether pods may be created: always for the coscheduler; Volcano once admitted."""
    if not gang.is_volcano:
        return True
    phase = ((observed or {}).get("status") or {}).get("phase")
    return bool(phase) and phase != "Pending"


def decorate(
    job: Job, replica: Replica, pod: Wire, gang: GangScheduler
) -> tuple[Wire, tuple[Event, ...]]:
    """``pod`` (owned by the caller) with the scheduler name and PodGroup membership."""
    events: tuple[Event, ...] = ()
    spec = pod.setdefault("spec", {})
    current = spec.get("schedulerName")
    if not current:
        spec["schedulerName"] = gang.scheduler_name
    elif current != gang.scheduler_name:
        events = (SCHEDULER_NAME_WARNING,)
    meta = pod["metadata"]
    if gang.is_volcano:
        annotations = meta.setdefault("annotations", {})
        annotations["scheduling.k8s.io/group-name"] = job.metadata.name
        annotations["volcano.sh/task-spec"] = replica.type.lower()
    else:
        meta["labels"]["scheduling.x-k8s.io/pod-group"] = job.metadata.name
    return pod, events
