"""Integer fields of built-in kinds hold what kube's Go types can hold.

kube-apiserver decodes a built-in kind into its Go struct, whose integer fields are ``int32``
or ``int64``: a JSON number there that is not an integer (``1.5``, ``30.0``, ``1e300``) or
does not fit (``9223372036854775808``) cannot be decoded, and the request fails before any
validation, in Go's words: ``json: cannot unmarshal number 1e+300 into Go struct field
PodSpec.spec.terminationGracePeriodSeconds of type int64`` (the innermost struct's type name,
then the JSON field names from the top, list indexes left out). ``first_bad(definition, obj)``
walks ``obj`` against the kind's JSON-schema definition (the one validation uses; integer
fields carry ``format: int32``/``int64``) and returns that text for the first such number, or
None; ``check(call, obj)`` raises it as kube answers it: 400 for a body (create, PUT), 422
``patch: Invalid value`` for a patch, whose result kube decodes after patching. The number is
written as Python's ``repr`` writes it, which is what a body made by a Python client carried;
kube quotes the literal as sent.

Strings and booleans in integer fields are left to the schema (422 ``must be of type
integer``, where kube's decoder answers 400). Custom resources are not decoded into Go types:
their CRD schema judges them. Neighbours: ``rest.writes`` (calls ``check`` on every write
before anything else reads the object), ``builtin_fields`` (the same definitions).
"""

from __future__ import annotations

import functools
import json
from typing import Any

from trainop.cluster.apiserver import schemas
from trainop.cluster.apiserver.http import status
from trainop.cluster.apiserver.rest import patch
from trainop.cluster.apiserver.rest.call import Call

_PREFIX = "#/$defs/"
_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


@functools.cache
def _definitions() -> dict[str, Any]:
    return schemas.load_definitions()


def check(call: Call, obj: dict[str, Any]) -> None:
    """A built-in kind's integer field holding a number its Go type cannot (``1e300`` in an
    ``int64``) fails kube's decoding: 400 ``... cannot be handled as a Pod: json: cannot
    unmarshal ...`` for a body, 422 ``patch: Invalid value`` for a JSON or merge patch, whose
    result kube decodes after patching (strategic merge patches are answered the same here)."""
    rt = call.rt
    if rt.custom or rt.definition is None:
        return
    error = first_bad(rt.definition, obj)
    if error is None:
        return
    if call.request.method == "PATCH" and call.content_type != patch.APPLY:
        shown = json.dumps(json.dumps(obj, separators=(",", ":")))
        raise status.RequestError(
            f' "" is invalid: patch: Invalid value: {shown}: {error}',
            status=422,
            reason="Invalid",
            details={"causes": [_patch_cause(shown, error)]},
        )
    raise status.bad_request(
        f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: {error}'
    )


def _patch_cause(shown: str, error: str) -> dict[str, str]:
    return {
        "reason": "FieldValueInvalid",
        "message": f"Invalid value: {shown}: {error}",
        "field": "patch",
    }


def first_bad(definition: str, obj: dict[str, Any]) -> str | None:
    """Go's decoding error for the first number ``obj`` holds where its kind's Go type has an
    integer it does not fit (see the module docstring); None when every one fits."""
    return _walk(_PREFIX + definition, obj, (), _struct_name(definition))


def _struct_name(ref: str) -> str:
    return ref.rsplit(".", 1)[-1]


def _resolve(node: Any) -> tuple[dict[str, Any], str | None]:
    """The schema a node stands for, and the Go struct it names (None: not a ``$ref``)."""
    struct = None
    for _ in range(32):
        ref = node.get("$ref") if isinstance(node, dict) else None
        if not isinstance(ref, str):
            break
        struct = _struct_name(ref)
        node = _definitions().get(ref[len(_PREFIX) :]) or {}
    return (node if isinstance(node, dict) else {}), struct


def _walk(node: Any, value: Any, fields: tuple[str, ...], struct: str) -> str | None:
    schema, named = _resolve({"$ref": node} if isinstance(node, str) else node)
    struct = named or struct
    if isinstance(value, dict):
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        for key, child in value.items():
            sub = props.get(key) if isinstance(props, dict) else extra
            if isinstance(sub, dict):
                path = (*fields, key) if isinstance(props, dict) else fields
                found = _field(sub, child, path, struct)
                if found:
                    return found
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            found = _field(schema["items"], item, fields, struct)
            if found:
                return found
    return None


def _field(sub: dict[str, Any], value: Any, fields: tuple[str, ...], struct: str) -> str | None:
    if isinstance(value, (dict, list)):
        return _walk(sub, value, fields, struct)
    schema, _ = _resolve(sub)
    kind, types = schema.get("format"), schema.get("type")
    is_integer = types == "integer" or (isinstance(types, list) and "integer" in types)
    if not is_integer or kind not in _RANGES or not _is_number(value):
        return None
    low, high = _RANGES[str(kind)]
    if isinstance(value, int) and low <= value <= high:
        return None
    return (
        f"json: cannot unmarshal number {value!r} into Go struct field "
        f"{struct}.{'.'.join(fields)} of type {kind}"
    )


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
