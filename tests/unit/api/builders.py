"""Manifest builders for API tests: the smallest valid job of each kind, then tweak it."""

from __future__ import annotations

import copy
from typing import Any

from trainop.api.kinds import KindInfo, kind_info

# A valid replica layout per kind: replica type -> replicas (None = leave unset).
LAYOUTS: dict[str, dict[str, int | None]] = {
    "TFJob": {"Chief": 1, "PS": 1, "Worker": 2},
    "PyTorchJob": {"Master": 1, "Worker": 2},
    "XGBoostJob": {"Master": 1, "Worker": 2},
    "MPIJob": {"Launcher": 1, "Worker": 2},
    "PaddleJob": {"Master": 1, "Worker": 2},
    "JAXJob": {"Worker": 2},
    "MXJob": {"Scheduler": 1, "Server": 1, "Worker": 1},
    "DGLJob": {"Launcher": 1, "Worker": 2},
}


def container(info: KindInfo, **extra: Any) -> dict[str, Any]:
    return {"name": info.default_container, "image": "python:3.11", "command": ["python3"]} | extra


def replica(info: KindInfo, replicas: int | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"template": {"spec": {"containers": [container(info)]}}}
    if replicas is not None:
        spec["replicas"] = replicas
    return spec


def manifest(kind: str, *, name: str = "job", **spec: Any) -> dict[str, Any]:
    """A valid manifest of ``kind``; ``spec`` keys are added to (or replace) the spec."""
    info = kind_info(kind)
    body: dict[str, Any] = {
        info.replica_specs_field: {rt: replica(info, n) for rt, n in LAYOUTS[kind].items()}
    }
    if kind == "MXJob":
        body["jobMode"] = "MXTrain"
    body |= spec
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": "default"},
        "spec": copy.deepcopy(body),
    }
