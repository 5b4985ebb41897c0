"""Time for the controller runtime, injected so tests run backoffs and deadlines instantly.

``Clock.now()`` is the wall time handed to the pure engine (``engine.plan(..., now)``);
``Clock.call_later`` schedules a callback on the event loop. ``LoopClock`` is the real one;
``FakeClock`` moves only when a test calls ``advance``, firing due callbacks in time order.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Timer(Protocol):
    def cancel(self) -> None: ...


class Clock(Protocol):
    def now(self) -> datetime:
        """The current wall time (UTC)."""
        ...

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        """Run ``callback`` after ``delay`` seconds (at once when ``delay <= 0``)."""
        ...

    async def sleep(self, delay: float) -> None:
        """Wait ``delay`` seconds of this clock's time."""
        ...


class LoopClock:
    """The real clock: wall time from the system, timers on the running event loop."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        return asyncio.get_running_loop().call_later(max(delay, 0.0), callback)

    async def sleep(self, delay: float) -> None:
        await asyncio.sleep(max(delay, 0.0))


@dataclass(order=True)
class _Scheduled:
    due: float
    sequence: int
    callback: Callable[[], None] = field(compare=False)
    cancelled: bool = field(default=False, compare=False)

    def cancel(self) -> None:
        self.cancelled = True


class FakeClock:
    """A clock that only moves when told to; for tests."""

    def __init__(self, start: datetime = datetime(2026, 1, 1, tzinfo=UTC)) -> None:
        self._start = start
        self._elapsed = 0.0
        self._timers: list[_Scheduled] = []
        self._sequence = itertools.count()

    def now(self) -> datetime:
        return self._start + timedelta(seconds=self._elapsed)

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        timer = _Scheduled(self._elapsed + max(delay, 0.0), next(self._sequence), callback)
        heapq.heappush(self._timers, timer)
        return timer

    async def sleep(self, delay: float) -> None:
        """Resolves when ``advance`` moves time past ``delay`` from now."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def wake() -> None:
            if not done.done():
                done.set_result(None)

        self.call_later(delay, wake)
        await done

    def advance(self, seconds: float) -> None:
        """Move time forward, firing every timer that falls due, in order."""
        target = self._elapsed + seconds
        while self._timers and self._timers[0].due <= target:
            timer = heapq.heappop(self._timers)
            self._elapsed = max(self._elapsed, timer.due)
            if not timer.cancelled:
                timer.callback()
        self._elapsed = target

    @property
    def pending(self) -> int:
        """Timers not yet fired or cancelled."""
        return sum(not t.cancelled for t in self._timers)
