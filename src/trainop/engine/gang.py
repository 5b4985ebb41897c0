"""Gang scheduling: the PodGroup, pod decoration and admission (spec 8).

The scheduler comes from ``EngineOptions.gang_scheduler_name``: empty disables gang scheduling,
``volcano`` (any case) selects Volcano (``scheduling.volcano.sh/v1beta1``), anything else the
scheduler-plugins coscheduler (``scheduling.x-k8s.io/v1alpha1``) under that scheduler name.
``minResources`` is summed over the first ``minMember`` pods, replica types in the kind's order
(upstream's priority ordering never worked: quirk 7). Only Volcano holds pod creation until its
PodGroup is admitted (has a phase other than Pending).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from trainop.api.types import Job
from trainop.engine import naming
from trainop.engine.actions import Event, Wire
from trainop.frameworks.base import Replica, containers_of, total_replicas

SCHEDULER_NAME_WARNING = Event(
    "Warning",
    "SetPodTemplateSchedulerName",
    "Another scheduler is specified when gang-scheduling is enabled and it will not be overwritten",
)
_SUFFIXES = {"m": Decimal("0.001"), "k": Decimal(10**3), "M": Decimal(10**6), "G": Decimal(10**9),
             "T": Decimal(10**12), "Ki": Decimal(2**10), "Mi": Decimal(2**20),
             "Gi": Decimal(2**30), "Ti": Decimal(2**40)}  # fmt: skip
_QUANTITY = re.compile(r"^([0-9.]+)([a-zA-Z]*)$")


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


def _quantity(value: object) -> Decimal:
    match = _QUANTITY.match(str(value))
    if match is None:
        return Decimal(0)
    return Decimal(match.group(1)) * _SUFFIXES.get(match.group(2), Decimal(1))


def _render(value: Decimal) -> str:
    return str(int(value)) if value == value.to_integral_value() else f"{int(value * 1000)}m"


def min_resources(job: Job, min_member: int) -> dict[str, str]:
    """Summed requests (or limits) of the first ``min_member`` pods' regular containers."""
    total: dict[str, Decimal] = {}
    budget = min_member
    for spec in job.spec.replica_specs.values():
        count = min(budget, 1 if spec.replicas is None else spec.replicas)
        budget -= count
        for container in containers_of(spec.template):
            resources = container.get("resources") or {}
            wanted = resources.get("requests") or resources.get("limits") or {}
            for key, value in wanted.items():
                total[key] = total.get(key, Decimal(0)) + _quantity(value) * count
    return {key: _render(value) for key, value in sorted(total.items())}


def pod_group(job: Job, gang: GangScheduler, observed: Mapping[str, Any] | None) -> Wire:
    """The desired PodGroup (named after the job); an existing Volcano queue is kept."""
    policy = job.run_policy.scheduling_policy
    min_member = policy.min_available if policy and policy.min_available is not None else None
    member = total_replicas(job) if min_member is None else min_member
    resources = dict(policy.min_resources) if policy and policy.min_resources else None
    spec: dict[str, Any] = {
        "minMember": member,
        "minResources": resources or min_resources(job, member),
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
