"""Structural-schema handling of custom resources: prune, drop nulls, default, validate.

kube-apiserver treats a CRD's ``openAPIV3Schema`` as a *structural* schema and, for every
write, in this order: drops fields the schema does not know (unless
``x-kubernetes-preserve-unknown-fields``), drops ``null`` values of fields that are not
``nullable``, applies ``default`` values, then validates. No Python library does the first
three, so they are here, written against the schema subset structural schemas allow. The
validation step converts the OpenAPI v3.0 schema to JSON-schema draft 4 (whose boolean
``exclusiveMinimum`` matches OpenAPI 3.0) and uses ``validation.SchemaValidator``.

Numbers are read as kube-apiserver's JSON decoder reads them: an integer outside int64 becomes
a float, and a float is an ``integer`` only when it is whole and within ±(2^53 - 1). So
``replicas: 2.0`` is stored as ``2`` (``prepare``), and ``activeDeadlineSeconds: 2**63`` is
refused (``errors``) in kube's words: ``... in body must be of type integer: "number"``.

Not enforced: ``x-kubernetes-validations`` (CEL rules), ``format`` values (kube checks them
for strings only, so ``format: int32`` bounds nothing), list-type/map-type uniqueness. Unknown
fields are pruned with a warning, or rejected with 400 under ``fieldValidation=Strict``, as
kube-apiserver does.
"""

from __future__ import annotations

import copy
from typing import Any

from trainop.cluster.apiserver.admission import validation
from trainop.errors import FieldError

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
MAX_JSON_INTEGER = 2**53 - 1  # the largest float kube's schema validation calls an integer
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

    def errors(self, obj: dict[str, Any]) -> list[FieldError]:
        """Every problem of a prepared ``obj``: integers kube reads as floats, then the
        schema's own rules (``validation.SchemaValidator``)."""
        found: list[FieldError] = []
        _number_errors(obj, self.schema, parts=[], found=found)
        return found + self.validator.errors(obj)


def _is_integer_node(schema: dict[str, Any]) -> bool:
    return schema.get("type") == "integer" or bool(schema.get("x-kubernetes-int-or-string"))


def _whole(value: Any, schema: dict[str, Any]) -> Any:
    """A whole-number float where the schema wants an integer, as the integer kube stores."""
    if (
        isinstance(value, float)
        and value.is_integer()
        and abs(value) <= MAX_JSON_INTEGER
        and _is_integer_node(schema)
    ):
        return int(value)
    return value


def _number_errors(
    value: Any, schema: dict[str, Any], *, parts: list[Any], found: list[FieldError]
) -> None:
    if isinstance(value, dict):
        props: dict[str, Any] = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            sub = props.get(key, extra if isinstance(extra, dict) else None)
            if sub is not None:
                _number_errors(item, sub, parts=[*parts, key], found=found)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            _number_errors(item, schema["items"], parts=[*parts, index], found=found)
    elif (
        isinstance(value, int)
        and not isinstance(value, bool)
        and not INT64_MIN <= value <= INT64_MAX
        and _is_integer_node(schema)
    ):
        path = validation.field_path(parts)
        detail = f'Invalid value: "number": {path} in body must be of type integer: "number"'
        found.append(FieldError(path=path, type="Invalid", detail=detail))


def _prune(value: Any, schema: dict[str, Any], *, path: str, pruned: list[str], root: bool) -> Any:
    if isinstance(value, dict):
        _prune_map(value, schema, path=path, pruned=pruned, root=root)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            _prune(item, schema["items"], path=f"{path}[{i}]", pruned=pruned, root=False)
            value[i] = _whole(item, schema["items"])
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
        if sub is None and not keep_unknown and extra is not True:
            pruned.append(child_path)  # pruning comes first: an unknown null is reported too
            del obj[key]
        elif obj[key] is None and not (sub or {}).get("nullable"):
            del obj[key]
        elif sub is not None:
            _prune(obj[key], sub, path=child_path, pruned=pruned, root=False)
            obj[key] = _whole(obj[key], sub)


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
