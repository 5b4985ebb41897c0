"""GET of one object and LIST of a collection, served from the store's committed view.

Lists honour label and field selectors and ``limit``/``continue`` paging. A continue token
names a snapshot of the matching keys taken by the first page (stored objects are immutable,
so a snapshot is a list of references), which gives every page the first page's
resourceVersion, as etcd-backed paging does; a token whose snapshot has been evicted gets
410 Expired, and the client relists. Responses are assembled from the stored JSON bytes
without re-encoding each object, unless the client asks for a ``Table`` or metadata only
(``tables``: kubectl's server-side printing).
"""

from __future__ import annotations

import base64
import binascii
import itertools
import json
from collections import OrderedDict
from dataclasses import dataclass

from aiohttp import web

from trainop.cluster.apiserver import store
from trainop.cluster.apiserver.http import status
from trainop.cluster.apiserver.rest import resources, selectors, tables
from trainop.cluster.apiserver.rest.call import ApiState, Call

JSON = "application/json"
_SNAPSHOTS_KEPT = 64


@dataclass(frozen=True, slots=True)
class _Snapshot:
    rv: int
    items: list[store.Stored]


class Pager:
    """Remembers list snapshots for continue tokens (bounded, oldest evicted first)."""

    def __init__(self) -> None:
        self._snapshots: OrderedDict[int, _Snapshot] = OrderedDict()
        self._ids = itertools.count(1)

    def save(self, snap: _Snapshot) -> int:
        """Keep ``snap`` and return its id."""
        sid = next(self._ids)
        self._snapshots[sid] = snap
        while len(self._snapshots) > _SNAPSHOTS_KEPT:
            self._snapshots.popitem(last=False)
        return sid

    def load(self, sid: int) -> _Snapshot | None:
        """The snapshot ``sid`` or None once evicted."""
        return self._snapshots.get(sid)


def render(rt: resources.ResourceType, stored: store.Stored) -> bytes:
    """The object as the client asked for it (same bytes unless the version differs)."""
    if stored.obj.get("apiVersion") == rt.api_version:
        return stored.raw
    return store.encode({**stored.obj, "apiVersion": rt.api_version})


def respond(body: bytes, *, code: int = 200) -> web.Response:
    """A JSON response from pre-encoded bytes."""
    return web.Response(body=body, status=code, content_type=JSON)


def get(state: ApiState, call: Call) -> web.Response:
    """GET one object (404 when absent); a Table or metadata when the client asks so."""
    stored = state.store.get(call.key())
    if stored is None:
        raise status.not_found(call.rt, call.name or "")
    wanted = tables.negotiate(call.request.headers.get("Accept"))
    if wanted.as_ == "Table":
        meta = {"resourceVersion": stored.obj["metadata"].get("resourceVersion", "")}
        return respond(_table(state, call, wanted, [stored], meta))
    if wanted.as_:
        return respond(store.encode(tables.metadata_only(wanted, stored.obj)))
    return respond(render(call.rt, stored))


def _table(
    state: ApiState,
    call: Call,
    wanted: tables.Wanted,
    items: list[store.Stored],
    meta: dict[str, object],
) -> bytes:
    return tables.table(
        wanted,
        db=state.store,
        rt=call.rt,
        objs=[s.obj for s in items],
        meta=meta,
        include=call.query.get("includeObject", "Metadata"),
        now=state.clock(),
    )


def matcher(call: Call) -> selectors.Matcher | None:
    """The combined label and field selector of a list or watch request."""
    return selectors.combine(
        selectors.label_matcher(call.query.get("labelSelector")),
        selectors.field_matcher(call.query.get("fieldSelector"), allowed=call.rt.field_labels),
    )


def list_(state: ApiState, pager: Pager, call: Call) -> web.Response:
    """LIST a collection, with selectors and limit/continue paging."""
    match = matcher(call)
    limit = call.integer("limit") or 0
    token = call.query.get("continue")
    if token:
        snap, offset = _resume(pager, token)
    else:
        namespace = call.namespace if call.rt.namespaced else None
        items = state.store.select(resource=call.rt.store_key, namespace=namespace)
        if match is not None:
            items = [s for s in items if match(s.obj)]
        snap, offset = _Snapshot(rv=state.store.resource_version, items=items), 0
    page = snap.items[offset : offset + limit] if limit > 0 else snap.items[offset:]
    meta: dict[str, object] = {"resourceVersion": str(snap.rv)}
    end = offset + len(page)
    if end < len(snap.items):
        sid = token_sid(token) if token else pager.save(snap)
        meta["continue"] = _encode_token(sid, end, snap.rv)
        meta["remainingItemCount"] = len(snap.items) - end
    wanted = tables.negotiate(call.request.headers.get("Accept"))
    if wanted.as_ == "Table":
        return respond(_table(state, call, wanted, page, meta))
    if wanted.as_:
        return respond(tables.metadata_list(wanted, [s.obj for s in page], meta))
    return respond(_list_body(call.rt, meta, page))


def _list_body(
    rt: resources.ResourceType, meta: dict[str, object], page: list[store.Stored]
) -> bytes:
    head = json.dumps(
        {"kind": f"{rt.kind}List", "apiVersion": rt.api_version, "metadata": meta},
        separators=(",", ":"),
    ).encode()
    return head[:-1] + b',"items":[' + b",".join(render(rt, s) for s in page) + b"]}"


def _encode_token(sid: int, offset: int, rv: int) -> str:
    raw = json.dumps({"s": sid, "o": offset, "rv": rv}).encode()
    return base64.urlsafe_b64encode(raw).decode()


def _decode_token(token: str) -> dict[str, int]:
    try:
        value = json.loads(base64.urlsafe_b64decode(token.encode()))
        return {"s": int(value["s"]), "o": int(value["o"]), "rv": int(value["rv"])}
    except (ValueError, KeyError, TypeError, binascii.Error) as exc:
        raise status.bad_request(f"invalid continue token: {exc}") from exc


def token_sid(token: str) -> int:
    """The snapshot id inside a continue token."""
    return _decode_token(token)["s"]


def _resume(pager: Pager, token: str) -> tuple[_Snapshot, int]:
    decoded = _decode_token(token)
    snap = pager.load(decoded["s"])
    if snap is None or snap.rv != decoded["rv"]:
        raise status.expired(
            "The provided continue parameter is too old to display a consistent list result. "
            "You can start a new list without the continue parameter."
        )
    return snap, decoded["o"]
