"""CustomResourceDefinitions of the Trainer v2 kinds and of the JobSet subset, from the models.

``build_crds(definitions)`` returns, in a fixed order, the CRDs of ``TrainJob``,
``TrainingRuntime``, ``ClusterTrainingRuntime`` (spec section 1.1: scope, the ``status``
subresource of TrainJob only, TrainJob's ``State``/``Age`` columns) and ``JobSet``
(``jobset.x-k8s.io/v1alpha2``, for clusters that have no JobSet of their own, such as the
embedded one). The schema comes from the shared generator (``api.crds.model_schema``: the
pydantic JSON schema made structural, official Kubernetes definitions inlined, limits, defaults,
list types and CEL rules carried from the fields), then ``_tidy`` writes an int32 with a lower
bound as controller-gen does (``format: int32`` plus ``minimum``, no ``maximum``).

The JobSet CRD models only what Trainer uses: its ``spec`` and ``status`` keep unknown fields
(``x-kubernetes-preserve-unknown-fields``) where the subset stops, so an object written by a
newer JobSet client survives. Pure and deterministic, like ``api.crds``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from trainop.api import crds, fields
from trainop.api.trainer import constants as c
from trainop.api.trainer import jobset, models

_AGE = {"jsonPath": ".metadata.creationTimestamp", "name": "Age", "type": "date"}
_STATE = {"jsonPath": ".status.conditions[-1:].type", "name": "State", "type": "string"}
_JOBSET_COLUMNS = (
    {"jsonPath": ".status.terminalState", "name": "TerminalState", "type": "string"},
    {"jsonPath": ".status.restarts", "name": "Restarts", "type": "string"},
    {
        "jsonPath": '.status.conditions[?(@.type=="Completed")].status',
        "name": "Completed",
        "type": "string",
    },
    {"jsonPath": ".spec.suspend", "name": "Suspended", "type": "string"},
    _AGE,
)


@dataclass(frozen=True, slots=True)
class CrdInfo:
    """What a CRD needs besides its model's schema."""

    kind: str
    plural: str
    group: str
    version: str
    model: type[BaseModel]
    namespaced: bool = True
    status: bool = False
    columns: tuple[Mapping[str, str], ...] = ()
    open_fields: tuple[str, ...] = field(default=())

    @property
    def name(self) -> str:
        return f"{self.plural}.{self.group}"


TRAINJOB = CrdInfo(
    c.TRAINJOB,
    "trainjobs",
    c.GROUP,
    c.VERSION,
    models.TrainJob,
    status=True,
    columns=(_STATE, _AGE),
)
TRAINING_RUNTIME = CrdInfo(
    c.TRAINING_RUNTIME, "trainingruntimes", c.GROUP, c.VERSION, models.TrainingRuntime
)
CLUSTER_TRAINING_RUNTIME = CrdInfo(
    c.CLUSTER_TRAINING_RUNTIME,
    "clustertrainingruntimes",
    c.GROUP,
    c.VERSION,
    models.ClusterTrainingRuntime,
    namespaced=False,
)
JOBSET = CrdInfo(
    c.JOBSET,
    c.JOBSET_PLURAL,
    c.JOBSET_GROUP,
    c.JOBSET_VERSION,
    jobset.JobSet,
    status=True,
    columns=_JOBSET_COLUMNS,
    open_fields=("spec", "status"),
)
TRAINER_CRDS = (TRAINJOB, TRAINING_RUNTIME, CLUSTER_TRAINING_RUNTIME)
ALL_CRDS = (*TRAINER_CRDS, JOBSET)


def build_crds(definitions: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The CRDs of the three Trainer kinds, then JobSet's."""
    return [build_crd(info, definitions=definitions) for info in ALL_CRDS]


def build_crd(info: CrdInfo, *, definitions: Mapping[str, Any]) -> dict[str, Any]:
    """One CustomResourceDefinition; ``definitions`` are the official Kubernetes ``$defs``."""
    schema = crds.model_schema(info.model, definitions=definitions)
    _tidy(schema)
    for name in info.open_fields:
        schema["properties"][name]["x-kubernetes-preserve-unknown-fields"] = True
    version: dict[str, Any] = {
        "name": info.version,
        "schema": {"openAPIV3Schema": schema},
        "served": True,
        "storage": True,
    }
    if info.columns:
        version["additionalPrinterColumns"] = [dict(column) for column in info.columns]
    if info.status:
        version["subresources"] = {"status": {}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": info.name},
        "spec": {
            "group": info.group,
            "names": {
                "kind": info.kind,
                "listKind": f"{info.kind}List",
                "plural": info.plural,
                "singular": info.kind.lower(),
            },
            "scope": "Namespaced" if info.namespaced else "Cluster",
            "versions": [version],
        },
    }


def _tidy(node: Any) -> None:
    """int32 fields with a tighter lower bound: ``format: int32``, no int32 ``maximum``."""
    if isinstance(node, list):
        for item in node:
            _tidy(item)
        return
    if not isinstance(node, dict):
        return
    if node.get("type") == "integer" and node.get("maximum") == fields.INT32_MAX:
        del node["maximum"]
        node["format"] = "int32"
    for value in node.values():
        _tidy(value)
