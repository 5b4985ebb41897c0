"""Field sets: which fields of an object a manager owns, in kube's ``FieldsV1`` vocabulary.

A field set is a set of paths; a path is a tuple of encoded elements exactly as ``FieldsV1``
spells them: ``f:name`` (a field or map key), ``k:{"name":"x"}`` (the item of an
associative list with those key values, keys sorted, compact JSON), ``v:"x"`` (the item of
a set-list). ``encode``/``decode`` turn a set into the nested ``fieldsV1`` document and back
(``.`` marks a node that is itself a member and also has members below it).

How each node merges (granular or atomic map, associative, set or atomic list, declared
field or map entry) is ``shapes.Shape``'s answer.

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
from collections.abc import Iterable
from typing import Any

from trainop.cluster.apiserver.apply import shapes
from trainop.cluster.apiserver.http import bodies

Path = tuple[str, ...]
MAX_DEPTH = bodies.MAX_DEPTH
_MISSING = object()

# ---- members of a value ------------------------------------------------------------------


def members(value: Any, shape: shapes.Shape, path: Path = ()) -> set[Path]:
    """The paths a value makes a member (what an applier of ``value`` owns)."""
    out: set[Path] = set()
    _members(value, shape, path, out, added=False)
    return out


def _members(value: Any, shape: shapes.Shape, path: Path, out: set[Path], *, added: bool) -> None:
    """``added``: the value is new in an update, so its map nodes are members too."""
    if isinstance(value, dict) and not shape.is_atomic_map():
        for key, sub_value in value.items():
            sub, declared = shape.child(key)
            sub_path = (*path, f"f:{key}")
            _members(sub_value, sub, sub_path, out, added=added)
            if _is_node_member(sub_value, sub, declared=declared, added=added):
                out.add(sub_path)
    elif isinstance(value, list):
        keys = shapes.list_kind(shape, value)
        if keys is None:
            out.add(path)
            return
        for item in value:
            item_path = (*path, shapes.element(item, keys))
            _members(item, shape.item(), item_path, out, added=added)
            out.add(item_path)
    else:
        out.add(path)


def _is_node_member(value: Any, shape: shapes.Shape, *, declared: bool, added: bool) -> bool:
    if value is None or value == {} or not declared:
        return True
    return added and isinstance(value, dict) and shape.is_new_map_member(declared)


def changes(
    old: Any, new: Any, shape: shapes.Shape, path: Path = ()
) -> tuple[set[Path], set[Path]]:
    """(changed, removed): the paths an update from ``old`` to ``new`` sets and removes."""
    changed: set[Path] = set()
    removed: set[Path] = set()
    _changes(old, new, shape, path, changed, removed)
    return changed, removed


def _changes(
    old: Any, new: Any, shape: shapes.Shape, path: Path, changed: set[Path], removed: set[Path]
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
        keys = shapes.list_kind(shape, old, new)
        if keys is not None:
            _list_changes(old, new, shape, keys, path, changed, removed)
            return
    if old != new:
        changed.add(path)


def _list_changes(
    old: list[Any],
    new: list[Any],
    shape: shapes.Shape,
    keys: tuple[str, ...],
    path: Path,
    changed: set[Path],
    removed: set[Path],
) -> None:
    before = {shapes.element(x, keys): x for x in old}
    after = {shapes.element(x, keys): x for x in new}
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
        return all(shapes.key_value(item, k) == v for k, v in wanted.items())
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


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=True)


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
