"""Kubernetes Events, recorded as client-go's recorder records them, for every component.

``EventRecorder`` writes core/v1 Events about any object (``ObjectRef``: the
``involvedObject``, optionally narrowed to a container by ``fieldPath``) on behalf of a
``Source``: the operator's controllers (``source.component`` is the kind's controller name,
given per Event), the kubelet (``{"component": "kubelet", "host": <node>}`` plus
``reportingComponent``/``reportingInstance``) and the local scheduler (``default-scheduler``).
Timestamps come from the injected clock. Recording is best effort: a failed write is logged
here, once, and dropped; it is never retried and never raised to the caller.

Delivery, as each caller needs it:

- ``await record(...)`` writes before it returns; with ``background=True`` it only queues, and
  ``run()`` sends the queue with ``senders`` concurrent requests until cancelled. While
  ``max_queued`` Events wait, ``record`` waits too (back-pressure; client-go drops instead).
  The controller manager's mode: a reconcile does not wait for Event writes, which are half
  the API writes of a job that starts (benchmarks/controller.py).
- ``record_nowait(...)`` queues from synchronous code and returns at once (the kubelet, the
  scheduler): beyond ``max_queued`` waiting Events a new one is dropped, as client-go drops.
  A task of the recorder's own sends them one at a time, in order.

With ``aggregate=True`` a repeat of an Event (same object uid, ``fieldPath``, reason and
message) is aggregated as client-go's correlator does: the stored Event's ``count`` and
``lastTimestamp`` are patched instead of writing a new object, so a crash-looping container
adds one ``BackOff`` Event, not one per restart; ``forget(uid)`` ends this for an object that
is gone. Aggregation relies on one sender (``record_nowait``, or ``record`` when not in the
background). Events still queued when the recorder is cancelled are lost, as with client-go.
Neighbours: ``controller.reconciler`` and ``controller.manager`` (job Events), the kubelet's
``podrun`` and the local scheduler (pod Events), ``kube.clock``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import uuid
from dataclasses import dataclass

from trainop import errors
from trainop.kube.client import Client, Obj
from trainop.kube.clock import Clock
from trainop.kube.resources import EVENTS

log = logging.getLogger(__name__)

_Key = tuple[str, str, str, str]  # (uid, fieldPath, reason, message): what repeats match on


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """What an Event is about: its ``involvedObject``."""

    kind: str
    name: str
    namespace: str
    uid: str
    api_version: str = "v1"
    resource_version: str | None = None  # None: not part of the reference
    field_path: str = ""  # a part of the object (a pod's container)

    @classmethod
    def of(cls, obj: Obj) -> ObjectRef:
        """The reference to ``obj`` as it was read (with its ``resourceVersion``)."""
        meta = obj["metadata"]
        version = meta.get("resourceVersion")
        return cls(
            kind=str(obj.get("kind") or ""),
            name=str(meta["name"]),
            namespace=str(meta.get("namespace") or ""),
            uid=str(meta.get("uid") or ""),
            api_version=str(obj.get("apiVersion") or ""),
            resource_version=None if version is None else str(version),
        )

    @classmethod
    def pod(cls, namespace: str, name: str, uid: str) -> ObjectRef:
        """A pod, as the kubelet and the scheduler name it (no ``resourceVersion``)."""
        return cls(kind="Pod", name=name, namespace=namespace, uid=uid)

    def container(self, name: str, *, init: bool = False) -> ObjectRef:
        """This pod's container (or init container) ``name``, as kubelet's ``fieldPath``."""
        field = "initContainers" if init else "containers"
        return dataclasses.replace(self, field_path=f"spec.{field}{{{name}}}")

    def wire(self) -> Obj:
        """The ``involvedObject`` body."""
        ref: Obj = {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "name": self.name,
            "namespace": self.namespace,
            "uid": self.uid,
        }
        if self.resource_version is not None:
            ref["resourceVersion"] = self.resource_version
        if self.field_path:
            ref["fieldPath"] = self.field_path
        return ref


@dataclass(frozen=True, slots=True)
class Source:
    """Who records: ``source.component``, and the node of a component that runs on one."""

    component: str
    host: str = ""  # set: also ``source.host`` and ``reportingComponent``/``Instance``

    def wire(self) -> Obj:
        """The Event's source fields."""
        if not self.host:
            return {"source": {"component": self.component}}
        return {
            "source": {"component": self.component, "host": self.host},
            "reportingComponent": self.component,
            "reportingInstance": self.host,
        }


def event_body(
    about: ObjectRef, type_: str, reason: str, message: str, *, source: Source, stamp: str
) -> Obj:
    """A new core/v1 Event (``count`` 1, first and last seen at ``stamp``)."""
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": f"{about.name}.{uuid.uuid4().hex[:16]}",
            "namespace": about.namespace or "default",
        },
        "involvedObject": about.wire(),
        "reason": reason,
        "message": message,
        "type": type_,
        **source.wire(),
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }


