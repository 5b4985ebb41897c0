"""Polling with a deadline: the one way a test waits for a state (STYLE.md, Tests).

``wait_for`` (sync) and ``until`` (async) call ``probe`` until it returns something truthy
and return that value. When ``timeout`` seconds pass first they raise ``AssertionError``
naming ``what`` and the probe's last value, so a failure shows how far the system got.

The contract of a probe: it returns a value and never raises to mean "not yet" (it catches
the error it expects, e.g. NotFound, and returns something falsy). A probe that wants the
failure message to show what it saw returns ``NotYet(seen)``, which is falsy. ``until`` also
takes a probe that returns an awaitable (an ``async def``) and bounds that await by the same
deadline.

Neighbours: the harnesses in ``tests/integration`` and ``tests/unit`` wrap these with their
own reads (a pod, a job's condition). Absence is never shown by polling or sleeping: await
the component's ``drained()`` (kubelets, status writers, event recorders) or move a
``FakeClock``, then assert.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")

_LONGEST = 2000  # characters of the last value shown in a failure


@dataclass(frozen=True)
class NotYet:
    """A probe's "not yet" that carries what it saw, for the failure message; always falsy."""

    seen: object

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return repr(self.seen)


def wait_for(
    probe: Callable[[], T],
    *,
    timeout: float,
    what: str = "the condition",
    interval: float = 0.05,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Call ``probe`` every ``interval`` seconds until its value is truthy; return that value.

    Raises ``AssertionError`` (with ``what`` and the last value) once ``timeout`` seconds of
    ``clock`` have passed without a truthy value; the probe runs at least once. ``clock`` and
    ``sleep`` are injectable for tests of this helper."""
    deadline = clock() + timeout
    while True:
        value = probe()
        if value:
            return value
        if clock() >= deadline:
            raise AssertionError(_failure(what, timeout, value))
        sleep(interval)


async def until(
    probe: Callable[[], Awaitable[T]] | Callable[[], T],
    *,
    timeout: float,
    what: str = "the condition",
    interval: float = 0.01,
) -> T:
    """Await ``probe`` (or call it, when it returns a plain value) every ``interval`` seconds
    until its value is truthy; return that value.

    Raises ``AssertionError`` (with ``what`` and the last value) once ``timeout`` seconds of
    the event loop have passed, also when a probe's await is still in flight then."""
    last: Any = NotYet("no answer yet")
    scope = asyncio.timeout(timeout)
    try:
        async with scope:
            while True:
                value = probe()
                last = await value if inspect.isawaitable(value) else value
                if last:
                    return last  # type: ignore[no-any-return]
                await asyncio.sleep(interval)
    except TimeoutError:
        if not scope.expired():
            raise  # the probe's own timeout, not the deadline
        raise AssertionError(_failure(what, timeout, last)) from None


def _failure(what: str, timeout: float, last: object) -> str:
    shown = repr(last)
    if len(shown) > _LONGEST:
        shown = shown[:_LONGEST] + f"... ({len(shown)} characters)"
    return f"{what}: not true within {timeout:g} s; last value: {shown}"
