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

from trainop.cluster.apiserver import schemas

_PREFIX = "#/$defs/"


@functools.cache
def _definitions() -> dict[str, Any]:
    return schemas.load_definitions()


def unknown(definition: str, obj: dict[str, Any]) -> list[str]:
    """Remove fields ``definition`` does not know from ``obj``; their paths, in order."""
    root = _compiled(_PREFIX + definition)
    if _clean(root, obj):  # the usual object: no field unknown, no paths to build
        return []
    found: list[str] = []
    _walk(root, obj, "", found)
    return found


class _Node:
    """One schema node, reduced to what the walk needs; children are compiled on first use."""

    __slots__ = ("extra", "items", "props")

    def __init__(self, schema: dict[str, Any]) -> None:
        props = schema.get("properties")
        self.props: dict[str, Any] | None = props if isinstance(props, dict) else None
        extra, items = schema.get("additionalProperties"), schema.get("items")
        self.extra: dict[str, Any] | None = extra if isinstance(extra, dict) else None
        self.items: dict[str, Any] | None = items if isinstance(items, dict) else None


_NODES: dict[int, _Node] = {}


def _compiled(ref_or_schema: str | dict[str, Any]) -> _Node:
    schema = {"$ref": ref_or_schema} if isinstance(ref_or_schema, str) else ref_or_schema
    node = _NODES.get(id(schema)) if not isinstance(ref_or_schema, str) else None
    if node is None:
        node = _Node(_resolve(schema))
        if not isinstance(ref_or_schema, str):  # schema dicts live as long as the definitions
            _NODES[id(schema)] = node
    return node


def _resolve(node: dict[str, Any]) -> dict[str, Any]:
    seen = 0
    while "$ref" in node and seen < 32:
        ref = node["$ref"]
        target = _definitions().get(ref[len(_PREFIX) :]) if isinstance(ref, str) else None
        if not isinstance(target, dict):
            return {}
        node, seen = target, seen + 1
    return node


def _clean(node: _Node, value: Any) -> bool:
    """Whether ``value`` holds no field ``node`` does not know: ``_walk``'s question without
    its paths, which cost more than the walk itself when there is nothing to report."""
    if isinstance(value, dict):
        props = node.props
        if props is not None:
            for key, item in value.items():
                sub = props.get(key)
                if sub is None:
                    return False
                if isinstance(item, (dict, list)) and not _clean(_compiled(sub), item):
                    return False
        elif node.extra is not None:
            extra = _compiled(node.extra)
            for item in value.values():
                if isinstance(item, (dict, list)) and not _clean(extra, item):
                    return False
    elif isinstance(value, list) and node.items is not None:
        items = _compiled(node.items)
        for item in value:
            if isinstance(item, (dict, list)) and not _clean(items, item):
                return False
    return True


def _walk(node: _Node, value: Any, path: str, found: list[str]) -> None:
    if isinstance(value, dict):
        props = node.props
        if props is not None:
            for key in list(value):
                child = f"{path}.{key}" if path else str(key)
                sub = props.get(key)
                if sub is None:
                    found.append(child)
                    del value[key]
                elif isinstance(value[key], (dict, list)):
                    _walk(_compiled(sub), value[key], child, found)
            return
        if node.extra is not None:
            extra = _compiled(node.extra)
            for key, item in value.items():
                if isinstance(item, (dict, list)):
                    _walk(extra, item, f"{path}[{key}]", found)
    elif isinstance(value, list) and node.items is not None:
        items = _compiled(node.items)
        for index, item in enumerate(value):
            if isinstance(item, (dict, list)):
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
