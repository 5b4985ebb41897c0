"""Garbage collection by ownerReferences, and namespace termination.

Role: kube-controller-manager's garbage collector and namespace controller, in one asyncio
task. An index ``owner uid → dependent keys`` is kept up to date from committed store events
(so it survives nothing and is rebuilt from the store at start). Work items are owner uids:

- owner gone → each dependent whose owners are all gone is deleted (background, honouring
  its own finalizers); a dependent that still has a live owner only loses the dangling
  reference;
- owner deleting with the ``orphan`` finalizer → the reference is removed from every
  dependent, then the finalizer from the owner;
- owner deleting with ``foregroundDeletion`` → dependents are deleted; once none is left the
  finalizer is removed (which removes the owner);
- a ``Terminating`` namespace → everything in it is deleted; once empty, the namespace's
  ``kubernetes`` finalizer is dropped and it is removed.

Dependents whose owners are all unknown are collected however they appear, as Kubernetes' collector
does: an object created or updated with a reference to a uid that is not in the store queues that
uid at once; the start of the server queues every such uid found in the store; and a periodic
``sweep`` (every ``sweep_interval`` seconds) queues them again, so nothing that slipped past an
event (a pod created from a stale cache just after its job was deleted) outlives its owner.

Like the real collector it is asynchronous: callers observe its effects eventually (tests poll).
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from trainop.cluster.apiserver import store
from trainop.cluster.apiserver.http import status
from trainop.cluster.apiserver.rest import deletion
from trainop.cluster.apiserver.rest.call import ApiState

log = logging.getLogger(__name__)
_NS = "core/namespaces"


class GarbageCollector:
    """Owner index plus one worker task that deletes, orphans and finalizes."""

    def __init__(self, state: ApiState, *, sweep_interval: float = 30.0) -> None:
        self._state = state
        self._sweep_interval = sweep_interval
        self._dependents: dict[str, set[store.Key]] = {}
        self._owners_of: dict[store.Key, tuple[str, ...]] = {}
        self._by_uid: dict[str, store.Key] = {}
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._sweeper: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Index the store, queue leftover work, subscribe to events and start the worker."""
        for stored in self._state.store.iter_all():
            self._index(stored.key, stored.obj)
        for stored in list(self._state.store.iter_all()):
            self._maybe_queue(stored.key, stored.obj)
        self.sweep()
        self._state.store.add_listener(self.on_event)
        self._task = asyncio.create_task(self._run(), name="garbage-collector")
        if self._sweep_interval > 0:
            self._sweeper = asyncio.create_task(self._sweep_forever(), name="gc-sweep")

    async def stop(self) -> None:
        """Cancel the worker and the sweeper."""
        tasks = [t for t in (self._task, self._sweeper) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def sweep(self) -> list[str]:
        """Queue every owner uid that dependents reference but the store does not hold."""
        absent = sorted(u for u in self._dependents if u not in self._by_uid)
        for uid in absent:
            self._queue.put_nowait(uid)
        return absent

    async def idle(self) -> None:
        """Return once every queued item has been handled (for tests and shutdown)."""
        await self._queue.join()

    async def _sweep_forever(self) -> None:
        while True:
            await asyncio.sleep(self._sweep_interval)
            self.sweep()

    def on_event(self, event: store.Event) -> None:
        """Store listener: keep the index current and queue owners that need work."""
        key, obj = event.stored.key, event.stored.obj
        self._unindex(key, event.prev.obj if event.prev else None)
        if event.type == store.DELETED:
            uid = obj["metadata"].get("uid")
            if uid:
                self._queue.put_nowait(uid)
            for owner in self._owner_uids(obj):
                self._queue.put_nowait(owner)
            if key.namespace:
                self._queue.put_nowait(f"ns:{key.namespace}")
            return
        self._index(key, obj)
        self._maybe_queue(key, obj)
        for owner in self._owners_of.get(key, ()):
            if owner not in self._by_uid:  # its owner is already gone: collect it
                self._queue.put_nowait(owner)

    # ---- index ---------------------------------------------------------------------------

    @staticmethod
    def _owner_uids(obj: dict[str, Any]) -> tuple[str, ...]:
        refs = obj["metadata"].get("ownerReferences") or []
        return tuple(r["uid"] for r in refs if isinstance(r, dict) and r.get("uid"))

    def _index(self, key: store.Key, obj: dict[str, Any]) -> None:
        uid = obj["metadata"].get("uid")
        if uid:
            self._by_uid[uid] = key
        owners = self._owner_uids(obj)
        self._owners_of[key] = owners
        for owner in owners:
            self._dependents.setdefault(owner, set()).add(key)

    def _unindex(self, key: store.Key, prev: dict[str, Any] | None) -> None:
        for owner in self._owners_of.pop(key, ()):
            deps = self._dependents.get(owner)
            if deps is not None:
                deps.discard(key)
                if not deps:
                    del self._dependents[owner]
        uid = prev["metadata"].get("uid") if prev else None
        if uid and self._by_uid.get(uid) == key:
            del self._by_uid[uid]

    def _maybe_queue(self, key: store.Key, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        if not meta.get("deletionTimestamp"):
            return
        if key.resource == _NS:
            self._queue.put_nowait(f"ns:{key.name}")
        elif {deletion.ORPHAN, deletion.FOREGROUND} & set(meta.get("finalizers") or []):
            self._queue.put_nowait(meta["uid"])

    # ---- worker --------------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            item = await self._queue.get()
            try:
                if item.startswith("ns:"):
                    await self._namespace(item[3:])
                else:
                    await self._owner(item)
            except status.RequestError as exc:
                log.debug("gc: %s: %s", item, exc)
            except Exception:
                log.exception("garbage collector failed on %s", item)
            finally:
                self._queue.task_done()

    async def _owner(self, uid: str) -> None:
        key = self._by_uid.get(uid)
        owner = self._state.store.latest(key) if key else None
        deps = sorted(self._dependents.get(uid, ()))
        if owner is None:
            for dep in deps:
                await self._release(dep, uid, delete_if_last=True)
            return
        finalizers = list(owner.obj["metadata"].get("finalizers") or [])
        if deletion.ORPHAN in finalizers:
            for dep in deps:
                await self._release(dep, uid, delete_if_last=False)
            await self._drop_finalizer(owner, deletion.ORPHAN)
        elif deletion.FOREGROUND in finalizers:
            for dep in deps:
                await self._delete(dep)
            if not self._dependents.get(uid):
                await self._drop_finalizer(owner, deletion.FOREGROUND)

    async def _release(self, dep: store.Key, uid: str, *, delete_if_last: bool) -> None:
        current = self._state.store.latest(dep)
        if current is None:
            return
        others = [o for o in self._owner_uids(current.obj) if o != uid and o in self._by_uid]
        if delete_if_last and not others:
            await self._delete(dep)
            return
        obj = json.loads(current.raw)
        refs = obj["metadata"].get("ownerReferences") or []
        obj["metadata"]["ownerReferences"] = [r for r in refs if r.get("uid") != uid]
        if not obj["metadata"]["ownerReferences"]:
            del obj["metadata"]["ownerReferences"]
        await self._state.store.put(dep, obj)

    async def _delete(self, key: store.Key) -> None:
        current = self._state.store.latest(key)
        if current is not None and not current.obj["metadata"].get("deletionTimestamp"):
            await deletion.remove(self._state, key, policy="Background", grace=None)

    async def _drop_finalizer(self, owner: store.Stored, finalizer: str) -> None:
        obj = json.loads(owner.raw)
        obj["metadata"]["finalizers"] = [
            f for f in obj["metadata"].get("finalizers") or [] if f != finalizer
        ]
        await deletion.store_or_finish(self._state, owner.key, obj)

    async def _namespace(self, name: str) -> None:
        key = store.Key(resource=_NS, namespace="", name=name)
        ns = self._state.store.latest(key)
        if ns is None or not ns.obj["metadata"].get("deletionTimestamp"):
            return
        remaining = 0
        for rt_key in {s.key.resource for s in self._state.store.iter_all()}:
            for item in self._state.store.select(resource=rt_key, namespace=name):
                if rt_key == _NS or not item.key.namespace:
                    continue
                remaining += 1
                await self._delete(item.key)
        if remaining == 0 or self._is_empty(name):
            obj = json.loads(ns.raw)
            obj["spec"] = {"finalizers": []}
            await deletion.store_or_finish(self._state, key, obj)

    def _is_empty(self, namespace: str) -> bool:
        return not any(s.key.namespace == namespace for s in self._state.store.iter_all())
