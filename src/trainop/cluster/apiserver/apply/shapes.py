"""How each node of an object merges under server-side apply: its ``Shape``.

A shape answers, for one node: is a map granular (each key merged and owned on its own) or
atomic (``x-kubernetes-map-type: atomic``: replaced and owned whole); is a map entry a
declared field or an entry of a map-typed field (a label, a ``pytorchReplicaSpecs`` key); is a
list associative (``x-kubernetes-list-type: map`` with ``x-kubernetes-list-map-keys``), a set
(``set``) or atomic. The answers come from a schema node: a CRD's structural schema, or the
published Kubernetes definition of a built-in kind (``$ref`` resolved through ``defs``), where
a list without a list type but with ``x-kubernetes-patch-strategy: merge`` is associative by
its ``x-kubernetes-patch-merge-key``, as kube reads it. ``metadata`` is always ObjectMeta.
Without a schema (a kind with no definition, fields a CRD preserves unknown) built-in tables
decide: ``patch.MERGE_KEYS`` lists merge by key, ``finalizers`` is a set, other lists are
atomic; custom lists without a list type are atomic, as in kube.

``element`` names a list item the way ``FieldsV1`` does (``k:{"name":"x"}``, ``v:"x"``); a
key field an item omits takes kube's default where one exists (``KEY_DEFAULTS``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from trainop.cluster.apiserver.rest import patch

_SET_LISTS = frozenset({"finalizers"})
# Built-in map-typed fields: a newly added one is itself a member (kube's typed objects have
# no such map until it is set), unlike a struct field, which always exists in a typed object.
_BUILTIN_MAPS = frozenset(
    {
        "labels",
        "annotations",
        "data",
        "binaryData",
        "stringData",
        "nodeSelector",
        "matchLabels",
        "limits",
        "requests",
    }
)
_SET = ("",)  # list kind marker: a set of scalars
_MISSING = object()
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
# Key fields kube defaults when an item omits them (``ContainerPort.protocol``, ``+default``
# markers the published schemas drop), so ``{containerPort: 80}`` is the item
# ``k:{"containerPort":80,"protocol":"TCP"}`` as in kube.
KEY_DEFAULTS: dict[str, Any] = {"protocol": "TCP"}


@dataclass(frozen=True, slots=True)
class Shape:
    """How one node of an object merges: a schema node (a CRD's, or a built-in kind's
    definition, whose ``$ref`` resolve through ``defs``), or, without one, built-in tables."""

    schema: dict[str, Any] | None = None  # None: no schema (unknown fields, or tables)
    field: str = ""  # the field name this node is the value of (built-in tables key on it)
    custom: bool = False  # a custom resource's own schema: unstructured, lists atomic
    root: bool = False
    defs: Mapping[str, Any] | None = None

    def _sub(self, node: Any, key: str) -> Shape:
        return Shape(
            schema=resolve(node, self.defs),
            field=key,
            custom=self.custom,
            defs=self.defs,
        )

    def child(self, key: str) -> tuple[Shape, bool]:
        """The shape of map entry ``key`` and whether it is a declared field."""
        if self.schema is None:
            return Shape(field=key, custom=self.custom), self.field not in _BUILTIN_MAPS
        if key == "metadata" and (self.root or self.schema.get("x-kubernetes-embedded-resource")):
            meta = self.defs.get(OBJECT_META) if self.defs is not None else None
            return Shape(schema=meta, field=key, defs=self.defs), True  # always ObjectMeta
        props = self.schema.get("properties") or {}
        if key in props:
            return self._sub(props[key], key), True
        return self._sub(self.schema.get("additionalProperties"), key), False

    def item(self) -> Shape:
        """The shape of a list's items."""
        if self.schema is None:
            return Shape(field=self.field, custom=self.custom)
        return self._sub(self.schema.get("items"), self.field)

    def is_atomic_map(self) -> bool:
        """Whether a map here is replaced whole (``x-kubernetes-map-type: atomic``)."""
        return self.schema is not None and self.schema.get("x-kubernetes-map-type") == "atomic"

    def is_new_map_member(self, declared: bool) -> bool:
        """Whether this map node, when an update adds it, is itself a member of the changes
        (custom objects are unstructured in kube; typed structs always exist, maps do not)."""
        if self.custom or not declared:
            return True
        if self.schema is not None:
            return "additionalProperties" in self.schema and not self.schema.get("properties")
        return self.field in _BUILTIN_MAPS

    def list_keys(self, *lists: list[Any]) -> tuple[str, ...] | None:
        """The key fields of an associative list, ``_SET`` for a set, None when atomic."""
        items = [x for lst in lists for x in lst]
        if self.schema is not None:
            return _schema_list_keys(self.schema, items, custom=self.custom)
        if self.custom:
            return None
        if self.field in _SET_LISTS:
            return _SET if all(_is_scalar(x) for x in items) else None
        for candidate in patch.MERGE_KEYS.get(self.field, ()):
            if _keyed(items, (candidate,)):
                return (candidate,)
        return None


def resolve(node: Any, defs: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A schema node with its ``$ref`` followed (definitions are ``#/$defs/NAME``)."""
    for _ in range(16):
        if not isinstance(node, dict) or "$ref" not in node or defs is None:
            break
        node = defs.get(str(node["$ref"]).rsplit("/", 1)[-1])
    return node if isinstance(node, dict) and "$ref" not in node else None


def _schema_list_keys(
    schema: dict[str, Any], items: list[Any], *, custom: bool
) -> tuple[str, ...] | None:
    kind = schema.get("x-kubernetes-list-type")
    if kind is None and not custom and "merge" in str(schema.get("x-kubernetes-patch-strategy")):
        # Built-in lists older than list-type markers: kube merges them by patchMergeKey.
        key = schema.get("x-kubernetes-patch-merge-key")
        kind = "map" if key else "set"
        keys: tuple[str, ...] = (str(key),) if key else ()
    else:
        keys = tuple(schema.get("x-kubernetes-list-map-keys") or ())
    if kind == "set":
        return _SET if all(_is_scalar(x) for x in items) else None
    if kind != "map" or not keys:
        return None
    return keys if _keyed(items, keys) else None


def _is_scalar(value: Any) -> bool:
    return not isinstance(value, (dict, list))


def _keyed(items: list[Any], keys: tuple[str, ...]) -> bool:
    """Every item is a map with every key (or a defaulted key field)."""
    return all(
        isinstance(x, dict) and all(k in x or k in KEY_DEFAULTS for k in keys) for x in items
    )


def key_value(item: dict[str, Any], key: str) -> Any:
    return item.get(key, KEY_DEFAULTS.get(key, _MISSING))


def element(item: Any, keys: tuple[str, ...]) -> str:
    """The path element naming ``item`` in a list of that kind."""
    if keys == _SET:
        return "v:" + _json(item)
    return "k:" + _json({k: key_value(item, k) for k in sorted(keys)})


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=True)


def _unique(items: list[Any], keys: tuple[str, ...]) -> bool:
    names = [element(x, keys) for x in items]
    return len(names) == len(set(names))


def list_kind(shape: Shape, *lists: list[Any]) -> tuple[str, ...] | None:
    """``shape.list_keys`` for these lists, atomic when any list repeats an element."""
    keys = shape.list_keys(*lists)
    if keys is None or not all(_unique(lst, keys) for lst in lists):
        return None
    return keys
