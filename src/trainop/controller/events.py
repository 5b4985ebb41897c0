"""Kubernetes Events recorded on jobs, as upstream's controllers record them.

``EventRecorder.record`` writes a core/v1 Event whose ``involvedObject`` is the job and whose
``source.component`` is the kind's controller name (``pytorchjob-controller`` ...). Recording is
best effort: a failure is logged once here and never fails a reconcile.

With ``background=True`` (what the manager uses) ``record`` only queues the Event and returns,
as client-go's recorder hands events to its broadcaster: the reconcile does not wait for Event
writes, which are half of the API writes of a job that starts (benchmarks/controller.py).
``run`` sends the queue with ``senders`` concurrent requests until cancelled; when
``max_queued`` Events wait, ``record`` waits too (back-pressure; client-go drops instead).
Events still queued when the recorder is cancelled are lost, as with client-go.
"""

from __future__ import annotations

import asyncio
import logging
import uuid

from trainop import errors
from trainop.engine.actions import Event
from trainop.kube.client import Client, Obj
from trainop.kube.clock import Clock
from trainop.kube.resources import EVENTS

log = logging.getLogger(__name__)


class EventRecorder:
    """Writes Events through a client; see the module docstring."""

    def __init__(
        self,
        *,
        client: Client,
        clock: Clock,
        background: bool = False,
        senders: int = 4,
        max_queued: int = 1000,
    ) -> None:
        self._client = client
        self._clock = clock
        self._senders = max(1, senders)
        self._queue: asyncio.Queue[Obj] | None = (
            asyncio.Queue(maxsize=max_queued) if background else None
        )
        self.recorded = 0

    async def record(self, job: Obj, event: Event, *, component: str) -> None:
        """Write (or, in the background mode, queue) an Event about ``job``."""
        body = self._body(job, event, component)
        if self._queue is None:
            await self._send(body)
        else:
            await self._queue.put(body)

    async def run(self) -> None:
        """Send queued Events until cancelled (background mode only; otherwise returns)."""
        if self._queue is not None:
            await asyncio.gather(*(self._sender(self._queue) for _ in range(self._senders)))

    async def drained(self) -> None:
        """Return once every Event queued so far has been sent (or has failed)."""
        if self._queue is not None:
            await self._queue.join()

    async def _sender(self, queue: asyncio.Queue[Obj]) -> None:
        while True:
            body = await queue.get()
            try:
                await self._send(body)
            finally:
                queue.task_done()

    def _body(self, job: Obj, event: Event, component: str) -> Obj:
        meta = job["metadata"]
        stamp = self._clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")
        body: Obj = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": f"{meta['name']}.{uuid.uuid4().hex[:16]}",
                "namespace": meta.get("namespace", "default"),
            },
            "involvedObject": {
                "apiVersion": job.get("apiVersion"),
                "kind": job.get("kind"),
                "name": meta["name"],
                "namespace": meta.get("namespace"),
                "uid": meta.get("uid"),
                "resourceVersion": meta.get("resourceVersion"),
            },
            "reason": event.reason,
            "message": event.message,
            "type": event.type,
            "source": {"component": component},
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
        return body

    async def _send(self, body: Obj) -> None:
        try:
            await self._client.create(EVENTS, body, namespace=body["metadata"]["namespace"])
        except errors.ApiError as exc:
            name = body["involvedObject"]["name"]
            log.warning("could not record event %s on %s: %s", body["reason"], name, exc)
            return
        self.recorded += 1
