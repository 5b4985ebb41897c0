"""Informer: a local, always-converging copy of one resource, kept by list + watch.

``Informer.run`` lists the resource, replaces its store, signals ``synced``, then watches from
the list's resourceVersion with bookmarks. A watch that ends (server timeout, dropped
connection) resumes from the last seen resourceVersion; ``410 Gone`` triggers a fresh list whose
difference from the store is delivered as add/update/delete events, so nothing that happened
during a gap is missed. Other API errors back off exponentially (through the injected
``sleep``) and retry; the informer never gives up while it is running.

Invariants: the store holds raw dicts stripped of ``managedFields``, or whatever projection
the owner passes as ``project`` (memory: DESIGN §9);
handlers see every change once, in resourceVersion order per object; the informer only reads.
Neighbours: ``kube.client.Client`` (any implementation), ``controller`` (registers handlers and
reads from ``get``/``by_index``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field

from trainop import errors
from trainop.kube.client import Client, Obj
from trainop.kube.resources import Resource

Key = tuple[str, str]  # (namespace, name)
Indexer = Callable[[Obj], Iterable[str]]
Projection = Callable[[Obj], Obj]
Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Handlers:
    """Callbacks for changes; ``old`` is None for adds, ``new`` is None for deletes."""

    on_change: Callable[[Obj | None, Obj | None], None]


@dataclass(slots=True)
class _Index:
    function: Indexer
    entries: dict[str, set[Key]] = field(default_factory=dict)


def key_of(obj: Obj) -> Key:
    meta = obj["metadata"]
    return (meta.get("namespace", ""), meta["name"])


def slim(obj: Obj) -> Obj:
    """The object without the parts the operator never reads (``managedFields``)."""
    obj["metadata"].pop("managedFields", None)
    return obj


class Informer:
    """Cache of one resource; see the module docstring."""

    def __init__(
        self,
        client: Client,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str = "",
        handlers: Iterable[Handlers] = (),
        sleep: Sleep = asyncio.sleep,
        watch_timeout_seconds: int = 300,
        max_backoff: float = 30.0,
        project: Projection = slim,
    ) -> None:
        self._client = client
        self._resource = resource
        self._namespace = namespace
        self._selector = label_selector
        self._handlers = list(handlers)
        self._sleep = sleep
        self._watch_timeout = watch_timeout_seconds
        self._max_backoff = max_backoff
        self._project = project
        self._store: dict[Key, Obj] = {}
        self._indexes: dict[str, _Index] = {}
        self._version = ""
        self.synced = asyncio.Event()
        self.relists = 0

    @property
    def resource(self) -> Resource:
        return self._resource

    def add_handlers(self, handlers: Handlers) -> None:
        self._handlers.append(handlers)

    def add_index(self, name: str, function: Indexer) -> None:
        """Index objects by ``function(obj)`` values; query with ``by_index``."""
        index = _Index(function)
        for key, obj in self._store.items():
            for value in function(obj):
                index.entries.setdefault(value, set()).add(key)
        self._indexes[name] = index

    def get(self, namespace: str, name: str) -> Obj | None:
        """The cached object (shared, do not mutate), or None."""
        return self._store.get((namespace, name))

    def by_index(self, name: str, value: str) -> list[Obj]:
        keys = self._indexes[name].entries.get(value, set())
        return [self._store[k] for k in sorted(keys)]

    def items(self) -> list[Obj]:
        return list(self._store.values())

    async def run(self) -> None:
        """List and watch until cancelled."""
        failures = 0
        while True:
            try:
                if not self._version:
                    await self._relist()
                await self._watch()
                failures = 0
            except errors.GoneError:
                self._version = ""
            except errors.BrokenStreamError:
                self._version = ""  # events may be missing: list afresh, after a pause
                failures += 1
                await self._sleep(min(self._max_backoff, 0.1 * 2 ** min(failures, 10)))
            except errors.ApiError:
                failures += 1
                await self._sleep(min(self._max_backoff, 0.1 * 2 ** min(failures, 10)))

    async def _relist(self) -> None:
        listing = await self._client.list(
            self._resource, namespace=self._namespace, label_selector=self._selector
        )
        fresh = {key_of(obj): self._project(obj) for obj in listing.items}
        for key in set(self._store) - set(fresh):
            self._apply("DELETED", self._store[key])
        for obj in fresh.values():
            self._apply("MODIFIED", obj)
        self._version = listing.resource_version
        self.relists += 1
        self.synced.set()

    async def _watch(self) -> None:
        events = self._client.watch(
            self._resource,
            namespace=self._namespace,
            label_selector=self._selector,
            resource_version=self._version,
            timeout_seconds=self._watch_timeout,
        )
        async for event in events:
            version = event.obj.get("metadata", {}).get("resourceVersion")
            if event.type != "BOOKMARK":
                self._apply(event.type, self._project(event.obj))
            if version:
                self._version = version

    def _apply(self, event_type: str, obj: Obj) -> None:
        key = key_of(obj)
        old = self._store.get(key)
        if event_type == "DELETED":
            if old is None:
                return
            del self._store[key]
            self._reindex(key, old, None)
            self._notify(old, None)
            return
        if old is not None and _version_of(old) == _version_of(obj):
            return
        self._store[key] = obj
        self._reindex(key, old, obj)
        self._notify(old, obj)

    def _reindex(self, key: Key, old: Obj | None, new: Obj | None) -> None:
        for index in self._indexes.values():
            for value in index.function(old) if old is not None else ():
                index.entries.get(value, set()).discard(key)
            for value in index.function(new) if new is not None else ():
                index.entries.setdefault(value, set()).add(key)

    def _notify(self, old: Obj | None, new: Obj | None) -> None:
        for handlers in self._handlers:
            handlers.on_change(old, new)


def _version_of(obj: Obj) -> str:
    return str(obj.get("metadata", {}).get("resourceVersion", ""))
