"""Structural-schema handling of custom resources: prune, drop nulls, default, validate.

kube-apiserver treats a CRD's ``openAPIV3Schema`` as a *structural* schema and, for every
write, in this order: drops fields the schema does not know (unless
``x-kubernetes-preserve-unknown-fields``), drops ``null`` values of fields that are not
``nullable``, applies ``default`` values, then validates. No Python library does the first
three, so they are here, written against the schema subset structural schemas allow. The
validation step converts the OpenAPI v3.0 schema to JSON-schema draft 4 (whose boolean
``exclusiveMinimum`` matches OpenAPI 3.0) and uses ``validation.SchemaValidator``.

Not enforced: ``x-kubernetes-validations`` (CEL rules), ``format`` values, list-type/map-type
uniqueness. Unknown fields are pruned with a warning, or rejected with 400 under
``fieldValidation=Strict``, as kube-apiserver does.
"""

from __future__ import annotations

import copy
from typing import Any

from trainop.cluster.apiserver.admission import validation

_ROOT_KEEP = ("apiVersion", "kind", "metadata")
_PASS_KEYS = (
    "type",
    "required",
    "enum",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "uniqueItems",
    "multipleOf",
    "minProperties",
    "maxProperties",
)


class CustomSchema:
    """One CRD version's schema, ready to prepare and validate objects."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema
        converted = to_json_schema(schema, root=True)
        converted["$schema"] = "http://json-schema.org/draft-04/schema#"
        self.validator = validation.SchemaValidator(converted, draft4=True)

    def prepare(self, obj: dict[str, Any]) -> list[str]:
        """Prune, drop nulls and default ``obj`` in place; returns the pruned field paths."""
        pruned: list[str] = []
        _prune(obj, self.schema, path="", pruned=pruned, root=True)
        _default(obj, self.schema)
        return pruned


def _prune(value: Any, schema: dict[str, Any], *, path: str, pruned: list[str], root: bool) -> Any:
    if isinstance(value, dict):
        _prune_map(value, schema, path=path, pruned=pruned, root=root)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            _prune(item, schema["items"], path=f"{path}[{i}]", pruned=pruned, root=False)
    return value


def _prune_map(
    obj: dict[str, Any], schema: dict[str, Any], *, path: str, pruned: list[str], root: bool
) -> None:
    props: dict[str, Any] = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    keep_unknown = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    embedded = root or bool(schema.get("x-kubernetes-embedded-resource"))
    for key in list(obj):
        child_path = f"{path}.{key}" if path else key
        if embedded and key in _ROOT_KEEP:
            continue  # apiVersion, kind and metadata are the server's, never pruned by a schema
        sub = props.get(key, extra if isinstance(extra, dict) else None)
        if obj[key] is None and not (sub or {}).get("nullable"):
            del obj[key]
        elif sub is not None:
            _prune(obj[key], sub, path=child_path, pruned=pruned, root=False)
        elif not keep_unknown and extra is not True:
            pruned.append(child_path)
            del obj[key]


def _default(value: Any, schema: dict[str, Any]) -> None:
    if isinstance(value, dict):
        for key, sub in (schema.get("properties") or {}).items():
            if key not in value and "default" in sub:
                value[key] = copy.deepcopy(sub["default"])
            if key in value:
                _default(value[key], sub)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for key in value:
                if key not in (schema.get("properties") or {}):
                    _default(value[key], extra)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            _default(item, schema["items"])


def to_json_schema(schema: dict[str, Any], *, root: bool = False) -> dict[str, Any]:
    """OpenAPI v3.0 structural schema → JSON-schema draft 4 (nullable, int-or-string)."""
    out: dict[str, Any] = {k: schema[k] for k in _PASS_KEYS if k in schema}
    if schema.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if schema.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
    if isinstance(schema.get("properties"), dict):
        out["properties"] = {k: to_json_schema(v) for k, v in schema["properties"].items()}
    for key in ("allOf", "anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            out[key] = [to_json_schema(v) for v in schema[key]]
    for key in ("items", "additionalProperties", "not"):
        if key in schema:
            out[key] = to_json_schema(schema[key]) if isinstance(schema[key], dict) else schema[key]
    if root or schema.get("x-kubernetes-embedded-resource"):
        props = out.setdefault("properties", {})
        props["metadata"] = {"type": "object"}
    return out
