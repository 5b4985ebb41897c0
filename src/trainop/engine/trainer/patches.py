"""The strategic merge of ``spec.runtimePatches`` onto a runtime's JobSetSpec (spec §3.2 step 2).

Kubernetes' strategic merge patch, restricted to what a JobSetSpec holds: maps merge per key
(a ``None`` value deletes the key), lists named in ``MERGE_KEYS`` merge item by item on their
key (a patched item merges into the item with the same key, new items are appended after the
existing ones), every other list (``tolerations``, ``args``, ``command``, ...) and every scalar
is replaced. ``$patch``/``$retainKeys`` directives are not supported: the runtimePatch schema
has no place for them. Pure; the inputs are not modified.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

# Field name -> merge key, from the JobSet and core/v1 schemas (patchStrategy merge).
MERGE_KEYS = {
    "replicatedJobs": "name",
    "containers": "name",
    "initContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "imagePullSecrets": "name",
    "schedulingGates": "name",
    "ports": "containerPort",
    "dependsOn": "name",
}


def merge(base: Any, patch: Any, field: str = "") -> Any:
    """``base`` with ``patch`` merged in (fresh objects; neither input changes)."""
    if isinstance(base, Mapping) and isinstance(patch, Mapping):
        merged = {k: copy.deepcopy(v) for k, v in base.items()}
        for key, value in patch.items():
            if value is None:
                merged.pop(key, None)
            elif key in merged:
                merged[key] = merge(merged[key], value, str(key))
            else:
                merged[key] = copy.deepcopy(value)
        return merged
    key = MERGE_KEYS.get(field)
    if key is not None and isinstance(base, list) and isinstance(patch, list):
        return _merge_list(base, patch, key)
    return copy.deepcopy(patch)


def _merge_list(base: list[Any], patch: list[Any], key: str) -> list[Any]:
    merged = [copy.deepcopy(item) for item in base]
    for item in patch:
        if not isinstance(item, Mapping):
            continue
        at = next(
            (
                i
                for i, old in enumerate(merged)
                if isinstance(old, Mapping) and old.get(key) == item.get(key)
            ),
            None,
        )
        if at is None:
            merged.append(copy.deepcopy(dict(item)))
        else:
            merged[at] = merge(merged[at], item)
    return merged


def apply_runtime_patches(spec: Mapping[str, Any], patches: list[Any]) -> dict[str, Any]:
    """The JobSetSpec after every runtimePatch's ``trainingRuntimeSpec.template.spec``, in
    list order (later wins); replicatedJobs then keep the runtime's order (patches cannot add
    jobs that pass validation; any such job stays after the runtime's)."""
    merged: dict[str, Any] = copy.deepcopy(dict(spec))
    for patch in patches:
        runtime_spec = patch.get("trainingRuntimeSpec") if isinstance(patch, Mapping) else None
        template = runtime_spec.get("template") if isinstance(runtime_spec, Mapping) else None
        body = template.get("spec") if isinstance(template, Mapping) else None
        if isinstance(body, Mapping):
            merged = merge(merged, body)
    jobs_before = spec.get("replicatedJobs")
    jobs_before = jobs_before if isinstance(jobs_before, list) else []
    order = [_name(j) for j in jobs_before]
    jobs = merged.get("replicatedJobs")
    if isinstance(jobs, list):
        rank = {name: i for i, name in enumerate(order) if isinstance(name, str)}
        jobs.sort(key=lambda j: rank.get(_name(j), len(rank)))
    return merged


def _name(job: object) -> str:
    name = job.get("name") if isinstance(job, Mapping) else None
    return name if isinstance(name, str) else ""
