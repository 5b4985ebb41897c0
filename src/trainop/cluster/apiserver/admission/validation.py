"""Validation of incoming objects: metadata rules and JSON schemas, compiled once per type.

Built-in kinds are validated against the official Kubernetes JSON schema shipped in the
``kubernetes-validate`` package (definitions in ``$defs``, nullable type arrays); custom
resources against the JSON schema that ``crdschema`` derives from their CRD.

A ``SchemaValidator`` has two tiers. ``jsonschema`` walks only the fields an object has
(0.2-0.7 ms for a pod or a job) and names *every* error, as kube-apiserver reports them;
``fastjsonschema`` compiles the whole schema into one function (~40 µs per pod) but compiling
costs 0.04-0.6 s per schema (a job CRD's, with its pod templates, is the dearest). So the
first ``COMPILE_AFTER`` objects of a validator are checked by ``jsonschema`` alone, and only a
validator that keeps being used is compiled: a short ``trainop run`` (one job, two pods, a few
events) never pays a compile, a benchmark creating thousands of pods pays one. Either way an
object is accepted when either library accepts it, and its errors come from ``jsonschema``.
Validators are cached per definition.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from importlib import resources as importlib_resources
from typing import Any

import fastjsonschema
import jsonschema

from trainop.errors import FieldError, json_type

SCHEMA_VERSION = "v1.31.0"
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
LABEL_NAMED = frozenset({"namespaces", "services"})


MAX_NAME_LENGTH = 253  # a DNS-1123 subdomain
MAX_ANNOTATIONS_BYTES = 256 * 1024  # keys and values together, as kube counts them
MAX_DATA_BYTES = 1024 * 1024  # a ConfigMap's or a Secret's data (etcd's value limit)

COMPILE_AFTER = 100  # objects checked by ``jsonschema`` alone before compiling the fast tier


class SchemaValidator:
    """Validate objects against one JSON schema; returns Kubernetes-style field errors."""

    def __init__(self, schema: dict[str, Any], *, draft4: bool = False) -> None:
        cls: Any = jsonschema.Draft4Validator if draft4 else jsonschema.Draft202012Validator
        self._schema = schema
        self._full = cls(schema)
        self._fast: Callable[[Any], Any] | None = None
        self._checked = 0

    @property
    def schema(self) -> dict[str, Any]:
        """The JSON schema objects are checked against."""
        return self._schema

    @property
    def is_compiled(self) -> bool:
        """Whether the fast tier has been compiled (after ``COMPILE_AFTER`` objects)."""
        return self._fast is not None

    def errors(self, obj: dict[str, Any]) -> list[FieldError]:
        """Every schema violation in ``obj`` (empty when valid; see the module docstring)."""
        if self._fast is None and self._checked < COMPILE_AFTER:
            self._checked += 1
            found = [_field_error(e) for e in self._full.iter_errors(obj)]
            if not found:
                return []
            return [] if self._fast_accepts(obj) else found
        if self._fast_accepts(obj):
            return []
        return [_field_error(e) for e in self._full.iter_errors(obj)]

    def _fast_accepts(self, obj: dict[str, Any]) -> bool:
        if self._fast is None:
            self._fast = compile_fast(self._schema)
        try:
            self._fast(obj)
        except fastjsonschema.JsonSchemaException:
            return False
        return True


# fastjsonschema names every list item it descends into, for its error messages, with
# ``".items[{i}]".format(**locals())``: a dict of all the function's locals per item, over
# half the time of a valid pod's check. The same name as an f-string costs nothing extra.
_ITEM_NAME = re.compile(r'"([^"\\{}]*)\{(\w+)\}([^"\\{}]*)"\.format\(\*\*locals\(\)\)')


def compile_fast(schema: dict[str, Any]) -> Callable[[Any], Any]:
    """fastjsonschema's validator of ``schema``, its item names made with f-strings (see
    ``_ITEM_NAME``; a literal with other braces, quotes or escapes is left as generated)."""
    code = fastjsonschema.compile_to_code(schema)
    code = _ITEM_NAME.sub(lambda m: f'f"{m[1]}{{{m[2]}}}{m[3]}"', code)
    scope: dict[str, Any] = {}
    exec(compile(code, "<fastjsonschema>", "exec"), scope)  # what fastjsonschema.compile does
    validate = scope.get("validate")
    if not callable(validate):  # a root scope named otherwise: compile it the usual way
        return fastjsonschema.compile(schema)
    return validate  # type: ignore[no-any-return]


def _field_error(error: jsonschema.ValidationError) -> FieldError:
    path = [*error.absolute_path]
    if error.validator == "required" and isinstance(error.instance, dict):
        required: Any = error.validator_value
        missing = [r for r in required if r not in error.instance]
        return FieldError(
            path=field_path([*path, *missing[:1]]), type="Required", detail="Required value"
        )
    where = field_path(path)
    if error.validator == "enum":
        values: Any = error.validator_value
        supported = ", ".join(_short(v) for v in values)
        detail = f"Unsupported value: {_short(error.instance)}: supported values: {supported}"
        return FieldError(path=where, type="NotSupported", detail=detail)
    if error.validator == "type":
        actual = json_type(error.instance)
        wanted = _wanted_type(error.validator_value)
        detail = f'Invalid value: "{actual}": {where} in body must be of type {wanted}: "{actual}"'
        return FieldError(path=where, type="Invalid", detail=detail)
    rule = _KUBE_RULES.get(str(error.validator))
    said = f"{where} in body {rule.format(error.validator_value)}" if rule else error.message
    return FieldError(
        path=where, type="Invalid", detail=f"Invalid value: {_short(error.instance)}: {said}"
    )


# kube-openapi's words for the bounds a schema sets (``spec.x in body should be ...``).
_KUBE_RULES = {
    "minimum": "should be greater than or equal to {}",
    "maximum": "should be less than or equal to {}",
    "pattern": "should match '{}'",
    "minLength": "should be at least {} chars long",
    "maxLength": "should be at most {} chars long",
}


def _wanted_type(types: Any) -> str:
    wanted = [t for t in types if t != "null"] if isinstance(types, list) else [types]
    return str(wanted[0]) if wanted else "null"


def _short(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) < 60 else text[:57] + "..."


def field_path(parts: list[Any]) -> str:
    """Kubernetes field notation: ``spec.containers[0].name``."""
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += f".{p}" if out else str(p)
    return out or "<root>"


@functools.cache
def _definitions() -> dict[str, Any]:
    root = importlib_resources.files("kubernetes_validate") / "kubernetes-json-schema"
    text = (root / f"{SCHEMA_VERSION}-local" / "_definitions.json").read_text()
    defs: dict[str, Any] = json.loads(text)["$defs"]
    return defs


def definitions() -> dict[str, Any]:
    """The official Kubernetes ``$defs`` the built-in validators check against (cached)."""
    return _definitions()


@functools.cache
def builtin_validator(definition: str) -> SchemaValidator:
    """The cached validator of a built-in kind's definition (``io.k8s.api.core.v1.Pod``)."""
    schema = {"$ref": f"#/$defs/{definition}", "$defs": _definitions()}
    return SchemaValidator(schema)


