"""A private event loop on a daemon thread: how the sync SDK drives the async kube client.

``HttpClient`` is asyncio; the SDK and CLI are sync (DESIGN section 3). Rather than a sync twin
of the client, each ``TrainingClient`` owns one ``LoopThread``: ``call`` runs a coroutine on it
and waits for the result (with an optional timeout), ``iterate`` turns an async iterator into a
sync one. Items cross through a ``queue.Queue``; an error raised on the loop is re-raised in the
caller's thread unchanged (its cause chain intact). Leaving an ``iterate`` loop early, or its
timeout, cancels the producer on the loop, so no stream outlives its consumer.

Callbacks and user code never run on the loop thread, so they may call the SDK again.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import queue
import threading
import time
from collections.abc import AsyncIterator, Coroutine, Iterator
from typing import Any, TypeVar

from trainop.sdk.errors import WaitTimeoutError

T = TypeVar("T")
_END = object()


class LoopThread:
    """One event loop running on its own daemon thread until ``close``."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="trainop-sdk-loop", daemon=True
        )
        self._thread.start()

    def call(self, coro: Coroutine[Any, Any, T], *, timeout: float | None = None) -> T:
        """Run ``coro`` on the loop and return its result; ``WaitTimeoutError`` past ``timeout``."""
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError as exc:
            future.cancel()
            raise WaitTimeoutError(f"no answer within {timeout}s") from exc

    def iterate(self, source: AsyncIterator[T], *, timeout: float | None = None) -> Iterator[T]:
        """The items of ``source`` as they arrive; ``WaitTimeoutError`` past ``timeout``."""
        items: queue.Queue[tuple[object, Any]] = queue.Queue()
        future = asyncio.run_coroutine_threadsafe(_pump(source, items), self._loop)
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while True:
                remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
                try:
                    tag, value = items.get(timeout=remaining)
                except queue.Empty as exc:
                    raise WaitTimeoutError(f"not finished within {timeout}s") from exc
                if tag is _END:
                    return
                if isinstance(value, BaseException):
                    raise value
                yield value
        finally:
            future.cancel()

    def close(self) -> None:
        """Stop the loop and its thread (pending work is cancelled)."""
        if self._loop.is_closed():
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        with contextlib.suppress(RuntimeError):
            self._loop.close()


async def _pump(source: AsyncIterator[T], items: queue.Queue[tuple[object, Any]]) -> None:
    """Move ``source``'s items into ``items``; an error travels as the last item."""
    try:
        async for item in source:
            items.put((None, item))
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # handed to the consumer thread, which re-raises it
        items.put((None, exc))
    else:
        items.put((_END, None))
    finally:
        closer = getattr(source, "aclose", None)
        if closer is not None:
            with contextlib.suppress(Exception):
                await closer()
