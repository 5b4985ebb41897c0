"""Unknown fields of built-in kinds, and the decoding rules kube applies to a few of them.

kube-apiserver decodes a built-in kind into its Go type, which drops fields the type does not
have; ``fieldValidation`` decides what the client hears about them: ``Strict`` refuses the
request (400 ``strict decoding error: unknown field "spec.foo"``), ``Warn`` (the default)
answers a ``Warning`` header per field, ``Ignore`` says nothing. ``unknown`` walks an object
against the kind's JSON-schema definition (the one validation uses) and removes, in place,
every field the schema does not name, returning their dotted paths (list items as ``[i]``,
map keys as ``[key]``, as kube writes them). A schema node that names no properties (a
``RawExtension``, ``FieldsV1``) is free-form and not walked.

``merge_string_data`` is the Secret rule: ``stringData`` is write-only; each key is base64
encoded into ``data`` (overriding a key there) and ``stringData`` is dropped.
"""

from __future__ import annotations

import base64
import functools
from typing import Any

from trainop.local import schemas

_PREFIX = "#/$defs/"


@functools.cache
def _definitions() -> dict[str, Any]:
    return schemas.load_definitions()


def unknown(definition: str, obj: dict[str, Any]) -> list[str]:
    """Remove fields ``definition`` does not know from ``obj``; their paths, in order."""
    found: list[str] = []
    _walk({"$ref": _PREFIX + definition}, obj, "", found)
    return found


def _resolve(node: dict[str, Any]) -> dict[str, Any]:
    seen = 0
    while "$ref" in node and seen < 32:
        ref = node["$ref"]
        target = _definitions().get(ref[len(_PREFIX) :]) if isinstance(ref, str) else None
        if not isinstance(target, dict):
            return {}
        node, seen = target, seen + 1
    return node


def _walk(schema: dict[str, Any], value: Any, path: str, found: list[str]) -> None:
    node = _resolve(schema)
    if isinstance(value, dict):
        props = node.get("properties")
        if isinstance(props, dict):
            for key in list(value):
                child = f"{path}.{key}" if path else str(key)
                if key not in props:
                    found.append(child)
                    del value[key]
                else:
                    _walk(props[key], value[key], child, found)
            return
        extra = node.get("additionalProperties")
        if isinstance(extra, dict):
            for key, item in value.items():
                _walk(extra, item, f"{path}[{key}]", found)
    elif isinstance(value, list):
        items = node.get("items")
        if isinstance(items, dict):
            for index, item in enumerate(value):
                _walk(items, item, f"{path}[{index}]", found)


def merge_string_data(obj: dict[str, Any]) -> None:
    """A Secret's ``stringData`` folded into ``data`` (base64), then removed."""
    string_data = obj.pop("stringData", None)
    if not isinstance(string_data, dict) or not string_data:
        return
    data = obj.get("data")
    if not isinstance(data, dict):
        data = obj["data"] = {}
    for key, text in string_data.items():
        raw = text.encode() if isinstance(text, str) else str(text).encode()
        data[key] = base64.b64encode(raw).decode()