def metadata_errors(obj: dict[str, Any], *, plural: str, namespaced: bool) -> list[FieldError]:
    """Rules on ``metadata`` that kube-apiserver enforces for every kind."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return [FieldError(path="metadata", type="Required", detail="Required value")]
    errors = _name_errors(meta.get("name"), plural=plural)
    errors += _label_errors(meta.get("labels"))
    errors += _annotation_errors(meta.get("annotations"))
    if not namespaced and meta.get("namespace"):
        errors.append(
            FieldError(
                path="metadata.namespace", type="Forbidden", detail="not allowed on this type"
            )
        )
    return errors


def _name_errors(name: Any, *, plural: str) -> list[FieldError]:
    if not name:
        return [
            FieldError(
                path="metadata.name", type="Required", detail="name or generateName is required"
            )
        ]
    if not isinstance(name, str):
        return [FieldError(path="metadata.name", type="Invalid", detail="must be a string")]
    if plural in LABEL_NAMED:
        if len(name) > 63 or not _LABEL.match(name):
            return [
                FieldError(
                    path="metadata.name",
                    type="Invalid",
                    detail=f"Invalid value: {name!r}: a lowercase RFC 1123 label "
                    "must consist of lower case alphanumeric characters or '-'",
                )
            ]
        return []
    if len(name) > MAX_NAME_LENGTH:
        return [
            FieldError(
                path="metadata.name",
                type="Invalid",
                detail=f"Invalid value: {_short(name)}: must be no more than "
                f"{MAX_NAME_LENGTH} characters",
            )
        ]
    if not _SUBDOMAIN.match(name):
        return [
            FieldError(
                path="metadata.name",
                type="Invalid",
                detail=f"Invalid value: {name!r}: a lowercase RFC 1123 subdomain "
                "must consist of lower case alphanumeric characters, '-' or '.'",
            )
        ]
    return []


def _label_errors(labels: Any) -> list[FieldError]:
    if labels is None:
        return []
    if not isinstance(labels, dict):
        return [FieldError(path="metadata.labels", type="Invalid", detail="must be a map")]
    errors = []
    for k, v in labels.items():
        name = k.rsplit("/", 1)[-1]
        if len(name) > 63 or not _QUALIFIED_NAME.match(name):
            errors.append(
                FieldError(
                    path="metadata.labels",
                    type="Invalid",
                    detail=f"Invalid value: {k!r}: name part must be valid",
                )
            )
        if not isinstance(v, str) or len(v) > 63 or not _LABEL_VALUE.match(v):
            errors.append(
                FieldError(
                    path="metadata.labels",
                    type="Invalid",
                    detail=f"Invalid value: {v!r}: a valid label must be an "
                    "empty string or consist of alphanumeric characters",
                )
            )
    return errors


def _annotation_errors(annotations: Any) -> list[FieldError]:
    if not isinstance(annotations, dict):
        return []  # a wrong type is the schema's to report
    size = sum(len(str(k)) + len(v) for k, v in annotations.items() if isinstance(v, str))
    if size <= MAX_ANNOTATIONS_BYTES:
        return []
    return [_too_long("metadata.annotations", MAX_ANNOTATIONS_BYTES)]


def data_size_errors(obj: dict[str, Any], *, secret: bool) -> list[FieldError]:
    """kube's limit on the total size of a ConfigMap's or Secret's data (1 MiB).

    A ConfigMap counts ``data`` and ``binaryData`` (base64 on the wire, counted decoded); a
    Secret ``data`` (base64, counted decoded) and ``stringData``.
    """
    size = 0
    fields = ("data", "stringData") if secret else ("data", "binaryData")
    for name in fields:
        data = obj.get(name)
        if not isinstance(data, dict):
            continue
        encoded = name == "binaryData" or (secret and name == "data")
        for value in data.values():
            if isinstance(value, str):
                size += len(value) * 3 // 4 if encoded else len(value.encode("utf-8", "replace"))
    if size <= MAX_DATA_BYTES:
        return []
    return [_too_long("data", MAX_DATA_BYTES)]


def _too_long(path: str, limit: int) -> FieldError:
    return FieldError(path=path, type="TooLong", detail=f"must have at most {limit} bytes")
