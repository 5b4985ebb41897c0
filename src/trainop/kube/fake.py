"""An in-memory ``Client`` for unit tests, with per-verb error injection.

Behaves like a small API server: a single monotonic resourceVersion, uids, generateName,
AlreadyExists/NotFound/Conflict, label-selector lists, merge patches (``status`` subresource
patches touch only status), and watches that replay history from a resourceVersion and raise
``GoneError`` when it has been compacted away. It does not garbage-collect, run finalizers or
validate; integration tests use the embedded API server for that.

``calls`` records every (verb, plural) for tests that count API traffic; ``inject`` makes the
next N calls of a verb (optionally for one resource) raise a chosen error.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
from collections.abc import AsyncIterator
from dataclasses import dataclass

from trainop import errors
from trainop.kube import selectors
from trainop.kube.client import JsonPatch, Obj, ObjectList, PatchType, WatchEvent
from trainop.kube.patches import merge_patch
from trainop.kube.resources import Resource

Key = tuple[str, str, str]  # (plural.group, namespace, name)
Events = list[WatchEvent]


@dataclass(slots=True)
class _Fault:
    verb: str
    plural: str | None
    error: errors.ApiError
    remaining: int


@dataclass(slots=True)
class _Watcher:
    resource_key: str
    namespace: str | None
    selector: selectors.Selector
    queue: asyncio.Queue[WatchEvent | None]


class FakeClient:
    """In-memory stand-in for a Kubernetes API server (see module docstring)."""

    def __init__(self, *, history_limit: int = 10_000) -> None:
        self._objects: dict[Key, Obj] = {}
        self._version = 0
        self._uids = itertools.count(1)
        self._history: list[tuple[int, str, WatchEvent]] = []
        self._history_limit = history_limit
        self._watchers: list[_Watcher] = []
        self._faults: list[_Fault] = []
        self.calls: list[tuple[str, str]] = []

    def inject(
        self, verb: str, error: errors.ApiError, *, resource: Resource | None = None, times: int = 1
    ) -> None:
        """Make the next ``times`` calls of ``verb`` (on ``resource``, if given) raise ``error``."""
        plural = resource.plural if resource else None
        self._faults.append(_Fault(verb, plural, error, times))

    def disconnect(self) -> None:
        """End every open watch, as a server-side timeout or a dropped connection does."""
        for watcher in self._watchers:
            watcher.queue.put_nowait(None)

    def compact(self) -> None:
        """Forget the watch history, so resuming from any older version gets 410 Gone."""
        self._history.clear()

    @property
    def resource_version(self) -> str:
        return str(self._version)

    async def get(self, resource: Resource, *, name: str, namespace: str | None = None) -> Obj:
        self._enter("get", resource)
        return copy.deepcopy(self._existing(resource, namespace, name))

    async def list(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str = "",
        field_selector: str = "",
        limit: int = 0,
        continue_token: str = "",
    ) -> ObjectList:
        del field_selector, limit, continue_token
        self._enter("list", resource)
        selector = selectors.parse(label_selector)
        items = [
            copy.deepcopy(obj)
            for (res, ns, _), obj in sorted(self._objects.items())
            if res == _rkey(resource)
            and (namespace is None or ns == namespace)
            and selector.matches(obj["metadata"].get("labels"))
        ]
        return ObjectList(items, self.resource_version)

    async def create(self, resource: Resource, obj: Obj, *, namespace: str | None = None) -> Obj:
        self._enter("create", resource)
        new = copy.deepcopy(obj)
        meta = new.setdefault("metadata", {})
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = f"{meta['generateName']}{next(self._uids):05d}"
        if resource.namespaced:
            meta["namespace"] = namespace or meta.get("namespace") or "default"
        key = (_rkey(resource), meta.get("namespace", ""), meta["name"])
        if key in self._objects:
            raise errors.AlreadyExistsError(
                f"{resource.plural} {meta['name']!r} already exists",
                status=409,
                reason="AlreadyExists",
            )
        meta["uid"] = f"uid-{next(self._uids)}"
        meta.setdefault("generation", 1)
        return self._store(key, new, "ADDED")

    async def patch(
        self,
        resource: Resource,
        *,
        name: str,
        patch: Obj | JsonPatch,
        namespace: str | None = None,
        patch_type: PatchType = "merge",
        subresource: str = "",
        field_manager: str = "",
        force: bool = False,
    ) -> Obj:
        self._enter("patch", resource)
        if patch_type not in ("merge", "apply") or not isinstance(patch, dict):
            raise errors.ApiError("the fake client supports merge patches only", status=415)
        if patch_type == "apply" and _key(resource, namespace, name) not in self._objects:
            # Server-side apply, approximated: create when absent, else a merge patch (no
            # field ownership: fields a manager stops sending stay).
            return await self.create(resource, copy.deepcopy(patch), namespace=namespace)
        current = self._existing(resource, namespace, name)
        if subresource == "status":
            patch = {"status": patch.get("status")}
        new = merge_patch(current, patch)
        return self._store(_key(resource, namespace, name), new, "MODIFIED")

    async def replace(
        self, resource: Resource, obj: Obj, *, namespace: str | None = None, subresource: str = ""
    ) -> Obj:
        self._enter("replace", resource)
        meta = obj["metadata"]
        current = self._existing(resource, namespace or meta.get("namespace"), meta["name"])
        if meta.get("resourceVersion") != current["metadata"]["resourceVersion"]:
            raise errors.ConflictError(
                f"{resource.plural} {meta['name']!r}: the object has been modified",
                status=409,
                reason="Conflict",
            )
        new = copy.deepcopy(current)
        if subresource == "status":
            new["status"] = copy.deepcopy(obj.get("status"))
        else:
            new.update({k: copy.deepcopy(v) for k, v in obj.items() if k != "status"})
        key = _key(resource, namespace or meta.get("namespace"), meta["name"])
        return self._store(key, new, "MODIFIED")

    async def delete(
        self,
        resource: Resource,
        *,
        name: str,
        namespace: str | None = None,
        propagation_policy: str = "Background",
        preconditions_uid: str = "",
    ) -> None:
        del propagation_policy
        self._enter("delete", resource)
        current = self._existing(resource, namespace, name)
        if preconditions_uid and current["metadata"]["uid"] != preconditions_uid:
            raise errors.ConflictError("uid precondition failed", status=409, reason="Conflict")
        key = _key(resource, namespace, name)
        del self._objects[key]
        self._version += 1
        gone = copy.deepcopy(current)
        gone["metadata"]["resourceVersion"] = str(self._version)
        self._publish(key[0], WatchEvent("DELETED", gone))

    async def watch(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str = "",
        resource_version: str = "",
        timeout_seconds: int = 0,
    ) -> AsyncIterator[WatchEvent]:
        del timeout_seconds
        self._enter("watch", resource)
        watcher = _Watcher(
            _rkey(resource), namespace, selectors.parse(label_selector), asyncio.Queue()
        )
        for replayed in self._replay(watcher, resource_version):
            watcher.queue.put_nowait(replayed)
        self._watchers.append(watcher)
        try:
            while (event := await watcher.queue.get()) is not None:
                yield event
        finally:
            self._watchers.remove(watcher)

    async def close(self) -> None:
        return None

    def _replay(self, watcher: _Watcher, resource_version: str) -> Events:
        if not resource_version:
            return []
        since = int(resource_version)
        oldest = self._history[0][0] if self._history else self._version + 1
        if since < self._version and since + 1 < oldest:
            raise errors.GoneError(f"too old resource version: {since}", status=410, reason="Gone")
        return [e for v, r, e in self._history if v > since and self._wants(watcher, r, e)]

    def _wants(self, watcher: _Watcher, resource_key: str, event: WatchEvent) -> bool:
        meta = event.obj["metadata"]
        return (
            resource_key == watcher.resource_key
            and (watcher.namespace is None or meta.get("namespace") == watcher.namespace)
            and watcher.selector.matches(meta.get("labels"))
        )

    def _enter(self, verb: str, resource: Resource) -> None:
        self.calls.append((verb, resource.plural))
        for fault in self._faults:
            if fault.verb == verb and fault.plural in (None, resource.plural) and fault.remaining:
                fault.remaining -= 1
                raise fault.error

    def _existing(self, resource: Resource, namespace: str | None, name: str) -> Obj:
        found = self._objects.get(_key(resource, namespace, name))
        if found is None:
            raise errors.NotFoundError(
                f"{resource.plural} {name!r} not found", status=404, reason="NotFound"
            )
        return found

    def _store(self, key: Key, obj: Obj, event_type: str) -> Obj:
        self._version += 1
        obj["metadata"]["resourceVersion"] = str(self._version)
        self._objects[key] = obj
        self._publish(key[0], WatchEvent("ADDED" if event_type == "ADDED" else "MODIFIED", obj))
        return copy.deepcopy(obj)

    def _publish(self, resource_key: str, event: WatchEvent) -> None:
        snapshot = WatchEvent(event.type, copy.deepcopy(event.obj))
        self._history.append((self._version, resource_key, snapshot))
        del self._history[: -self._history_limit]
        for watcher in self._watchers:
            if self._wants(watcher, resource_key, snapshot):
                watcher.queue.put_nowait(snapshot)


def _rkey(resource: Resource) -> str:
    return f"{resource.plural}.{resource.group}"


def _key(resource: Resource, namespace: str | None, name: str) -> Key:
    return (_rkey(resource), namespace or "" if resource.namespaced else "", name)
