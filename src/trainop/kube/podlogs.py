"""Pod logs as the API server reads them from a kubelet: ``LogLine``, ``LogRef``, ``LogSource``.

The API server does not run containers: it serves ``/log`` (``cluster.apiserver.rest.logs``)
from a ``LogSource`` that the session wires in, as kube-apiserver reaches a kubelet. The kubelet
implements it over its log files (``cluster.kubelet.logfiles``); ``MemoryLogSource`` backs tests
and the standalone server. A source yields ``LogLine`` values (timestamp plus the line's bytes)
and, with ``follow``, keeps yielding until the container stops.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol


@dataclass(frozen=True, slots=True)
class LogLine:
    """One line of container output, with the time it was written (UTC)."""

    time: datetime
    text: bytes


@dataclass(frozen=True, slots=True)
class LogRef:
    """Which log: a container of a pod, its current or previous instance."""

    namespace: str
    pod: str
    container: str
    previous: bool = False


class LogSource(Protocol):
    """Where container logs come from (the kubelet's side of ``/log``)."""

    def has_log(self, ref: LogRef) -> bool:
        """Whether there is any log for ``ref`` (a previous instance may not exist)."""
        ...

    def lines(self, ref: LogRef, *, follow: bool) -> AsyncIterator[LogLine]:
        """Yield the log's lines; with ``follow``, keep yielding until the container stops."""
        ...


@dataclass(slots=True)
class _Log:
    lines: list[LogLine] = field(default_factory=list)
    closed: bool = False
    changed: asyncio.Event = field(default_factory=asyncio.Event)


class MemoryLogSource:
    """A ``LogSource`` held in memory: tests write lines and close containers explicitly."""

    def __init__(self) -> None:
        self._logs: dict[LogRef, _Log] = {}

    def _log(self, ref: LogRef) -> _Log:
        return self._logs.setdefault(ref, _Log())

    def write(self, ref: LogRef, text: str, *, at: datetime | None = None) -> None:
        """Append one line (a newline is added when missing)."""
        data = text if text.endswith("\n") else text + "\n"
        log = self._log(ref)
        log.lines.append(LogLine(time=at or datetime.now(UTC), text=data.encode()))
        log.changed.set()

    def close(self, ref: LogRef) -> None:
        """Mark the container stopped: followers finish after the last line."""
        log = self._log(ref)
        log.closed = True
        log.changed.set()

    def has_log(self, ref: LogRef) -> bool:
        """Whether anything was ever written or closed for ``ref``."""
        return ref in self._logs or not ref.previous

    async def lines(self, ref: LogRef, *, follow: bool) -> AsyncIterator[LogLine]:
        """Yield stored lines, then (following) new ones until ``close``."""
        log = self._log(ref)
        sent = 0
        while True:
            log.changed.clear()
            while sent < len(log.lines):
                yield log.lines[sent]
                sent += 1
            if not follow or log.closed:
                return
            await log.changed.wait()
