"""Checks an object must pass before it is stored: type, namespace, name, schema.

Role: the steps kube-apiserver runs between decoding a body and writing it — the body's
``apiVersion``/``kind`` must be the endpoint's (400), its namespace and name must agree with
the URL (400), custom resources are pruned, defaulted and validated against their CRD
schema and built-in kinds against the Kubernetes JSON schema (422 with field causes), and
unknown fields are rejected under ``fieldValidation=Strict`` (400) or reported in a
``Warning`` header otherwise.
"""

from __future__ import annotations

from typing import Any

from trainop.errors import FieldError

from . import builtin_fields, resources, status, validation
from .call import ApiState, Call


def check_type(rt: resources.ResourceType, obj: dict[str, Any]) -> None:
    """400 unless the body's apiVersion and kind are the endpoint's.

    Built-in kinds may omit both (the endpoint's are assumed, as kube's typed decoder does);
    custom resources are decoded as unstructured objects and must carry them.
    """
    if not rt.custom:
        obj.setdefault("kind", rt.kind)
        obj.setdefault("apiVersion", rt.api_version)
    kind, api_version = obj.get("kind"), obj.get("apiVersion")
    if not kind:
        raise status.bad_request("Object 'Kind' is missing in the request body")
    if not api_version:
        raise status.bad_request("Object 'apiVersion' is missing in the request body")
    if kind != rt.kind or api_version != rt.api_version:
        raise status.bad_request(
            f"the object provided is unrecognized (must be of type {rt.kind}): "
            f"{api_version}, Kind={kind}"
        )


def check_metadata(call: Call, obj: dict[str, Any]) -> dict[str, Any]:
    """400 unless metadata is a map whose namespace/name agree with the URL; returns it."""
    meta = obj.get("metadata")
    if meta is None:
        meta = obj["metadata"] = {}
    if not isinstance(meta, dict):
        raise status.bad_request("metadata must be an object")
    body_ns = meta.get("namespace")
    if call.rt.namespaced and body_ns and call.namespace and body_ns != call.namespace:
        raise status.bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
    if call.name is not None and meta.get("name") not in (None, call.name):
        raise status.bad_request(
            f"the name of the object ({meta.get('name')}) does not match the name on the URL "
            f"({call.name})"
        )
    return meta


def admit(state: ApiState, call: Call, obj: dict[str, Any]) -> list[str]:
    """Prune/default/validate ``obj`` in place; 422 on errors. Returns warnings to send."""
    rt = call.rt
    errors: list[FieldError] = validation.metadata_errors(
        obj, plural=rt.plural, namespaced=rt.namespaced
    )
    warnings: list[str] = []
    if rt.custom:
        schema = state.schemas.get((rt.group, rt.version, rt.plural))
        if schema is not None:
            pruned = schema.prepare(obj)
            warnings = _unknown_fields(call, pruned)
            errors += schema.validator.errors(obj)
    elif rt.definition is not None:
        if rt.kind == "Secret" and not rt.group:
            builtin_fields.merge_string_data(obj)
        warnings = _unknown_fields(call, builtin_fields.unknown(rt.definition, obj))
        errors += validation.builtin_validator(rt.definition).errors(obj)
    if errors:
        name = str(obj.get("metadata", {}).get("name") or "")
        raise status.invalid(rt, name, errors)
    return warnings


def _unknown_fields(call: Call, pruned: list[str]) -> list[str]:
    if not pruned:
        return []
    mode = call.query.get("fieldValidation", "Warn")
    messages = [f'unknown field "{p}"' for p in pruned]
    if mode == "Strict":
        kind, version = call.rt.kind, call.rt.api_version
        raise status.bad_request(
            f'{kind} in version "{version}" cannot be handled as a {kind}: '
            "strict decoding error: " + ", ".join(messages)
        )
    return [] if mode == "Ignore" else messages
