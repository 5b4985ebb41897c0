"""Volcano plugin (spec §3.11): a ``scheduling.volcano.sh`` PodGroup for the whole TrainJob.

Active when ``podGroupPolicy.volcano`` is set. Every pod template gets the annotation
``scheduling.k8s.io/group-name: <tj>``; the PodGroup ``<tj>`` has coscheduling's ``minMember`` and
``minResources``, the queue from the JobSet annotation ``scheduling.volcano.sh/queue-name`` when
present, the last pod template's ``priorityClassName`` and the ``networkTopology`` when
configured. Validate: an empty queue annotation; a ``priorityClassName`` that does not exist
(checked only when the caller knows the PriorityClasses; the check stops at the first
system-critical class, as upstream's does).
"""

from __future__ import annotations

from collections.abc import Mapping

from trainop.api.trainer import constants as c
from trainop.engine.trainer.containers import Raw, Wire, as_map, maps
from trainop.engine.trainer.info import RuntimeInfo, pod_spec
from trainop.engine.trainer.plugins import coscheduling
from trainop.engine.trainer.plugins.base import (
    BuildContext,
    Plugin,
    ValidateContext,
    Validation,
    object_meta,
)
from trainop.errors import FieldError

API_VERSION = "scheduling.volcano.sh/v1beta1"
QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
_SYSTEM_CLASSES = ("system-cluster-critical", "system-node-critical")


def policy(info: RuntimeInfo) -> Raw | None:
    value = info.pod_group_policy.get("volcano")
    return value if isinstance(value, Mapping) else None


def enforce(info: RuntimeInfo) -> None:
    if policy(info) is not None:
        info.pod_annotations[c.VOLCANO_GROUP_NAME_ANNOTATION] = info.name


def _priority_classes(info: RuntimeInfo) -> list[str]:
    return [
        str(pod_spec(job)["priorityClassName"])
        for job in maps(info.template.get("replicatedJobs"))
        if pod_spec(job).get("priorityClassName")
    ]


def build(info: RuntimeInfo, context: BuildContext) -> list[Wire]:
    wanted = policy(info)
    if wanted is None or not coscheduling.should_apply(info, context, API_VERSION):
        return []
    spec: Wire = {"minMember": coscheduling.min_member(info)}
    resources = coscheduling.min_resources(info)
    if resources:
        spec["minResources"] = resources
    if QUEUE_ANNOTATION in info.annotations:
        spec["queue"] = info.annotations[QUEUE_ANNOTATION]
    classes = _priority_classes(info)
    if classes:
        spec["priorityClassName"] = classes[-1]
    topology = as_map(as_map(wanted).get("networkTopology"))
    if topology:
        spec["networkTopology"] = dict(topology)
    meta = object_meta(info, info.name)
    return [{"apiVersion": API_VERSION, "kind": "PodGroup", "metadata": meta, "spec": spec}]


def validate(info: RuntimeInfo, context: ValidateContext) -> Validation:
    if policy(info) is None:
        return [], []
    errors = []
    if QUEUE_ANNOTATION in info.annotations and not info.annotations[QUEUE_ANNOTATION]:
        path = f"spec.annotations[{QUEUE_ANNOTATION}]"
        errors.append(FieldError(path, "Invalid", "Volcano queue name must not be empty"))
    if context.priority_classes is not None:
        for name in _priority_classes(info):
            if name in _SYSTEM_CLASSES:
                break
            if name not in context.priority_classes:
                not_found = f'priorityclasses.scheduling.k8s.io "{name}" not found'
                detail = f'PriorityClass "{name}" doesn\'t exist: {not_found}'
                errors.append(FieldError("spec.templateSpec.priorityClassName", "Invalid", detail))
    return errors, []


PLUGIN = Plugin("Volcano", enforce_pod_group_policy=enforce, build=build, validate=validate)
