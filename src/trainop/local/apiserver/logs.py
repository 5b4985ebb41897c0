"""Pod logs: the ``LogSource`` protocol a kubelet provides, an in-memory one, and ``/log``.

The API server does not run containers, so it serves ``GET .../pods/NAME/log`` from a
``LogSource``: the process kubelet will implement it over its log files; ``MemoryLogSource``
here backs tests and the standalone server. A source yields ``LogLine`` values (timestamp
plus the line's bytes) and, with ``follow``, keeps yielding until the container stops.

The handler applies kube-apiserver's rules: ``container`` may be omitted only for a
one-container pod (else 400 naming the choices), an unknown container is a 400, ``previous``
without a previous instance a 400, ``tailLines``/``limitBytes``/``timestamps`` shape the
output, and the response is ``text/plain``, streamed chunk by chunk when following.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Protocol

from aiohttp import web

from . import status
from .call import ApiState, Call


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


def _container(call: Call, pod: dict[str, object]) -> str:
    spec = pod.get("spec")
    names = (
        [c.get("name") for c in (spec.get("containers") or [])] if isinstance(spec, dict) else []
    )
    inits = (
        [c.get("name") for c in (spec.get("initContainers") or [])]
        if isinstance(spec, dict)
        else []
    )
    wanted = call.query.get("container")
    if not wanted:
        if len(names) != 1:
            raise status.bad_request(
                f"a container name must be specified for pod {call.name}, choose one of: "
                f"[{' '.join(str(n) for n in names)}]"
            )
        return str(names[0])
    if wanted not in names and wanted not in inits:
        raise status.bad_request(f"container {wanted} is not valid for pod {call.name}")
    return wanted


def _format(line: LogLine, *, timestamps: bool) -> bytes:
    if not timestamps:
        return line.text
    stamp = line.time.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return stamp.encode() + b" " + line.text


async def serve(state: ApiState, call: Call) -> web.StreamResponse:
    """GET .../pods/NAME/log."""
    pod = state.store.get(call.key())
    if pod is None:
        raise status.not_found(call.rt, call.name or "")
    ref = LogRef(
        namespace=call.namespace or "",
        pod=call.name or "",
        container=_container(call, pod.obj),
        previous=call.flag("previous"),
    )
    if not state.log_source.has_log(ref):
        raise status.bad_request(
            f'previous terminated container "{ref.container}" in pod "{ref.pod}" not found'
        )
    follow, stamps = call.flag("follow"), call.flag("timestamps")
    tail, limit = call.integer("tailLines"), call.integer("limitBytes")
    since = _since(call, state.clock())
    resp = web.StreamResponse(headers={"Content-Type": "text/plain"})
    resp.enable_chunked_encoding()
    await resp.prepare(call.request)
    sent = 0
    async for chunk in _chunks(state, ref, follow=follow, tail=tail, stamps=stamps, since=since):
        if limit is not None and sent + len(chunk) > limit:
            await resp.write(chunk[: limit - sent])
            break
        sent += len(chunk)
        await resp.write(chunk)
    return resp


def _since(call: Call, now: datetime) -> datetime | None:
    """The earliest line time ``sinceSeconds``/``sinceTime`` asks for (at most one of them)."""
    seconds, text = call.integer("sinceSeconds"), call.query.get("sinceTime")
    if seconds is not None and text:
        raise status.bad_request("at most one of `sinceTime` or `sinceSeconds` may be specified")
    if seconds is not None:
        if seconds < 1:
            raise status.RequestError(
                f'PodLogOptions "{call.name}" is invalid: sinceSeconds: Invalid value: '
                f"{seconds}: must be greater than 0",
                status=422,
                reason="Invalid",
            )
        return now - timedelta(seconds=seconds)
    if not text:
        return None
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise status.bad_request(f'parsing time "{text}" as RFC3339: {exc}') from exc
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


async def _recent(
    state: ApiState, ref: LogRef, *, follow: bool, since: datetime | None
) -> AsyncIterator[LogLine]:
    async for line in state.log_source.lines(ref, follow=follow):
        if since is None or line.time >= since:
            yield line


async def _chunks(
    state: ApiState,
    ref: LogRef,
    *,
    follow: bool,
    tail: int | None,
    stamps: bool,
    since: datetime | None,
) -> AsyncIterator[bytes]:
    if tail is not None:
        history = [line async for line in _recent(state, ref, follow=False, since=since)]
        kept = history[-tail:] if tail > 0 else []
        for line in kept:
            yield _format(line, timestamps=stamps)
        if not follow:
            return
        skip = len(history)
    else:
        skip = 0
    seen = 0
    async for line in _recent(state, ref, follow=follow, since=since):
        seen += 1
        if seen > skip:
            yield _format(line, timestamps=stamps)
