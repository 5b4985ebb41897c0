"""The work queue between event handlers and reconcile workers.

Semantics (controller-runtime's, in asyncio):
- a key is queued at most once however often it is added (de-duplication);
- a key being reconciled is never handed to a second worker; adds during processing are
  remembered and the key is queued again when ``done`` is called (≤ 1 reconcile per job);
- ``add_after`` delays an add (the earliest pending deadline of a key wins);
- ``add_rate_limited`` delays by the key's exponential backoff (``base_delay * 2**failures``,
  capped at ``max_delay``); ``forget`` resets it after a success.
Time comes from an injected ``Clock``. ``depth`` feeds the queue-depth metric; with
``metrics`` the queue also keeps client-go's workqueue metrics as client-go counts them: an add
of a key that is not already waiting counts (``workqueue_adds_total``, depth +1) and starts its
wait, ``get`` ends it (``workqueue_queue_duration_seconds``) and starts the work, ``done`` ends
that (``workqueue_work_duration_seconds``), ``add_rate_limited`` is a retry. Durations are
measured with ``monotonic`` (real time even under a fake ``Clock``).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable

from trainop.controller.metrics import QueueMetrics
from trainop.kube.clock import Clock, Timer


class ShutDownError(Exception):
    """``get`` was called on (or was waiting when) the queue shut down."""


class WorkQueue:
    """De-duplicating, delaying, rate-limited queue of reconcile keys (strings)."""

    def __init__(
        self,
        *,
        clock: Clock,
        base_delay: float = 0.005,
        max_delay: float = 300.0,
        metrics: QueueMetrics | None = None,
        monotonic: Callable[[], float] = time.perf_counter,
    ):
        self._clock = clock
        self._metrics = metrics
        self._monotonic = monotonic
        self._added_at: dict[str, float] = {}
        self._started_at: dict[str, float] = {}
        self._base_delay = base_delay
        self._max_delay = max_delay
        self._queue: deque[str] = deque()
        self._dirty: set[str] = set()
        self._processing: set[str] = set()
        self._failures: dict[str, int] = {}
        self._timers: dict[str, tuple[float, Timer]] = {}
        self._ready = asyncio.Event()
        self._shut_down = False

    @property
    def depth(self) -> int:
        """Keys waiting to be handed to a worker."""
        return len(self._queue)

    @property
    def in_flight(self) -> int:
        """Keys handed to a worker and not yet ``done``."""
        return len(self._processing)

    def progress(self) -> tuple[float, float]:
        """Seconds of work in progress: summed over the keys being processed, and the longest
        (client-go's unfinished-work gauges; needs ``metrics``, else always zero)."""
        now = self._monotonic()
        running = [now - started for started in self._started_at.values()]
        return sum(running), max(running, default=0.0)

    def add(self, key: str) -> None:
        if self._shut_down or key in self._dirty:
            return
        self._dirty.add(key)
        if self._metrics is not None:
            self._metrics.adds.inc()
            self._metrics.depth.set(len(self._dirty))
            self._added_at.setdefault(key, self._monotonic())
        if key not in self._processing:
            self._queue.append(key)
            self._ready.set()

    def add_after(self, key: str, delay: float) -> None:
        """Add ``key`` after ``delay`` seconds, unless an earlier add is already pending."""
        if delay <= 0:
            self.add(key)
            return
        due = self._clock.now().timestamp() + delay
        pending = self._timers.get(key)
        if pending is not None and pending[0] <= due:
            return
        if pending is not None:
            pending[1].cancel()
        timer = self._clock.call_later(delay, lambda: self._fire(key))
        self._timers[key] = (due, timer)

    def add_rate_limited(self, key: str) -> float:
        """Add ``key`` after its backoff; returns the delay used."""
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        if self._metrics is not None:
            self._metrics.retries.inc()
        delay = min(self._max_delay, self._base_delay * (1 << min(failures, 40)))
        self.add_after(key, delay)
        return delay

    def forget(self, key: str) -> None:
        """Reset the backoff of ``key`` (after a successful reconcile)."""
        self._failures.pop(key, None)

    def failures(self, key: str) -> int:
        return self._failures.get(key, 0)

    async def get(self) -> str:
        """The next key to reconcile; the caller must call ``done(key)`` afterwards."""
        while not self._queue:
            if self._shut_down:
                raise ShutDownError
            self._ready.clear()
            await self._ready.wait()
        key = self._queue.popleft()
        self._processing.add(key)
        self._dirty.discard(key)
        if self._metrics is not None:
            now = self._monotonic()
            self._metrics.depth.set(len(self._dirty))
            self._metrics.queue_duration.observe(now - self._added_at.pop(key, now))
            self._started_at[key] = now
        return key

    def done(self, key: str) -> None:
        self._processing.discard(key)
        started = self._started_at.pop(key, None)
        if self._metrics is not None and started is not None:
            self._metrics.work_duration.observe(self._monotonic() - started)
        if key in self._dirty:
            self._queue.append(key)
            self._ready.set()

    def shut_down(self) -> None:
        """Stop handing out keys; waiting ``get`` calls raise ``ShutDownError``."""
        self._shut_down = True
        for _, timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        self._ready.set()

    def _fire(self, key: str) -> None:
        self._timers.pop(key, None)
        self.add(key)
