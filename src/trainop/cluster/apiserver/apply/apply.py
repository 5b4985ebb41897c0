"""Server-side apply: ``PATCH`` with ``Content-Type: application/apply-patch+yaml``.

The body (YAML, or JSON, which is YAML) is the manager's whole intent for the object. With
``fieldManager`` (required, 422 otherwise) and optional ``force``:

1. no object yet: create it from the body, the manager owning every field it set;
2. else merge the body into the live object (maps by key, associative lists by their keys,
   set-lists by value, everything else replaced; see ``shapes.Shape``);
3. a field the body sets to a value other than the live one, owned by another manager, is a
   conflict: 409 with kube's ``Apply failed with N conflict(s)`` message and one
   ``FieldManagerConflict`` cause per field, unless ``force=true``, which takes the fields
   from their owners;
4. fields the manager applied last time and omits now are removed, unless another manager
   owns them too;
5. the manager's ``Apply`` entry becomes exactly the fields of this body.

An object with no managedFields that is applied to for the first time is first attributed to
``before-first-apply`` (an ``Update`` entry owning its fields), as kube-apiserver does, so an
apply cannot silently overwrite values it never set. Storage goes through ``writes`` (the
same admission, preconditions, no-op detection, dry run). Not served: apply of ``/scale``
(415), unions, ``x-kubernetes-map-type: granular`` overrides of built-in atomic structs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

from aiohttp import web

from trainop.api import manifest
from trainop.cluster.apiserver.admission import admission
from trainop.cluster.apiserver.apply import fieldsets, managedfields, shapes
from trainop.cluster.apiserver.apply.managedfields import Entry
from trainop.cluster.apiserver.http import bodies, status
from trainop.cluster.apiserver.rest import objects, writes
from trainop.cluster.apiserver.rest.call import ApiState, Call
from trainop.errors import ManifestError

BEFORE_FIRST_APPLY = "before-first-apply"


async def patch(state: ApiState, call: Call) -> web.Response:
    """Server-side apply of the body to the addressed object (created when missing)."""
    writes.check_patch_options(call, apply=True)
    config = decode(call.body)
    admission.check_type(call.rt, config)
    meta = admission.check_metadata(call, config)
    if meta.get("managedFields") is not None:
        raise status.bad_request("metadata.managedFields must be nil")
    manager, now = call.query["fieldManager"], objects.timestamp(state.clock())
    shape = managedfields.shape_of(state, call.rt)
    current = state.store.latest(call.key())
    if current is None:
        if call.subresource:
            raise status.not_found(call.rt, call.name or "")
        meta.setdefault("name", call.name)
        applied = managedfields.owned(fieldsets.members(config, shape), call.rt, None)
        plan = Plan(
            merged=config, me=_entry(manager, call, frozenset()), applied=applied, others=[]
        )
        return await writes.insert(state, call, config, record=_recorder(plan, now=now))
    live = json.loads(current.raw)
    plan = merge(live, config, call=call, shape=shape, manager=manager)
    record = _recorder(plan, now=now)
    return await writes.write(state, call, current, plan.merged, record=record)


def decode(body: bytes) -> dict[str, Any]:
    """The apply body as a map: JSON when it parses as JSON, else one YAML document (safe
    loading, bounded alias expansion, JSON values only); 400 otherwise, and for bodies nested
    deeper than ``bodies.MAX_DEPTH`` arrays or objects. ``null`` map values are dropped: in
    an apply, a null field is a field not set."""
    what = "the apply patch"
    try:
        value = json.loads(body)
    except RecursionError as exc:
        raise _too_deep(what) from exc
    except ValueError:
        value = _yaml(body, what)
    if not isinstance(value, dict):
        raise status.bad_request(f"{what} must be a YAML or JSON object")
    if fieldsets.depth(value) > bodies.MAX_DEPTH:
        raise _too_deep(what)
    bodies.check_unicode(value, what=what)
    cleaned: dict[str, Any] = _without_nulls(value)
    return cleaned


def _yaml(body: bytes, what: str) -> Any:
    try:
        documents = manifest.parse_documents(body.decode("utf-8"), source=what)
    except UnicodeDecodeError as exc:
        raise status.bad_request(f"{what} is not valid UTF-8: {exc.reason}") from exc
    except ManifestError as exc:
        raise status.bad_request(str(exc)) from exc
    if len(documents) != 1:
        raise status.bad_request(f"{what} must be one YAML or JSON object")
    odd = _non_json(documents[0])
    if odd is not None:
        raise status.bad_request(
            f"{what} holds a YAML {odd} value, which JSON cannot carry (quote it)"
        )
    return documents[0]


def _non_json(value: Any) -> str | None:
    """The type name of the first value JSON cannot carry (dates, binary, ...), or None."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if not all(isinstance(k, str) for k in node):
                return "non-string key"
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
        elif node is not None and not isinstance(node, (str, int, float, bool)):
            return type(node).__name__
    return None


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def _too_deep(what: str) -> status.RequestError:
    return status.bad_request(
        f"{what} nests deeper than {bodies.MAX_DEPTH} levels of arrays or objects"
    )


@dataclass(frozen=True, slots=True)
class Plan:
    """The merged object, the manager's entry as stored so far, the fields it now applies
    and the other managers' entries."""

    merged: dict[str, Any]
    me: Entry
    applied: frozenset[fieldsets.Path]
    others: list[Entry]


