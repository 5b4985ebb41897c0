"""``metadata.managedFields``: which manager owns which fields, kept on every write.

Role: parse and render the entries (manager, operation ``Apply``/``Update``, apiVersion,
time, optional subresource, ``fieldsV1``), and record what an ordinary write (POST, PUT,
non-apply PATCH) changes under an ``Update`` manager: the manager gains the fields it set,
and every manager loses the fields that write set or removed (updates never conflict; they
take ownership). ``apply`` records the ``Apply`` side.

Which writes are recorded: those that name a ``fieldManager``, and every write to an object
that already has managed fields (then the manager is the User-Agent's product name, as
kube-apiserver defaults it). Objects never touched by a named manager carry none, which keeps
the controller's and kubelet's own writes cheap.

Invariants: system metadata (name, uid, resourceVersion, ...), ``apiVersion``/``kind`` and,
where a status subresource exists, ``status`` on the main resource (everything else on
``/status``) are never owned. An entry left with no fields is dropped (but for the one an
apply just wrote); an entry's ``time`` changes only when its manager changed something, so a
repeated identical write is still a no-op. A request that sends
``managedFields: [{}]`` clears them; one that sends none (or ``[]``) keeps the stored ones.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from trainop.cluster.apiserver import schemas
from trainop.cluster.apiserver.apply import fieldsets, shapes
from trainop.cluster.apiserver.http import status
from trainop.cluster.apiserver.rest import resources
from trainop.cluster.apiserver.rest.call import ApiState, Call

APPLY = "Apply"
UPDATE = "Update"
_UNOWNED_META = frozenset(
    f"f:{k}"
    for k in (
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "selfLink",
        "managedFields",
    )
)
_UNOWNED_TOP = frozenset({"f:apiVersion", "f:kind"})


@dataclass(frozen=True, slots=True)
class Entry:
    """One managedFields entry."""

    manager: str
    operation: str
    api_version: str
    fields: frozenset[fieldsets.Path]
    time: str = ""
    subresource: str = ""

    @property
    def identity(self) -> tuple[str, str, str, str]:
        """What makes two entries the same manager (Apply entries are not versioned)."""
        version = self.api_version if self.operation == UPDATE else ""
        return (self.manager, self.operation, version, self.subresource)

    def render(self) -> dict[str, Any]:
        """The wire form."""
        out: dict[str, Any] = {
            "manager": self.manager,
            "operation": self.operation,
            "apiVersion": self.api_version,
        }
        if self.time:
            out["time"] = self.time
        out["fieldsType"] = "FieldsV1"
        out["fieldsV1"] = fieldsets.encode(self.fields)
        if self.subresource:
            out["subresource"] = self.subresource
        return out


@functools.cache
def _definitions() -> dict[str, Any]:
    return schemas.load_definitions()


def shape_of(state: ApiState, rt: resources.ResourceType) -> shapes.Shape:
    """The merge shape of ``rt``'s objects: its CRD schema, or the built-in tables."""
    defs = _definitions()
    if rt.custom:
        schema = state.schemas.get((rt.group, rt.version, rt.plural))
        found = schema.schema if schema else None
        return shapes.Shape(schema=found, custom=True, root=True, defs=defs)
    if rt.definition is None or rt.definition not in defs:
        return shapes.Shape(root=True)
    return shapes.Shape(schema=defs[rt.definition], root=True, defs=defs)


def owned(
    paths: Iterable[fieldsets.Path], rt: resources.ResourceType, subresource: str | None
) -> frozenset[fieldsets.Path]:
    """The paths a manager can own through this endpoint."""
    out = set()
    for p in paths:
        if not p or p[0] in _UNOWNED_TOP or p == ("f:metadata",):
            continue
        if p[0] == "f:metadata" and p[1] in _UNOWNED_META:
            continue
        on_status = p[0] == "f:status"
        if subresource == "status" and not on_status:
            continue
        if subresource != "status" and on_status and rt.has_status:
            continue
        out.add(p)
    return frozenset(out)


