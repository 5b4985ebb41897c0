"""CustomResourceDefinitions of the job kinds, generated from the pydantic models.

``build_crd(info, definitions=...)`` returns one ``apiextensions.k8s.io/v1``
CustomResourceDefinition as a plain mapping, shaped as upstream's controller-gen output (spec
sections 3.3 and 12.2): ``<plural>.kubeflow.org``, Namespaced, one version ``v1`` served and
stored, ``State``/``Age`` printer columns, the ``status`` subresource and, for kinds with
``has_scale``, a ``scale`` subresource over the Worker replicas.

The ``openAPIV3Schema`` is the model's JSON schema made *structural*: ``$ref``s inlined,
``X | None`` unions collapsed to ``X``, no ``title``s, int32 bounds written as
``format: int32``, single-value literals as one-element enums, and every field marked with
``fields.K8S_DEFINITION`` replaced by the official Kubernetes definition (``k8s_schema``).
``definitions`` is that official ``$defs`` mapping; the caller loads it (this module is pure).

Invariants: the output is a fresh tree of dicts, lists and scalars (safe to dump as YAML without
aliases) and is the same for the same inputs, so checked-in manifests can be compared byte for
byte with a fresh build (tests/unit/api/test_crds.py).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from trainop.api import fields, k8s_schema
from trainop.api.kinds import KindInfo, OtherVersion
from trainop.api.types import API_GROUP

VERSION = "v1"
QUEUE_IMMUTABLE_MESSAGE = "spec.runPolicy.schedulingPolicy.queue is immutable"

_STATE_COLUMN = {"jsonPath": ".status.conditions[-1:].type", "name": "State", "type": "string"}
_AGE_COLUMN = {"jsonPath": ".metadata.creationTimestamp", "name": "Age", "type": "date"}
_INT32_BOUNDS = {"minimum": -(2**31), "maximum": fields.INT32_MAX}
_DROPPED_KEYS = frozenset({"title", "$defs", "additionalProperties", "const", "allOf"})
_FIELD_EXTRAS = (
    "maxItems",
    "minItems",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-validations",
)


def build_crd(info: KindInfo, *, definitions: Mapping[str, Any]) -> dict[str, Any]:
    """The CustomResourceDefinition of one kind; ``definitions`` are the official ``$defs``."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": info.crd_name},
        "spec": {
            "group": API_GROUP,
            "names": {
                "kind": info.kind,
                "listKind": f"{info.kind}List",
                "plural": info.plural,
                "singular": info.singular,
            },
            "scope": "Namespaced",
            "versions": [
                _version(info, definitions=definitions),
                *(_other_version(v, definitions=definitions) for v in info.other_versions),
            ],
        },
    }


def job_schema(info: KindInfo, *, definitions: Mapping[str, Any]) -> dict[str, Any]:
    """The structural ``openAPIV3Schema`` of one kind."""
    schema = model_schema(info.model, definitions=definitions)
    _add_queue_rule(schema["properties"]["spec"])
    return schema


def model_schema(model: type[BaseModel], *, definitions: Mapping[str, Any]) -> dict[str, Any]:
    """The structural ``openAPIV3Schema`` of a job model (any served version)."""
    raw = model.model_json_schema(by_alias=True)
    local = raw.get("$defs", {})
    schema = _structural(raw, local=local, definitions=definitions)
    properties = schema["properties"]
    for name in ("apiVersion", "kind"):
        properties[name] = {"type": "string", "description": properties[name]["description"]}
    properties["metadata"] = {"type": "object"}
    schema.pop("required", None)
    return schema


def _other_version(version: OtherVersion, *, definitions: Mapping[str, Any]) -> dict[str, Any]:
    """A further served version: its own schema, no printer columns, never the storage."""
    return {
        "name": version.name,
        "schema": {"openAPIV3Schema": model_schema(version.model, definitions=definitions)},
        "served": True,
        "storage": False,
        "subresources": {"status": {}},
    }


