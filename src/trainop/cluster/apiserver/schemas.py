"""The official Kubernetes schemas trainop builds on, read from the kubernetes-validate package.

``load_definitions`` returns the OpenAPI ``$defs`` of ``api.k8s_schema.KUBERNETES_VERSION``;
``crds`` builds the job kinds' CRDs from them (what ``trainop manifests generate`` writes and what a
local session installs). Reading package data is I/O, so it lives here and not in ``api``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import kubernetes_validate

from trainop.api import k8s_schema
from trainop.api.crds import build_crd
from trainop.api.kinds import KINDS
from trainop.errors import TrainopError


def load_definitions() -> dict[str, Any]:
    """The official Kubernetes ``$defs`` of ``KUBERNETES_VERSION``, from kubernetes-validate."""
    package = Path(kubernetes_validate.__file__).parent
    version = k8s_schema.KUBERNETES_VERSION
    path = package / "kubernetes-json-schema" / f"{version}-local" / "_definitions.json"
    try:
        definitions: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))["$defs"]
    except (OSError, ValueError, KeyError) as exc:
        raise TrainopError(f"cannot load Kubernetes schemas from {path}: {exc}") from exc
    return definitions


def crds(definitions: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The CRD of every job kind."""
    loaded = definitions if definitions is not None else load_definitions()
    return [build_crd(info, definitions=loaded) for info in KINDS]
