"""Field sets: which fields of an object a manager owns, in kube's ``FieldsV1`` vocabulary.

A field set is a set of paths; a path is a tuple of encoded elements exactly as ``FieldsV1``
spells them: ``f:name`` (a field or map key), ``k:{"name":"x"}`` (the item of an
associative list with those key values, keys sorted, compact JSON), ``v:"x"`` (the item of
a set-list). ``encode``/``decode`` turn a set into the nested ``fieldsV1`` document and back
(``.`` marks a node that is itself a member and also has members below it).

``Shape`` says how a node merges, from a CRD's structural schema (``properties``,
``x-kubernetes-list-type``/``-list-map-keys``, ``x-kubernetes-map-type``) or, for built-in
kinds, from the merge-key table of ``patch`` (lists with a key merge by it, ``finalizers``
is a set, every other list is atomic; maps are granular). Custom lists without a list type
are atomic, as in kube.

Which paths a value contributes (``members``) follows the structured-merge-diff rules: every
scalar, atomic list or map, ``null`` and empty map is a member; an associative or set-list
item is a member with its children; a map entry that is not a declared field (a label, a
``pytorchReplicaSpecs`` key) is a member too. ``changes`` is what an update modifies, the set
an ``Update`` manager takes: modified leaves, and added nodes with everything under them.

Every walk is recursive in the object's depth; bodies are bounded (``MAX_DEPTH``) before they
reach here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from . import bodies, patch

Path = tuple[str, ...]
MAX_DEPTH = bodies.MAX_DEPTH

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


def _key_value(item: dict[str, Any], key: str) -> Any:
    return item.get(key, KEY_DEFAULTS.get(key, _MISSING))


def element(item: Any, keys: tuple[str, ...]) -> str:
    """The path element naming ``item`` in a list of that kind."""
    if keys == _SET:
        return "v:" + _json(item)
    return "k:" + _json({k: _key_value(item, k) for k in sorted(keys)})


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


# ---- members of a value ------------------------------------------------------------------


def members(value: Any, shape: Shape, path: Path = ()) -> set[Path]:
    """The paths a value makes a member (what an applier of ``value`` owns)."""
    out: set[Path] = set()
    _members(value, shape, path, out, added=False)
    return out


def _members(value: Any, shape: Shape, path: Path, out: set[Path], *, added: bool) -> None:
    """``added``: the value is new in an update, so its map nodes are members too."""
    if isinstance(value, dict) and not shape.is_atomic_map():
        for key, sub_value in value.items():
            sub, declared = shape.child(key)
            sub_path = (*path, f"f:{key}")
            _members(sub_value, sub, sub_path, out, added=added)
            if _is_node_member(sub_value, sub, declared=declared, added=added):
                out.add(sub_path)
    elif isinstance(value, list):
        keys = list_kind(shape, value)
        if keys is None:
            out.add(path)
            return
        for item in value:
            item_path = (*path, element(item, keys))
            _members(item, shape.item(), item_path, out, added=added)
            out.add(item_path)
    else:
        out.add(path)


def _is_node_member(value: Any, shape: Shape, *, declared: bool, added: bool) -> bool:
    if value is None or value == {} or not declared:
        return True
    return added and isinstance(value, dict) and shape.is_new_map_member(declared)


def changes(old: Any, new: Any, shape: Shape, path: Path = ()) -> tuple[set[Path], set[Path]]:
    """(changed, removed): the paths an update from ``old`` to ``new`` sets and removes."""
    changed: set[Path] = set()
    removed: set[Path] = set()
    _changes(old, new, shape, path, changed, removed)
    return changed, removed


def _changes(
    old: Any, new: Any, shape: Shape, path: Path, changed: set[Path], removed: set[Path]
) -> None:
    if isinstance(old, dict) and isinstance(new, dict) and not shape.is_atomic_map():
        for key, value in new.items():
            sub, declared = shape.child(key)
            sub_path = (*path, f"f:{key}")
            if key in old:
                _changes(old[key], value, sub, sub_path, changed, removed)
                continue
            _members(value, sub, sub_path, changed, added=True)
            if isinstance(value, dict) and (not value or sub.is_new_map_member(declared)):
                changed.add(sub_path)
        for key in old.keys() - new.keys():
            sub_path = (*path, f"f:{key}")
            removed.add(sub_path)
            _members(old[key], shape.child(key)[0], sub_path, removed, added=True)
        return
    if isinstance(old, list) and isinstance(new, list):
        keys = list_kind(shape, old, new)
        if keys is not None:
            _list_changes(old, new, shape, keys, path, changed, removed)
            return
    if old != new:
        changed.add(path)


def _list_changes(
    old: list[Any],
    new: list[Any],
    shape: Shape,
    keys: tuple[str, ...],
    path: Path,
    changed: set[Path],
    removed: set[Path],
) -> None:
    before = {element(x, keys): x for x in old}
    after = {element(x, keys): x for x in new}
    for name, item in after.items():
        item_path = (*path, name)
        if name in before:
            _changes(before[name], item, shape.item(), item_path, changed, removed)
        else:
            changed.add(item_path)
            _members(item, shape.item(), item_path, changed, added=True)
    for name in before.keys() - after.keys():
        removed.add((*path, name))
        _members(before[name], shape.item(), (*path, name), removed, added=True)


# ---- reading and removing paths ----------------------------------------------------------


def read(obj: Any, path: Path) -> Any:
    """The value at ``path``, or ``MISSING``."""
    cur = obj
    for part in path:
        cur = _step(cur, part)
        if cur is _MISSING:
            break
    return cur


MISSING = _MISSING


def _step(cur: Any, part: str) -> Any:
    kind, text = part[:2], part[2:]
    if kind == "f:":
        return cur.get(text, _MISSING) if isinstance(cur, dict) else _MISSING
    if not isinstance(cur, list):
        return _MISSING
    for item in cur:
        if _matches(item, kind, text):
            return item
    return _MISSING


def _matches(item: Any, kind: str, text: str) -> bool:
    try:
        wanted = json.loads(text)
    except ValueError:
        return False
    if kind == "v:":
        return bool(item == wanted)
    if kind == "k:" and isinstance(wanted, dict) and isinstance(item, dict):
        return all(_key_value(item, k) == v for k, v in wanted.items())
    return False


def remove(obj: Any, path: Path) -> bool:
    """Remove the node at ``path`` from ``obj`` in place; False when it is not there."""
    if not path:
        return False
    parent = read(obj, path[:-1])
    kind, text = path[-1][:2], path[-1][2:]
    if kind == "f:" and isinstance(parent, dict) and text in parent:
        del parent[text]
        return True
    if isinstance(parent, list):
        for i, item in enumerate(parent):
            if _matches(item, kind, text):
                del parent[i]
                return True
    return False


def is_item_key(path: Path) -> bool:
    """Whether ``path`` is a key field of an associative list item (never removed alone)."""
    if len(path) < 2 or not path[-2].startswith("k:") or not path[-1].startswith("f:"):
        return False
    try:
        keys = json.loads(path[-2][2:])
    except ValueError:
        return False
    return isinstance(keys, dict) and path[-1][2:] in keys


def ancestors(paths: Iterable[Path]) -> set[Path]:
    """Every proper prefix of the paths (the nodes that have members below them)."""
    return {p[:i] for p in paths for i in range(len(p))}


# ---- FieldsV1 encoding -------------------------------------------------------------------


def encode(paths: Iterable[Path]) -> dict[str, Any]:
    """The ``fieldsV1`` document of a set of paths, ordered as kube writes it: ``.`` first,
    then fields, list-map keys, set values, indexes."""
    members_ = set(paths)
    root: dict[str, Any] = {}
    for path in members_:
        node = root
        for part in path:
            node = node.setdefault(part, {})
    return _ordered(root, (), members_)


_RANK = {"f:": 0, "k:": 1, "v:": 2, "i:": 3}


def _ordered(node: dict[str, Any], path: Path, members_: set[Path]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if path and node and path in members_:
        out["."] = {}
    for part in sorted(node, key=lambda p: (_RANK.get(p[:2], 4), p)):
        out[part] = _ordered(node[part], (*path, part), members_)
    return out


def decode(document: Any) -> set[Path]:
    """The set of paths a ``fieldsV1`` document holds (malformed parts are ignored)."""
    out: set[Path] = set()
    stack: list[tuple[Path, Any]] = [((), document)]
    while stack:
        path, node = stack.pop()
        if not isinstance(node, dict) or len(path) > MAX_DEPTH:
            continue
        if path and (not node or "." in node):
            out.add(path)
        for part, child in node.items():
            if part != "." and part[:2] in ("f:", "k:", "v:", "i:"):
                stack.append(((*path, part), child))
    return out


def text(path: Path) -> str:
    """A path as kube prints it in conflicts: ``.spec.containers[name="x"].image``."""
    return "".join(_element_text(part) for part in path)


def _element_text(part: str) -> str:
    kind, body = part[:2], part[2:]
    if kind == "f:":
        return f".{body}"
    if kind == "v:":
        return f"[={body}]"
    if kind == "i:":
        return f"[{body}]"
    try:
        keys = json.loads(body)
    except ValueError:
        return f"[{body}]"
    if not isinstance(keys, dict):
        return f"[{body}]"
    return "[" + ",".join(f"{k}={_json(v)}" for k, v in sorted(keys.items())) + "]"


def depth(value: Any) -> int:
    """How many arrays or objects deep a JSON value nests (a scalar is 0), without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict):
            stack.extend((v, level + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, level + 1) for v in node)
        else:
            continue
        deepest = max(deepest, level + 1)
    return deepest


def walk_paths(paths: Iterable[Path], prefix: Path) -> Iterator[Path]:
    """The paths at or below ``prefix``."""
    n = len(prefix)
    return (p for p in paths if p[:n] == prefix)
