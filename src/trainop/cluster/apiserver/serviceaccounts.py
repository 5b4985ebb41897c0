"""The ``default`` ServiceAccount in every namespace (kube's serviceaccounts controller).

Role: one asyncio task that makes sure the ``default`` namespace exists (kube-apiserver makes
it at start; so does this server, also after it was deleted, at the next start) and that every
active namespace holds a ServiceAccount named ``default``: at start for the namespaces
already stored, when a namespace is created, and again when someone deletes the account. A
namespace that is terminating gets none (its contents are being removed). Like the real
controller it is asynchronous: the account appears shortly after its namespace (clients and
tests poll). Local mode issues no tokens, so the account carries no secrets.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from trainop.cluster.apiserver import store
from trainop.cluster.apiserver.rest import objects
from trainop.cluster.apiserver.rest.call import ApiState

log = logging.getLogger(__name__)
NAMESPACES = "core/namespaces"
ACCOUNTS = "core/serviceaccounts"
DEFAULT = "default"
_SYSTEM = ""  # queue item: the namespaces kube-apiserver itself makes


class DefaultServiceAccounts:
    """Queue of namespaces to check, fed by store events, drained by one task."""

    def __init__(self, state: ApiState) -> None:
        self._state = state
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Queue every stored namespace, follow store events, start the worker."""
        self._queue.put_nowait(_SYSTEM)
        for ns in self._state.store.select(resource=NAMESPACES):
            self._queue.put_nowait(ns.key.name)
        self._state.store.add_listener(self._on_event)
        self._task = asyncio.create_task(self._run(), name="default-serviceaccounts")

    async def stop(self) -> None:
        """Cancel the worker."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def idle(self) -> None:
        """Return once every queued namespace has been handled (tests)."""
        await self._queue.join()

    def _on_event(self, event: store.Event) -> None:
        key = event.stored.key
        if key.resource == NAMESPACES and event.type == store.ADDED:
            self._queue.put_nowait(key.name)
        elif key.resource == ACCOUNTS and key.name == DEFAULT and event.type == store.DELETED:
            self._queue.put_nowait(key.namespace)

    async def _run(self) -> None:
        while True:
            namespace = await self._queue.get()
            try:
                await self._ensure(namespace)
            except Exception:  # a failed write is retried on the next event or restart
                log.exception("could not create the default ServiceAccount in %s", namespace)
            finally:
                self._queue.task_done()

    async def _ensure(self, namespace: str) -> None:
        db = self._state.store
        if namespace == _SYSTEM:
            await self._ensure_default_namespace()
            return
        ns = db.latest(store.Key(resource=NAMESPACES, namespace="", name=namespace))
        if ns is None or ns.obj["metadata"].get("deletionTimestamp"):
            return
        key = store.Key(resource=ACCOUNTS, namespace=namespace, name=DEFAULT)
        if db.latest(key) is not None:
            return
        rt = self._state.registry.find(group="", version="v1", plural="serviceaccounts")
        assert rt is not None
        account: dict[str, Any] = {"metadata": {"name": DEFAULT}}
        objects.prepare_create(rt, account, namespace=namespace, now=self._state.clock())
        await db.put(key, account)

    async def _ensure_default_namespace(self) -> None:
        key = store.Key(resource=NAMESPACES, namespace="", name=DEFAULT)
        if self._state.store.latest(key) is not None:
            return
        rt = self._state.registry.find(group="", version="v1", plural="namespaces")
        assert rt is not None
        namespace: dict[str, Any] = {"metadata": {"name": DEFAULT}}
        objects.prepare_create(rt, namespace, namespace=None, now=self._state.clock())
        objects.initial_status(rt, namespace)
        await self._state.store.put(key, namespace)
