"""Gang scheduling of MPIJob v2beta1 (mpi-v2beta1-spec 2.8): its PodGroup and pod decoration.

One PodGroup ``<job>`` (no labels, owned by the MPIJob) with ``minMember`` =
``schedulingPolicy.minAvailable`` or workers + 1 (the launcher). Volcano
(``scheduling.volcano.sh/v1beta1``): ``queue`` from the policy or the MPIJob's
``scheduling.volcano.sh/queue-name`` annotation, ``priorityClassName`` from the policy, else
the launcher's then the workers' template; pods get ``schedulerName: volcano`` and the
``scheduling.k8s.io/group-name`` annotation. scheduler-plugins
(``scheduling.x-k8s.io/v1alpha1``): ``scheduleTimeoutSeconds`` (policy or 0); pods get the
``scheduling.x-k8s.io/pod-group`` label and that scheduler's name. ``minResources``: the
policy's, else the requests (limits where a container sets none) of the launcher and of as many
workers as ``minMember`` leaves room for; nil when ``minMember`` is 0. The user's
``schedulerName`` is overwritten, as upstream. Departure: upstream orders replica types by
their PriorityClass values read from the cluster; here the launcher always counts first.
Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trainop.api import mpi_v2beta1 as api
from trainop.engine import mpi_v2beta1_objects as objects
from trainop.engine import quantities
from trainop.engine.gang import GangScheduler

Wire = dict[str, Any]
VOLCANO_QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
VOLCANO_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
COSCHEDULING_LABEL = "scheduling.x-k8s.io/pod-group"


def _template_spec(job: api.MPIJobV2Beta1, rtype: str) -> Mapping[str, Any]:
    spec = job.spec.replica_specs.get(rtype)
    return (spec.template.get("spec") or {}) if spec is not None else {}


def _requests(job: api.MPIJobV2Beta1, rtype: str) -> dict[str, quantities.Quantity]:
    total: dict[str, quantities.Quantity] = {}
    for container in _template_spec(job, rtype).get("containers") or []:
        resources = container.get("resources") or {}
        found = resources.get("requests")
        for key, value in ((resources.get("limits") if found is None else found) or {}).items():
            amount = quantities.parse(value)
            total[key] = total[key] + amount if key in total else amount
    return total


def min_resources(job: api.MPIJobV2Beta1, min_member: int) -> dict[str, str] | None:
    policy = job.run_policy.scheduling_policy
    if policy is not None and policy.min_resources:
        return {key: str(value) for key, value in policy.min_resources.items()}
    if min_member == 0:
        return None
    counts = {api.LAUNCHER: 1, api.WORKER: api.workers(job)}
    if sum(counts.values()) > min_member:
        counts[api.WORKER] = max(min_member - 1, 0)
    total: dict[str, quantities.Quantity] = {}
    for rtype, count in counts.items():
        for key, amount in _requests(job, rtype).items():
            added = amount * count
            total[key] = total[key] + added if key in total else added
    return {key: quantities.render(value) for key, value in sorted(total.items())}


def pod_group(job: api.MPIJobV2Beta1, gang: GangScheduler) -> Wire:
    policy = job.run_policy.scheduling_policy
    member = policy.min_available if policy and policy.min_available is not None else None
    min_member = api.workers(job) + 1 if member is None else member
    spec: Wire = {"minMember": min_member}
    resources = min_resources(job, min_member)
    if gang.is_volcano:
        annotations = job.metadata.annotations or {}
        queue = (policy.queue if policy else None) or annotations.get(VOLCANO_QUEUE_ANNOTATION)
        if queue:
            spec["queue"] = queue
        priority = (
            (policy.priority_class if policy else None)
            or _template_spec(job, api.LAUNCHER).get("priorityClassName")
            or _template_spec(job, api.WORKER).get("priorityClassName")
        )
        if priority:
            spec["priorityClassName"] = priority
    else:
        timeout = policy.schedule_timeout_seconds if policy else None
        spec["scheduleTimeoutSeconds"] = timeout or 0
    if resources is not None:
        spec["minResources"] = resources
    metadata = {
        "name": job.metadata.name,
        "namespace": job.metadata.namespace,
        "ownerReferences": [objects.owner_reference(job)],
    }
    return {"apiVersion": gang.api_version, "kind": "PodGroup", "metadata": metadata, "spec": spec}


def decorate(job: api.MPIJobV2Beta1, pod: Wire, gang: GangScheduler) -> Wire:
    """``pod`` or a pod template (owned by the caller), made a member of the job's gang."""
    pod.setdefault("spec", {})["schedulerName"] = gang.scheduler_name
    meta = pod.setdefault("metadata", {})
    if gang.is_volcano:
        meta["annotations"] = {
            **(meta.get("annotations") or {}),
            VOLCANO_GROUP_ANNOTATION: job.metadata.name,
        }
    else:
        meta["labels"] = {**(meta.get("labels") or {}), COSCHEDULING_LABEL: job.metadata.name}
    return pod