def entries(obj: dict[str, Any]) -> list[Entry]:
    """The entries stored on ``obj`` (malformed ones are skipped)."""
    raw = (obj.get("metadata") or {}).get("managedFields")
    return parse(raw) if isinstance(raw, list) else []


def parse(raw: list[Any]) -> list[Entry]:
    """Entries from their wire form."""
    out = []
    for item in raw:
        if not isinstance(item, dict) or not isinstance(item.get("manager"), str):
            continue
        if item.get("operation") not in (APPLY, UPDATE):
            continue
        out.append(
            Entry(
                manager=item["manager"],
                operation=item["operation"],
                api_version=str(item.get("apiVersion") or ""),
                fields=frozenset(fieldsets.decode(item.get("fieldsV1"))),
                time=str(item.get("time") or ""),
                subresource=str(item.get("subresource") or ""),
            )
        )
    return out


def save(obj: dict[str, Any], kept: Iterable[Entry], *, applier: Entry | None = None) -> None:
    """Write ``kept`` into ``obj``'s metadata in kube's order, dropping entries left with no
    fields, except ``applier``'s: an apply that owns nothing still applied, and its object
    must not look never-applied to the next apply."""
    ordered = sorted(
        (e for e in kept if e.fields or (applier is not None and e.identity == applier.identity)),
        key=lambda e: (e.operation, e.time, e.manager, e.api_version, e.subresource),
    )
    meta = obj.setdefault("metadata", {})
    if ordered:
        meta["managedFields"] = [e.render() for e in ordered]
    else:
        meta.pop("managedFields", None)


def manager_of(call: Call, *, tracked: bool) -> str | None:
    """The manager a write is recorded under: ``fieldManager``, else (for an object that is
    already tracked) the User-Agent's product name, else None (not recorded)."""
    named = call.query.get("fieldManager")
    if named:
        return named
    if not tracked:
        return None
    agent = call.request.headers.get("User-Agent", "")
    return agent.split("/")[0].strip() or "unknown"


def baseline(old: dict[str, Any], new: dict[str, Any]) -> list[Entry]:
    """The entries an update starts from: the request's, unless it sent none."""
    sent = (new.get("metadata") or {}).get("managedFields")
    if not isinstance(sent, list) or not sent:
        return entries(old)
    if all(item == {} for item in sent):
        return []
    return parse(sent)


def record_update(
    state: ApiState,
    call: Call,
    old: dict[str, Any],
    new: dict[str, Any],
    *,
    now: str,
    label: str = "",
) -> None:
    """Set ``new``'s managedFields after an ordinary write (``old`` is ``{}`` on create).
    ``label`` names the subresource the entry records when it is not the call's (``scale``
    writes the main resource)."""
    base = baseline(old, new)
    manager = manager_of(call, tracked=bool(base))
    if manager is None:
        save(new, base)
        return
    if fieldsets.depth(new) > fieldsets.MAX_DEPTH:
        raise status.bad_request(
            f"the object nests deeper than {fieldsets.MAX_DEPTH} levels of arrays or objects"
        )
    changed, removed = fieldsets.changes(old, new, shape_of(state, call.rt))
    mine = owned(changed, call.rt, call.subresource)
    gone = owned(removed, call.rt, call.subresource) | mine
    me = Entry(
        manager=manager,
        operation=UPDATE,
        api_version=call.rt.api_version,
        fields=frozenset(),
        subresource=label or call.subresource or "",
    )
    kept: list[Entry] = []
    for entry in base:
        if entry.identity == me.identity:
            me = entry
            continue
        kept.append(replace(entry, fields=entry.fields - gone))
    fields = (me.fields - gone) | mine
    if mine or fields != me.fields:
        me = replace(me, fields=fields, time=now)
    save(new, [*kept, me])