def _version(info: KindInfo, *, definitions: Mapping[str, Any]) -> dict[str, Any]:
    columns = [_STATE_COLUMN, _AGE_COLUMN]
    if info.age_column_first:
        columns.reverse()
    subresources: dict[str, Any] = {"status": {}}
    if info.has_scale:
        subresources["scale"] = {
            "labelSelectorPath": ".status.replicaStatuses.Worker.selector",
            "specReplicasPath": f".spec.{info.replica_specs_field}.Worker.replicas",
            "statusReplicasPath": ".status.replicaStatuses.Worker.active",
        }
    return {
        "additionalPrinterColumns": copy.deepcopy(columns),
        "name": VERSION,
        "schema": {"openAPIV3Schema": job_schema(info, definitions=definitions)},
        "served": True,
        "storage": True,
        "subresources": subresources,
    }


def _structural(
    node: Mapping[str, Any], *, local: Mapping[str, Any], definitions: Mapping[str, Any]
) -> dict[str, Any]:
    """One pydantic JSON-schema node, made structural (recursively)."""
    if fields.K8S_DEFINITION in node:
        return _official(node, definitions=definitions)
    node = _unwrap(node, local=local)
    result = {k: copy.deepcopy(v) for k, v in node.items() if k not in _DROPPED_KEYS}
    if "const" in node:
        result["enum"] = [node["const"]]
    if result.get("default", 0) is None:
        del result["default"]
    if all(node.get(k) == v for k, v in _INT32_BOUNDS.items()):
        del result["minimum"], result["maximum"]
        result["format"] = "int32"
    if "properties" in node:
        result["properties"] = {
            key: _structural(value, local=local, definitions=definitions)
            for key, value in node["properties"].items()
        }
    if "items" in node:
        result["items"] = _structural(node["items"], local=local, definitions=definitions)
    extra = node.get("additionalProperties")
    if isinstance(extra, Mapping):
        result["additionalProperties"] = _structural(extra, local=local, definitions=definitions)
    elif extra is True and "properties" not in node:
        result["x-kubernetes-preserve-unknown-fields"] = True
    return result


def _unwrap(node: Mapping[str, Any], *, local: Mapping[str, Any]) -> Mapping[str, Any]:
    """Resolve ``$ref`` and collapse ``X | None``; the outer node's keys win (descriptions)."""
    outer = {k: v for k, v in node.items() if k not in ("$ref", "anyOf", "allOf")}
    if "$ref" in node:
        target = local[str(node["$ref"]).rsplit("/", 1)[-1]]
        return _unwrap({**target, **outer}, local=local)
    branches = node.get("anyOf") or node.get("allOf") or []
    kept = [b for b in branches if b.get("type") != "null"]
    if len(kept) == 1 and (len(branches) > 1 or "allOf" in node):
        inner = _unwrap(kept[0], local=local)
        return {**inner, **outer}
    return node


def _official(node: Mapping[str, Any], *, definitions: Mapping[str, Any]) -> dict[str, Any]:
    """A field typed by an official Kubernetes definition (or a list of them); list limits,
    list types and CEL rules declared on the field itself are kept (the Trainer kinds)."""
    schema = k8s_schema.resolve(str(node[fields.K8S_DEFINITION]), definitions=definitions)
    if node.get("x-trainop-list"):
        schema = {"type": "array", "items": schema}
    for branch in (node, *node.get("anyOf", ())):
        schema.update({k: copy.deepcopy(v) for k, v in branch.items() if k in _FIELD_EXTRAS})
    if "description" in node:
        schema["description"] = node["description"]
    return schema


def _add_queue_rule(spec: dict[str, Any]) -> None:
    """Upstream's CEL rule: a job's scheduling queue cannot change once set."""
    policy = spec["properties"]["runPolicy"]["properties"]["schedulingPolicy"]
    policy["properties"]["queue"]["x-kubernetes-validations"] = [
        {"message": QUEUE_IMMUTABLE_MESSAGE, "rule": "self == oldSelf"}
    ]
