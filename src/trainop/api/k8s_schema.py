"""Official Kubernetes definitions, made structural for embedding in a CRD schema.

The input is the ``$defs`` mapping of a JSON-schema rendering of the Kubernetes OpenAPI
definitions (the one shipped by the ``kubernetes-validate`` package, loaded by the CLI and passed
in: this module does no I/O). The output is what controller-gen would emit for the same Go
type inside a CRD: every node has one ``type``; ``["object", "null"]`` becomes ``object``;
Quantity and IntOrString become ``anyOf: [integer, string]`` with
``x-kubernetes-int-or-string``; ``$ref``s are inlined; an embedded ``ObjectMeta`` keeps only
the five fields a pod template may carry. Keys that the API server rejects or ignores in a CRD
(patch strategies, group-version-kind, unions) are dropped.

Invariants: the input is never mutated; the result shares no objects with it; recursion through
``$ref`` cycles ends in a ``x-kubernetes-preserve-unknown-fields`` object, never a loop.
Neighbour: ``crds`` calls ``resolve`` for every field marked with ``fields.K8S_DEFINITION``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from pydantic import TypeAdapter

from trainop.api import fields

OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
# The Kubernetes release whose official schemas are embedded (the CLI loads that file). 1.31 is
# the release controller-gen v0.16 (upstream's generator for v1.9.0) is built against, so the
# pod template accepts the same fields as upstream's CRDs; newer fields would be pruned by the
# older API servers upstream supports anyway.
KUBERNETES_VERSION = "v1.31.0"
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"

# The ObjectMeta fields controller-gen keeps for an object embedded in a CRD (a pod template).
EMBEDDED_META_FIELDS = ("annotations", "finalizers", "labels", "name", "namespace")

# Keys copied from an official definition node; anything else is dropped.
_KEPT_KEYS = (
    "description",
    "required",
    "enum",
    "format",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
)

# Defaults that Kubernetes declares with ``+default`` markers in Go but that the JSON-schema
# rendering drops. The API server requires every x-kubernetes-list-map-keys field to be required
# or defaulted, so these must come back (controller-gen emits them the same way).
MARKER_DEFAULTS: Mapping[tuple[str, str], object] = {
    ("io.k8s.api.core.v1.ContainerPort", "protocol"): "TCP",
    ("io.k8s.api.core.v1.LocalObjectReference", "name"): "",
}

_QUANTITY_SCHEMA: dict[str, Any] = TypeAdapter(fields.Quantity).json_schema()
_INT_OR_STRING_SCHEMA: dict[str, Any] = {
    "anyOf": [{"type": "integer"}, {"type": "string"}],
    "x-kubernetes-int-or-string": True,
}
_UNKNOWN_OBJECT: dict[str, Any] = {
    "type": "object",
    "x-kubernetes-preserve-unknown-fields": True,
}


def resolve(name: str, *, definitions: Mapping[str, Any]) -> dict[str, Any]:
    """The structural schema of the official definition ``name`` (e.g. a PodTemplateSpec)."""
    if name not in definitions:
        raise KeyError(f"Kubernetes definition {name!r} is not in the definitions given")
    return _definition(name, definitions=definitions, stack=())


def _definition(
    name: str, *, definitions: Mapping[str, Any], stack: tuple[str, ...]
) -> dict[str, Any]:
    if name == QUANTITY:
        return copy.deepcopy(_QUANTITY_SCHEMA)
    if name == INT_OR_STRING:
        return copy.deepcopy(_INT_OR_STRING_SCHEMA)
    if name in stack:
        return copy.deepcopy(_UNKNOWN_OBJECT)
    node = _convert(definitions[name], definitions=definitions, stack=(*stack, name))
    if name == OBJECT_META:
        kept = {k: v for k, v in node.get("properties", {}).items() if k in EMBEDDED_META_FIELDS}
        node = {"type": "object", "properties": kept}
    for (owner, prop), default in MARKER_DEFAULTS.items():
        if owner == name and prop in node.get("properties", {}):
            node["properties"][prop]["default"] = default
    return node


def _convert(
    node: Mapping[str, Any], *, definitions: Mapping[str, Any], stack: tuple[str, ...]
) -> dict[str, Any]:
    if "$ref" in node:
        target = _definition(
            str(node["$ref"]).rsplit("/", 1)[-1], definitions=definitions, stack=stack
        )
        return target | ({"description": node["description"]} if "description" in node else {})
    result: dict[str, Any] = {k: _copy(node[k]) for k in _KEPT_KEYS if k in node}
    kind = _single_type(node.get("type"))
    if kind is None:
        return result | _UNKNOWN_OBJECT
    result["type"] = kind
    if "properties" in node:
        result["properties"] = {
            key: _convert(value, definitions=definitions, stack=stack)
            for key, value in node["properties"].items()
        }
    if "items" in node:
        result["items"] = _convert(node["items"], definitions=definitions, stack=stack)
    extra = node.get("additionalProperties")
    if isinstance(extra, Mapping):
        result["additionalProperties"] = _convert(extra, definitions=definitions, stack=stack)
    return result


def _single_type(value: object) -> str | None:
    """The one non-null type of ``type`` (a string or a list such as ``["object", "null"]``)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        kinds = [v for v in value if v != "null"]
        return str(kinds[0]) if len(kinds) == 1 else None
    return None


def _copy(value: Any) -> Any:
    return copy.deepcopy(value)