def merge(
    live: dict[str, Any],
    config: dict[str, Any],
    *,
    call: Call,
    shape: shapes.Shape,
    manager: str,
) -> Plan:
    """Merge ``config`` into ``live`` for ``manager``; 409 on conflicts unless forced."""
    base = managedfields.entries(live) or _before_first_apply(live, call, shape)
    applied = managedfields.owned(fieldsets.members(config, shape), call.rt, call.subresource)
    me = _entry(manager, call, frozenset())
    others = [e for e in base if e.identity != me.identity]
    me = next((e for e in base if e.identity == me.identity), me)
    me = replace(me, api_version=call.rt.api_version)
    merged: dict[str, Any] = _merge_value(live, config, shape)
    taken = _conflicts(live, merged, applied, others)
    if taken and not call.flag("force"):
        raise conflict_error(taken)
    others = [replace(e, fields=e.fields - {p for o, p in taken if o is e}) for e in others]
    _remove_dropped(merged, me.fields - applied, others, applied)
    return Plan(merged=merged, me=me, applied=applied, others=others)


def _entry(manager: str, call: Call, fields: frozenset[fieldsets.Path]) -> Entry:
    return Entry(
        manager=manager,
        operation=managedfields.APPLY,
        api_version=call.rt.api_version,
        fields=fields,
        subresource=call.subresource or "",
    )


def _before_first_apply(live: dict[str, Any], call: Call, shape: shapes.Shape) -> list[Entry]:
    fields = managedfields.owned(fieldsets.members(live, shape), call.rt, None)
    entry = Entry(BEFORE_FIRST_APPLY, managedfields.UPDATE, call.rt.api_version, fields)
    return [entry] if fields else []


def _recorder(plan: Plan, *, now: str) -> writes.Recorder:
    """Record the manager's entry with the applied fields the stored object has (admission
    may prune some); its time moves only when the object or the fields change."""

    def record(old: dict[str, Any], new: dict[str, Any]) -> None:
        present = frozenset(
            p for p in plan.applied if fieldsets.read(new, p) is not fieldsets.MISSING
        )
        me = replace(plan.me, fields=present)
        if present != plan.me.fields or _without_managed(old) != _without_managed(new):
            me = replace(me, time=now)
        managedfields.save(new, [*plan.others, me], applier=me)

    return record


def _without_managed(obj: dict[str, Any]) -> dict[str, Any]:
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "managedFields"}
    return {**obj, "metadata": meta}


def _merge_value(live: Any, config: Any, shape: shapes.Shape) -> Any:
    if isinstance(live, dict) and isinstance(config, dict) and not shape.is_atomic_map():
        out = dict(live)
        for key, value in config.items():
            if value is None:
                out.pop(key, None)
            elif key in out:
                out[key] = _merge_value(out[key], value, shape.child(key)[0])
            else:
                out[key] = value
        return out
    if isinstance(live, list) and isinstance(config, list):
        keys = shapes.list_kind(shape, live, config)
        if keys is not None:
            return _merge_list(live, config, shape, keys)
    return config


def _merge_list(
    live: list[Any], config: list[Any], shape: shapes.Shape, keys: tuple[str, ...]
) -> list[Any]:
    index = {shapes.element(x, keys): i for i, x in enumerate(live)}
    out = list(live)
    for item in config:
        at = index.get(shapes.element(item, keys))
        if at is None:
            out.append(item)
        else:
            out[at] = _merge_value(out[at], item, shape.item())
    return out


def _conflicts(
    live: dict[str, Any],
    merged: dict[str, Any],
    applied: frozenset[fieldsets.Path],
    others: list[Entry],
) -> list[tuple[Entry, fieldsets.Path]]:
    """(owner, path) for each applied leaf whose value changes and that another manager owns."""
    leaves = applied - fieldsets.ancestors(applied)
    out = []
    for entry in others:
        for path in sorted(entry.fields & leaves):
            if fieldsets.read(live, path) != fieldsets.read(merged, path):
                out.append((entry, path))
    return out


def _remove_dropped(
    merged: dict[str, Any],
    dropped: frozenset[fieldsets.Path],
    others: list[Entry],
    applied: frozenset[fieldsets.Path],
) -> None:
    """Remove the fields the manager no longer applies and nobody else owns, and the maps
    that removal leaves empty (unless someone owns them)."""
    kept = set(applied).union(*(e.fields for e in others))
    held = fieldsets.ancestors(kept) | kept
    for path in sorted(dropped - held, key=len):  # a node before its children: it takes them
        if fieldsets.is_item_key(path) or not fieldsets.remove(merged, path):
            continue
        parent = path[:-1]
        while parent and parent not in held and fieldsets.read(merged, parent) in ({}, []):
            fieldsets.remove(merged, parent)
            parent = parent[:-1]


def conflict_error(conflicts: list[tuple[Entry, fieldsets.Path]]) -> status.RequestError:
    """409 Conflict worded as kube-apiserver words apply conflicts."""
    causes = [
        {
            "reason": "FieldManagerConflict",
            "message": f"conflict with {_who(entry)}",
            "field": fieldsets.text(path),
        }
        for entry, path in conflicts
    ]
    if len(conflicts) == 1:
        entry, path = conflicts[0]
        message = (
            f"Apply failed with 1 conflict: conflict with {_who(entry)}: {fieldsets.text(path)}"
        )
    else:
        by_owner: dict[str, list[str]] = {}
        for entry, path in conflicts:
            by_owner.setdefault(_who(entry), []).append(fieldsets.text(path))
        lines = []
        for who in sorted(by_owner):
            lines.append(f"conflicts with {who}:")
            lines.extend(f"- {p}" for p in by_owner[who])
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    return status.RequestError(message, status=409, reason="Conflict", details={"causes": causes})


def _who(entry: Entry) -> str:
    out = json.dumps(entry.manager)
    if entry.subresource:
        out += f" with subresource {json.dumps(entry.subresource)}"
    if entry.operation == managedfields.UPDATE:
        out += f" using {entry.api_version}"
    return out
