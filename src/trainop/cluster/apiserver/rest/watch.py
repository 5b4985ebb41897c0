"""WATCH: a chunked stream of JSON lines ``{"type": ..., "object": ...}``.

Semantics, as kube-apiserver's watch cache:

- no ``resourceVersion`` (or ``"0"``): synthetic ``ADDED`` events for every matching object,
  then changes; with ``sendInitialEvents=true`` and bookmarks, a BOOKMARK annotated
  ``k8s.io/initial-events-end`` marks the end of the initial state;
- ``resourceVersion=N``: every change after N from the store's event log; when the log no
  longer reaches back to N the stream carries one ``ERROR`` event with a 410 ``Expired``
  Status and ends, and the client relists;
- selectors are applied to both the old and the new object, so an object that stops
  matching is seen as ``DELETED`` and one that starts matching as ``ADDED``;
- ``allowWatchBookmarks``: a BOOKMARK with the newest resourceVersion whenever the watch has
  been idle for ``bookmark_interval`` seconds and everything up to it has been sent;
- ``timeoutSeconds`` ends the stream cleanly; without it the stream lasts until the client
  leaves or the server stops. A healthy watch is never closed early.

Subscribing and reading the backlog happen without an ``await`` between them, so no event is
lost or sent twice. Each event's JSON is the stored bytes, never re-encoded per watcher,
except for a watcher that asked for a ``Table`` (``kubectl get -w``; see ``tables``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable
from typing import Protocol

from aiohttp import web

from trainop.cluster.apiserver import store
from trainop.cluster.apiserver.http import status
from trainop.cluster.apiserver.rest import reads, resources, selectors, tables
from trainop.cluster.apiserver.rest.call import ApiState, Call

_MAX_BACKLOG = 100_000  # a watcher this far behind is dropped, as kube drops slow watchers


class _Writer(Protocol):
    async def write(self, data: bytes) -> None: ...


def _line(kind: str, raw: bytes) -> bytes:
    return b'{"type":"' + kind.encode() + b'","object":' + raw + b"}\n"


def _filtered(
    rt: resources.ResourceType, event: store.Event, match: selectors.Matcher | None
) -> tuple[str, bytes] | None:
    """The watch event for ``event`` as the client asked for it: in its version (an object
    written through another version of one CRD only has ``apiVersion`` changed)."""
    picked = _picked(event, match)
    return None if picked is None else (picked, reads.render(rt, event.stored))


def _picked(event: store.Event, match: selectors.Matcher | None) -> str | None:
    if match is None:
        return event.type
    now = match(event.stored.obj)
    before = event.prev is not None and match(event.prev.obj)
    if event.type == store.DELETED:
        return store.DELETED if before else None
    if now:
        return store.MODIFIED if before else store.ADDED
    return store.DELETED if before else None


def _bookmark(call: Call, rv: int, *, initial_end: bool = False) -> bytes:
    meta: dict[str, object] = {"resourceVersion": str(rv)}
    if initial_end:
        meta["annotations"] = {"k8s.io/initial-events-end": "true"}
    obj = {"kind": call.rt.kind, "apiVersion": call.rt.api_version, "metadata": meta}
    return _line("BOOKMARK", json.dumps(obj, separators=(",", ":")).encode())


def _gone(rv: int, oldest: int) -> bytes:
    err = status.expired(f"too old resource version: {rv} ({oldest})")
    return _line("ERROR", json.dumps(err.body(), separators=(",", ":")).encode())


def _start_rv(call: Call) -> int | None:
    text = call.query.get("resourceVersion")
    if text in (None, "", "0"):
        return None
    try:
        return int(str(text))
    except ValueError as exc:
        raise status.bad_request(f"invalid resourceVersion {text!r}") from exc


def _backlog(state: ApiState, call: Call, match: selectors.Matcher | None) -> list[bytes] | None:
    start = _start_rv(call)
    if start is None:
        namespace = call.namespace if call.rt.namespaced else None
        items = state.store.select(resource=call.rt.store_key, namespace=namespace)
        lines = [
            _line(store.ADDED, reads.render(call.rt, s))
            for s in items
            if match is None or match(s.obj)
        ]
        if call.flag("sendInitialEvents") and call.flag("allowWatchBookmarks"):
            lines.append(_bookmark(call, state.store.resource_version, initial_end=True))
        return lines
    events = state.store.events_since(start)
    if events is None:
        return None
    out = []
    for ev in events:
        if ev.stored.key.resource != call.rt.store_key:
            continue
        if call.rt.namespaced and call.namespace and ev.stored.key.namespace != call.namespace:
            continue
        picked = _filtered(call.rt, ev, match)
        if picked is not None:
            out.append(_line(picked[0], picked[1]))
    return out


class _Converting:
    """A response whose writes pass through ``convert`` (Table watches, ``tables``)."""

    def __init__(self, resp: web.StreamResponse, convert: Callable[[bytes], bytes]) -> None:
        self._resp, self._convert = resp, convert

    async def write(self, data: bytes) -> None:
        await self._resp.write(self._convert(data))


def _writer(state: ApiState, call: Call, resp: web.StreamResponse) -> _Writer:
    wanted = tables.negotiate(call.request.headers.get("Accept"))
    if not wanted.as_:
        return resp
    include = call.query.get("includeObject", "Metadata")
    convert = tables.watch_converter(
        wanted, db=state.store, rt=call.rt, include=include, clock=state.clock
    )
    return _Converting(resp, convert)


async def watch(state: ApiState, call: Call) -> web.StreamResponse:
    """Serve one watch until timeoutSeconds, client disconnect or server stop."""
    match = reads.matcher(call)
    timeout = call.integer("timeoutSeconds")
    namespace = call.namespace if call.rt.namespaced else None
    sub = state.store.subscribe(resource=call.rt.store_key, namespace=namespace)
    try:
        backlog = _backlog(state, call, match)
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        resp.enable_chunked_encoding()
        await resp.prepare(call.request)
        if backlog is None:
            await resp.write(_gone(_start_rv(call) or 0, state.store.resource_version))
            return resp
        writer = _writer(state, call, resp)
        if backlog:
            await writer.write(b"".join(backlog))
        deadline = time.monotonic() + timeout if timeout else None
        with contextlib.suppress(ConnectionResetError):  # the watcher went away: just stop
            await _stream(state, call, sub, writer, match, deadline)
        return resp
    finally:
        state.store.unsubscribe(sub)


async def _stream(
    state: ApiState,
    call: Call,
    sub: store.Subscription,
    resp: _Writer,
    match: selectors.Matcher | None,
    deadline: float | None,
) -> None:
    bookmarks = call.flag("allowWatchBookmarks")
    interval = state.bookmark_interval if bookmarks else 5.0
    while True:
        wait = interval if deadline is None else min(interval, deadline - time.monotonic())
        if wait <= 0:
            return
        event = await _next(sub, wait)
        if event is None:
            if bookmarks:
                await resp.write(_bookmark(call, state.store.resource_version))
            continue
        if sub.queue.qsize() > _MAX_BACKLOG:
            return
        chunk = [event, *_drain(sub)]
        lines = [_line(*p) for e in chunk if (p := _filtered(call.rt, e, match)) is not None]
        if lines:
            await resp.write(b"".join(lines))


async def _next(sub: store.Subscription, wait: float) -> store.Event | None:
    """The next event, or None after ``wait`` seconds without one. A queued event is taken
    at once; otherwise ``asyncio.timeout`` waits (``wait_for`` would start a task per event
    per watcher, a measurable share of the server's CPU under many writes)."""
    if not sub.queue.empty():
        return sub.queue.get_nowait()
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(wait):
            return await sub.queue.get()
    return None


def _drain(sub: store.Subscription) -> list[store.Event]:
    out = []
    while not sub.queue.empty():
        out.append(sub.queue.get_nowait())
    return out
