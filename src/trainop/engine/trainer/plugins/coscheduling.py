"""CoScheduling plugin (spec §3.10): a scheduler-plugins ``PodGroup`` for the whole TrainJob.

Active when ``podGroupPolicy.coscheduling`` is set. Every pod template gets the label
``scheduling.x-k8s.io/pod-group: <tj>``; the PodGroup ``<tj>`` asks for ``minMember`` = all pods
of all jobs (initializers included) and ``minResources`` = Σ count x pod requests, with the
runtime's ``scheduleTimeoutSeconds`` (default 60). It is applied only while absent or while the
TrainJob is suspended (§2.4). ``min_member``/``min_resources`` serve Volcano too.
"""

from __future__ import annotations

from collections.abc import Mapping

from trainop.api.trainer import constants as c
from trainop.engine import quantities
from trainop.engine.trainer.containers import Raw, Wire, as_map
from trainop.engine.trainer.info import RuntimeInfo
from trainop.engine.trainer.plugins.base import BuildContext, Plugin, object_meta

API_VERSION = "scheduling.x-k8s.io/v1alpha1"
DEFAULT_TIMEOUT = 60


def policy(info: RuntimeInfo) -> Raw | None:
    value = info.pod_group_policy.get("coscheduling")
    return value if isinstance(value, Mapping) else None


def min_member(info: RuntimeInfo) -> int:
    return sum(p.count for p in info.pod_sets)


def min_resources(info: RuntimeInfo) -> dict[str, str]:
    """Σ count x single-pod requests, per resource, rendered as quantities."""
    total: dict[str, quantities.Quantity] = {}
    for pod_set in info.pod_sets:
        for name, amount in pod_set.single_pod_requests.items():
            scaled = amount * pod_set.count
            total[name] = total[name] + scaled if name in total else scaled
    return {name: quantities.render(q) for name, q in total.items()}


def should_apply(info: RuntimeInfo, context: BuildContext, api_version: str) -> bool:
    """Absent, or the TrainJob is suspended."""
    return context.pod_groups.get(api_version) is None or bool(info.spec.get("suspend"))


def enforce(info: RuntimeInfo) -> None:
    if policy(info) is not None:
        info.pod_labels[c.COSCHEDULING_POD_GROUP_LABEL] = info.name


def build(info: RuntimeInfo, context: BuildContext) -> list[Wire]:
    wanted = policy(info)
    if wanted is None or not should_apply(info, context, API_VERSION):
        return []
    timeout = as_map(wanted).get("scheduleTimeoutSeconds", DEFAULT_TIMEOUT)
    spec: Wire = {"minMember": min_member(info), "scheduleTimeoutSeconds": timeout}
    resources = min_resources(info)
    if resources:
        spec["minResources"] = resources
    meta = object_meta(info, info.name)
    return [{"apiVersion": API_VERSION, "kind": "PodGroup", "metadata": meta, "spec": spec}]


PLUGIN = Plugin("CoScheduling", enforce_pod_group_policy=enforce, build=build)
