"""Kubelet Events on pods (``Created``, ``Started``, ``Killing``, ``BackOff``, ``Failed``).

``PodEvents.record(pod, container, type, reason, message)`` queues a core/v1 Event about a
pod, as kubelet records them: ``involvedObject`` is the pod (with ``fieldPath``
``spec.containers{<name>}`` or ``spec.initContainers{<name>}``), ``source`` is
``{"component": "kubelet", "host": <node>}``, so ``kubectl describe pod`` explains restarts.

A repeat of an Event already recorded for the same pod uid, container, reason and message is
aggregated as client-go's correlator does: the stored Event's ``count`` and
``lastTimestamp`` are patched instead of writing a new object, so a crash-looping container
adds one ``BackOff`` Event, not one per restart. Writes are sent in order by one background
task; recording is best effort (a failed write is logged and dropped, never retried) and the
queue is bounded (beyond ``max_queued`` new Events are dropped). Neighbours: ``podrun``
(records), ``kubelet`` (owns the recorder).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections import deque
from dataclasses import dataclass

from trainop import errors
from trainop.kube.client import Client, Obj
from trainop.kube.clock import Clock
from trainop.kube.resources import EVENTS

log = logging.getLogger(__name__)

COMPONENT = "kubelet"


@dataclass(frozen=True, slots=True)
class PodRef:
    """The pod an Event is about."""

    namespace: str
    name: str
    uid: str


@dataclass(slots=True)
class _Stored:
    name: str
    count: int


class PodEvents:
    """Records kubelet Events (see the module docstring)."""

    def __init__(
        self,
        client: Client,
        clock: Clock,
        *,
        node: str,
        max_queued: int = 1000,
        component: str = COMPONENT,
    ) -> None:
        self._client, self._clock, self._node = client, clock, node
        self._component = component
        self._max_queued = max_queued
        self._queue: deque[tuple[tuple[str, ...], Obj]] = deque()
        self._stored: dict[tuple[str, ...], _Stored] = {}
        self._task: asyncio.Task[None] | None = None
        self.sent = 0

    def record(
        self,
        pod: PodRef,
        container: str,
        type_: str,
        reason: str,
        message: str,
        *,
        init: bool = False,
    ) -> None:
        """Queue an Event about ``pod`` (its ``container``, when not empty)."""
        if len(self._queue) >= self._max_queued:
            return
        key = (pod.uid, container, reason, message)
        stamp = self._clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")
        involved: Obj = {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": pod.name,
            "namespace": pod.namespace,
            "uid": pod.uid,
        }
        if container:
            field = "initContainers" if init else "containers"
            involved["fieldPath"] = f"spec.{field}{{{container}}}"
        body: Obj = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": f"{pod.name}.{uuid.uuid4().hex[:16]}",
                "namespace": pod.namespace,
            },
            "involvedObject": involved,
            "reason": reason,
            "message": message,
            "type": type_,
            "source": {"component": self._component, "host": self._node},
            "reportingComponent": self._component,
            "reportingInstance": self._node,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
        self._queue.append((key, body))
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._send_all())

    def forget(self, uid: str) -> None:
        """The pod is gone: no more aggregation onto its Events."""
        for key in [k for k in self._stored if k[0] == uid]:
            del self._stored[key]

    async def drained(self) -> None:
        """Return once every Event queued so far has been sent (or dropped)."""
        while self._task is not None and not self._task.done():
            await asyncio.gather(self._task, return_exceptions=True)

    def cancel(self) -> None:
        if self._task is not None:
            self._task.cancel()

    async def _send_all(self) -> None:
        while self._queue:
            key, body = self._queue.popleft()
            with contextlib.suppress(errors.ApiError):
                await self._send(key, body)

    async def _send(self, key: tuple[str, ...], body: Obj) -> None:
        namespace = body["metadata"]["namespace"]
        stored = self._stored.get(key)
        try:
            if stored is not None:
                stored.count += 1
                patch = {"count": stored.count, "lastTimestamp": body["lastTimestamp"]}
                try:
                    await self._client.patch(
                        EVENTS, name=stored.name, namespace=namespace, patch=patch
                    )
                    self.sent += 1
                    return
                except errors.NotFoundError:
                    del self._stored[key]  # expired or deleted: write a new one
            await self._client.create(EVENTS, body, namespace=namespace)
            self._stored[key] = _Stored(body["metadata"]["name"], 1)
            self.sent += 1
        except errors.ApiError as exc:
            log.warning("could not record event %s on pod %s: %s", body["reason"], key[0], exc)
            raise
