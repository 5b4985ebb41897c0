"""Ordered, bounded writes of pod status (and the final delete) to the API server.

Each pod has a FIFO of pending writes, sent one at a time and in order by a short-lived task
that exists only while the FIFO is not empty; ``max_concurrent`` bounds the requests in flight
across all pods, so 4,000 pods changing at once never open 4,000 connections. Nothing is
coalesced: one transition, one request (``sent`` counts them by verb).

A write whose pod is no longer wanted (``is_wanted(key, uid)`` is False: deleted, or replaced
by a new pod of the same name) is dropped unsent, and a 404 or 409 drops it too, so a deleted
pod is never written again. Other API errors are retried after an exponential back-off timed
by the injected clock. Neighbours: the kubelets (``sim``, ``kubelet``: they enqueue),
``kube.client.Client`` (sends).
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from trainop import errors
from trainop.kube.client import Client
from trainop.kube.clock import Clock
from trainop.kube.resources import PODS

log = logging.getLogger(__name__)

Key = tuple[str, str]  # (namespace, name)
IsWanted = Callable[[Key, str], bool]


@dataclass(frozen=True, slots=True)
class _Write:
    uid: str
    status: dict[str, Any] | None  # None: delete the pod


class StatusWriter:
    """Per-pod ordered write queues (see the module docstring)."""

    def __init__(
        self, client: Client, clock: Clock, *, is_wanted: IsWanted, max_concurrent: int = 32
    ) -> None:
        self._client = client
        self._clock = clock
        self._is_wanted = is_wanted
        self._limit = asyncio.Semaphore(max_concurrent)
        self._queues: dict[Key, deque[_Write]] = {}
        self._failures: dict[Key, int] = {}
        self._tasks: dict[Key, asyncio.Task[None]] = {}
        self.sent: Counter[str] = Counter()

    def patch_status(self, key: Key, uid: str, status: dict[str, Any]) -> None:
        """Queue a merge patch of the pod's ``status`` subresource."""
        self._enqueue(key, _Write(uid, status))

    def delete(self, key: Key, uid: str) -> None:
        """Queue the final delete (with a uid precondition) of a pod being deleted."""
        self._enqueue(key, _Write(uid, None))

    @property
    def pending(self) -> int:
        """Writes queued or in flight."""
        return sum(len(q) for q in self._queues.values())

    async def drained(self) -> None:
        """Return once no write task is running (retries waiting on the clock excepted)."""
        while self._tasks:
            await asyncio.gather(*self._tasks.values(), return_exceptions=True)

    def cancel(self) -> None:
        """Stop every write task (the kubelet is stopping)."""
        for task in self._tasks.values():
            task.cancel()

    def _enqueue(self, key: Key, write: _Write) -> None:
        self._queues.setdefault(key, deque()).append(write)
        self._kick(key)

    def _kick(self, key: Key) -> None:
        if key in self._tasks or not self._queues.get(key):
            return
        task = asyncio.get_running_loop().create_task(self._drain(key))
        self._tasks[key] = task
        task.add_done_callback(lambda _: self._done(key))

    def _done(self, key: Key) -> None:
        task = self._tasks.pop(key)
        if not self._queues.get(key):
            self._queues.pop(key, None)
        elif not task.cancelled() and not self._failures.get(key):
            self._kick(key)  # queued after the task's last look at its queue

    async def _drain(self, key: Key) -> None:
        queue = self._queues[key]
        while queue:
            write = queue[0]
            if self._is_wanted(key, write.uid):
                try:
                    async with self._limit:
                        await self._send(key, write)
                except (errors.NotFoundError, errors.ConflictError):
                    pass  # the pod is gone or replaced: never write it again
                except errors.ApiError as exc:
                    self._retry_later(key, exc)
                    return
            queue.popleft()
            self._failures.pop(key, None)

    async def _send(self, key: Key, write: _Write) -> None:
        namespace, name = key
        if write.status is None:
            self.sent["delete"] += 1
            await self._client.delete(
                PODS, name=name, namespace=namespace, preconditions_uid=write.uid
            )
            return
        self.sent["patch"] += 1
        await self._client.patch(
            PODS,
            name=name,
            namespace=namespace,
            patch={"status": write.status},
            subresource="status",
        )

    def _retry_later(self, key: Key, exc: errors.ApiError) -> None:
        failures = self._failures[key] = self._failures.get(key, 0) + 1
        delay = min(5.0, 0.1 * 2**failures)
        log.warning("writing pod %s/%s failed (retry in %.1fs): %s", *key, delay, exc)
        self._clock.call_later(delay, lambda: self._kick(key))
