"""Small TrainJob and runtime mappings for the trainer API tests (plain dicts, as read from
the API); each test changes what it is about."""

from __future__ import annotations

import copy
from typing import Any

API_VERSION = "trainer.kubeflow.org/v1alpha1"
ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"


def trainjob(name: str = "alpha", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"runtimeRef": {"name": "torch-distributed"}, **spec}
    return {
        "apiVersion": API_VERSION,
        "kind": "TrainJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": body,
    }


def job(name: str, ancestor: str | None, container: str, **extra: Any) -> dict[str, Any]:
    metadata = {"labels": {ANCESTOR: ancestor}} if ancestor else {}
    pod = {"spec": {"containers": [{"name": container, "image": "test:runtime"}]}}
    return {"name": name, "template": {"metadata": metadata, "spec": {"template": pod}}, **extra}


def runtime(
    kind: str = "ClusterTrainingRuntime", *, jobs: list[dict[str, Any]] | None = None, **spec: Any
) -> dict[str, Any]:
    replicated = jobs if jobs is not None else [job("node", "trainer", "node")]
    body = {"mlPolicy": {"numNodes": 1, "torch": {}}, **spec}
    body.setdefault("template", {"spec": {"replicatedJobs": replicated}})
    return {
        "apiVersion": API_VERSION,
        "kind": kind,
        "metadata": {"name": "alpha", "labels": {"trainer.kubeflow.org/framework": "torch"}},
        "spec": copy.deepcopy(body),
    }


def patch(manager: str, pod_spec: dict[str, Any], job_name: str = "node") -> dict[str, Any]:
    pod = {"spec": pod_spec}
    replicated = [{"name": job_name, "template": {"spec": {"template": pod}}}]
    return {
        "manager": manager,
        "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": replicated}}},
    }
