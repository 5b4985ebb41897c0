"""Kubernetes Events recorded on jobs, as upstream's controllers record them.

``EventRecorder.record`` writes a core/v1 Event whose ``involvedObject`` is the job and whose
``source.component`` is the kind's controller name (``pytorchjob-controller`` ...). Recording is
best effort: a failure is logged once here and never fails a reconcile.
"""

from __future__ import annotations

import logging
import uuid

from trainop import errors
from trainop.controller.clock import Clock
from trainop.engine.actions import Event
from trainop.kube.client import Client, Obj
from trainop.kube.resources import EVENTS

log = logging.getLogger(__name__)


class EventRecorder:
    """Writes Events through a client; see the module docstring."""

    def __init__(self, *, client: Client, clock: Clock) -> None:
        self._client = client
        self._clock = clock
        self.recorded = 0

    async def record(self, job: Obj, event: Event, *, component: str) -> None:
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
        try:
            await self._client.create(EVENTS, body, namespace=body["metadata"]["namespace"])
        except errors.ApiError as exc:
            log.warning("could not record event %s on %s: %s", event.reason, meta["name"], exc)
            return
        self.recorded += 1