@dataclass(slots=True)
class _Stored:
    name: str
    count: int


class EventRecorder:
    """Writes Events through a client; see the module docstring."""

    def __init__(
        self,
        *,
        client: Client,
        clock: Clock,
        source: Source = Source(""),
        background: bool = False,
        senders: int = 4,
        max_queued: int = 1000,
        aggregate: bool = False,
    ) -> None:
        self._client, self._clock, self._source = client, clock, source
        self._background = background
        self._senders = max(1, senders)
        self._aggregate = aggregate
        self._queue: asyncio.Queue[tuple[_Key, Obj]] = asyncio.Queue(maxsize=max_queued)
        self._stored: dict[_Key, _Stored] = {}
        self._own: asyncio.Task[None] | None = None  # ``record_nowait``'s sender
        self.sent = 0  # Events written or aggregated

    @property
    def recorded(self) -> int:
        """Events written or aggregated (the controller's name for ``sent``)."""
        return self.sent

    async def record(
        self,
        about: ObjectRef,
        type_: str,
        reason: str,
        message: str,
        *,
        source: Source | None = None,
    ) -> None:
        """Write an Event about ``about`` (in the background mode: queue it, waiting while
        the queue is full). ``source`` overrides the recorder's for this Event."""
        key, body = self._item(about, type_, reason, message, source)
        if self._background:
            await self._queue.put((key, body))
        else:
            await self._send(key, body)

    def record_nowait(
        self,
        about: ObjectRef,
        type_: str,
        reason: str,
        message: str,
        *,
        source: Source | None = None,
    ) -> None:
        """Queue an Event about ``about`` and return; dropped when the queue is full."""
        if self._queue.full():
            return
        self._queue.put_nowait(self._item(about, type_, reason, message, source))
        if self._own is None or self._own.done():
            self._own = asyncio.get_running_loop().create_task(self._send_queued())

    async def run(self) -> None:
        """Send queued Events until cancelled (background mode only; otherwise returns)."""
        if self._background:
            await asyncio.gather(*(self._sender() for _ in range(self._senders)))

    async def drained(self) -> None:
        """Return once every Event queued so far has been sent (or has failed)."""
        await self._queue.join()

    def forget(self, uid: str) -> None:
        """The object is gone: no more aggregation onto its Events."""
        for key in [k for k in self._stored if k[0] == uid]:
            del self._stored[key]

    def cancel(self) -> None:
        """Stop ``record_nowait``'s sender; the Events still queued are lost."""
        if self._own is not None:
            self._own.cancel()
            self._own = None  # a later Event gets a sender of its own
        while not self._queue.empty():
            self._queue.get_nowait()
            self._queue.task_done()

    def _item(
        self, about: ObjectRef, type_: str, reason: str, message: str, source: Source | None
    ) -> tuple[_Key, Obj]:
        stamp = self._clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")
        body = event_body(about, type_, reason, message, source=source or self._source, stamp=stamp)
        return (about.uid, about.field_path, reason, message), body

    async def _sender(self) -> None:
        """One of ``run``'s senders: forever."""
        while True:
            await self._dequeued(await self._queue.get())

    async def _send_queued(self) -> None:
        """``record_nowait``'s sender: until the queue is empty."""
        while not self._queue.empty():
            await self._dequeued(self._queue.get_nowait())

    async def _dequeued(self, item: tuple[_Key, Obj]) -> None:
        try:
            await self._send(*item)
        finally:
            self._queue.task_done()

    async def _send(self, key: _Key, body: Obj) -> None:
        namespace = body["metadata"]["namespace"]
        try:
            if not await self._aggregated(key, body):
                await self._client.create(EVENTS, body, namespace=namespace)
                if self._aggregate:
                    self._stored[key] = _Stored(body["metadata"]["name"], 1)
        except errors.ApiError as exc:
            about = body["involvedObject"]
            log.warning(
                "could not record event %s on %s %s/%s: %s",
                body["reason"],
                about["kind"],
                about["namespace"],
                about["name"],
                exc,
            )
            return
        self.sent += 1

    async def _aggregated(self, key: _Key, body: Obj) -> bool:
        """Count a repeat on the Event already stored for it; False when there is none (or
        it has expired or been deleted: then a new one is written)."""
        stored = self._stored.get(key) if self._aggregate else None
        if stored is None:
            return False
        stored.count += 1
        patch = {"count": stored.count, "lastTimestamp": body["lastTimestamp"]}
        namespace = body["metadata"]["namespace"]
        try:
            await self._client.patch(EVENTS, name=stored.name, namespace=namespace, patch=patch)
        except errors.NotFoundError:
            self._stored.pop(key, None)
            return False
        return True
