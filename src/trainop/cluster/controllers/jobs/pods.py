"""The pods a Job controller creates, from the Job's pod template (pure; spec §3.3).

Every pod: the template's labels (with the selector labels the API server added to the
template, set again here for Jobs that did not pass admission), owned by the Job
(``controller`` and ``blockOwnerDeletion``), with the tracking finalizer that keeps its end
countable. NonIndexed pods are named ``generateName: <job>-``. Indexed pods are named
``<job>-<index>-<5 random>`` (the job part cut so the name fits kube's 63 characters), carry
the index as annotation and label, the hostname ``<job>-<index>``, and ``JOB_COMPLETION_INDEX``
(from the index label, through the downward API) in every container and init container that
does not set it.
Neighbours: ``model`` (keys), ``step`` (asks for the pods of a ``Plan``).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from trainop.cluster.controllers.jobs import model

MAX_GENERATE_NAME = 58  # kube cuts generateName so that the random suffix fits 63


def _generate_name(job: str, index: int) -> str:
    suffix = f"-{index}-"
    if len(job) + len(suffix) > MAX_GENERATE_NAME:
        job = job[: MAX_GENERATE_NAME - len(suffix)]
    return job + suffix


def _with_index_env(container: dict[str, Any]) -> None:
    env = container.get("env")
    if not isinstance(env, list):
        env = container["env"] = []
    if any(isinstance(e, dict) and e.get("name") == model.INDEX_ENV for e in env):
        return
    field_path = f"metadata.labels['{model.INDEX_KEY}']"
    env.append(
        {
            "name": model.INDEX_ENV,
            "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": field_path}},
        }
    )


def pod_for(
    job: Mapping[str, Any], index: int | None, extra: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """A new pod of ``job``; ``index`` is its completion index (None for NonIndexed);
    ``extra``: more annotations (per-index failure counts)."""
    template = copy.deepcopy((job.get("spec") or {}).get("template") or {})
    meta = job["metadata"]
    name, uid = str(meta["name"]), str(meta.get("uid") or "")
    metadata: dict[str, Any] = dict(template.get("metadata") or {})
    for key in ("name", "uid", "resourceVersion", "creationTimestamp", "ownerReferences"):
        metadata.pop(key, None)
    metadata["namespace"] = meta.get("namespace")
    labels = dict(metadata.get("labels") or {})
    for key, value in (
        (model.JOB_NAME_LABEL, name),
        ("job-name", name),
        (model.CONTROLLER_UID_LABEL, uid),
        ("controller-uid", uid),
    ):
        labels.setdefault(key, value)
    spec: dict[str, Any] = dict(template.get("spec") or {})
    if index is None:
        metadata["generateName"] = f"{name}-"
    else:
        metadata["generateName"] = _generate_name(name, index)
        annotations = dict(metadata.get("annotations") or {})
        annotations[model.INDEX_KEY] = labels[model.INDEX_KEY] = str(index)
        annotations.update(extra or {})
        metadata["annotations"] = annotations
        spec["hostname"] = f"{name}-{index}"
        for key in ("initContainers", "containers"):
            for container in spec.get(key) or []:
                if isinstance(container, dict):
                    _with_index_env(container)
    metadata["labels"] = labels
    metadata["finalizers"] = [*(metadata.get("finalizers") or []), model.TRACKING_FINALIZER]
    metadata["ownerReferences"] = [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": name,
            "uid": uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}
