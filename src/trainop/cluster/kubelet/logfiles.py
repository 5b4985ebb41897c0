"""Container logs on disk, and the API server's ``LogSource`` over them.

A container's stdout and stderr are pipes that the kubelet reads (``pump``); every line goes to
``<sandbox>/logs/<container>/<n>.log`` (``n``: the run, i.e. the ``restartCount`` it ran
with) in the CRI log format kubelet uses::

    2026-01-01T10:00:00.123456Z stdout F text of the line

(``F``: a full line; ``P``: part of a line longer than 64 KiB, continued on the next record).
Timestamps are taken when the kubelet reads the line. ``current`` is the highest-numbered
file, ``previous`` the one before it, as ``kubectl logs [--previous]``.

``LogFiles`` is the ``kube.podlogs.LogSource``: the API server may run on another
event loop (or thread) than the kubelet, so followers wait on futures of *their* loop that the
writer wakes with ``call_soon_threadsafe``; a file is "open" (followers keep waiting) while its
process runs and its pipes are not drained. Pods are found through ``register``: the kubelet
names the sandbox of the pod (namespace, name) it runs; after a kubelet restart the newest
sandbox on disk is used.

Writing never stops the reading: when a record cannot be written (``ENOSPC`` on a full disk,
``EIO``, …) the pump keeps draining the container's pipes and drops the records, counting
them; the first record that can be written again is preceded by one marker record (``stderr``:
``[trainop] <n> log lines dropped: <error>``), so no container blocks on a full pipe and
``local down`` stops it as usual. The write function is injectable (``LogFiles(write=...)``)
for tests. A run under a supervisor (note 120) is written by the supervisor, not the kubelet:
its followers look at the file every ``POLL_INTERVAL`` as well. Neighbours: ``podrun``
(pumps), ``cluster.apiserver.rest.logs`` (serves).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from pathlib import Path

from trainop.cluster import privacy
from trainop.cluster.kubelet.sandbox import Sandbox
from trainop.kube.podlogs import LogLine, LogRef

log = logging.getLogger(__name__)

LINE_LIMIT = 64 * 1024
POLL_INTERVAL = 0.25  # a follower's look at a file a supervisor writes (note 120)
Write = Callable[[int, bytes], int]  # as os.write: the number of bytes written, or OSError


class LogSink:
    """One run's log file, open for appending; tracks records dropped while writing fails."""

    def __init__(self, path: Path, write: Write) -> None:
        self.path = path
        self.fd: int | None = None
        self.dropped = 0
        self.error = ""
        self.broken_record = False  # a write stopped inside a record
        self._write = write

    def put(self, record: bytes) -> bool:
        """Write ``record`` (after the marker, if records were dropped); False if dropped."""
        try:
            self.create()
            if self.broken_record:
                self._all(b"\n")
                self.broken_record = False
            if self.dropped:
                self._all(self._marker())
                self.dropped, self.error = 0, ""
            self._all(record)
        except OSError as exc:
            if not self.dropped:
                log.warning("log %s: cannot write (%s); dropping lines", self.path, exc)
            self.dropped += 1
            self.error = self.error or exc.strerror or str(exc)
            return False
        return True

    def create(self) -> None:
        """Open (create) the file if it is not open yet; ``OSError`` when it cannot be."""
        if self.fd is None:
            privacy.private_dirs(self.path.parent)
            self.fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def close(self) -> None:
        if self.fd is not None:
            try:
                os.close(self.fd)
            except OSError as exc:
                log.warning("log %s: %s", self.path, exc)
            self.fd = None

    def _all(self, data: bytes) -> None:
        assert self.fd is not None
        view = memoryview(data)
        while view:
            try:
                written = self._write(self.fd, view.tobytes())
            except OSError:
                self.broken_record = self.broken_record or len(view) < len(data)
                raise
            view = view[written:]

    def _marker(self) -> bytes:
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        text = f"[trainop] {self.dropped} log lines dropped: {self.error}"
        return f"{stamp} stderr F {text}\n".encode()


class LogFiles:
    """Where the logs of every pod of one kubelet are (see the module docstring)."""

    def __init__(self, root: Path, *, write: Write = os.write) -> None:
        self._root = root
        self._write = write
        self._pods: dict[tuple[str, str], Sandbox] = {}
        self._open: set[Path] = set()
        self._lock = threading.Lock()
        self._waiters: dict[Path, list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]]]
        self._waiters = {}

    def register(self, namespace: str, name: str, sandbox: Sandbox) -> None:
        """The pod (namespace, name) now lives in ``sandbox``."""
        with self._lock:
            self._pods[(namespace, name)] = sandbox

    def forget(self, namespace: str, name: str, sandbox: Sandbox) -> None:
        """The pod is gone; its logs are no longer served."""
        with self._lock:
            if self._pods.get((namespace, name)) == sandbox:
                del self._pods[(namespace, name)]

    def open(self, path: Path) -> LogSink:
        """Start a log file (a new run of a container); followers wait for more while open.
        The file is created by the first record (a failure to create it drops records)."""
        with self._lock:
            self._open.add(path)
        sink = LogSink(path, self._write)
        try:
            sink.create()  # now: an empty current log exists while the run starts
        except OSError as exc:  # the first record tries again
            log.warning("log %s: cannot create (%s)", path, exc)
        return sink

    def append(self, path: Path, sink: LogSink, stream: str, data: bytes, *, full: bool) -> None:
        """Write one record (or drop it: see the module docstring) and wake the followers."""
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        if sink.put(f"{stamp} {stream} {'F' if full else 'P'} ".encode() + data + b"\n"):
            self._wake(path)

    def close(self, path: Path, sink: LogSink) -> None:
        """The run ended and its output is all read: followers finish."""
        sink.close()
        with self._lock:
            self._open.discard(path)
        self._wake(path)

    def has_log(self, ref: LogRef) -> bool:
        """Current: always (possibly empty); previous: when an earlier run exists."""
        return not ref.previous or self._path(ref) is not None

    async def lines(self, ref: LogRef, *, follow: bool) -> AsyncIterator[LogLine]:
        """The log's records; with ``follow``, until its run ends."""
        path = self._path(ref)
        if path is None:
            return
        offset = 0
        while True:
            waiter = self._waiter(path) if follow else None
            with self._lock:
                still_open = path in self._open  # before reading: no record written is missed
            records, offset = _read(path, offset)
            for record in records:
                yield record
            if waiter is None or not still_open:
                return
            if not records:  # woken by the kubelet's writes, or polled: a supervisor's
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(waiter), timeout=POLL_INTERVAL)
            self._unwait(path, waiter)

    def _path(self, ref: LogRef) -> Path | None:
        sandbox = self._sandbox(ref.namespace, ref.pod)
        if sandbox is None:
            return None
        runs = sorted(_runs(sandbox.logs(ref.container)))
        wanted = -2 if ref.previous else -1
        if len(runs) < abs(wanted):
            return None
        return sandbox.logs(ref.container) / f"{runs[wanted]}.log"

    def _sandbox(self, namespace: str, name: str) -> Sandbox | None:
        with self._lock:
            known = self._pods.get((namespace, name))
        if known is not None:
            return known
        candidates = [p for p in (self._root / namespace / name).glob("*") if p.is_dir()]
        if not candidates:
            return None
        return Sandbox(max(candidates, key=lambda p: p.stat().st_mtime))

    def _waiter(self, path: Path) -> asyncio.Future[None]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        with self._lock:
            self._waiters.setdefault(path, []).append((loop, future))
        return future

    def _unwait(self, path: Path, waiter: asyncio.Future[None]) -> None:
        with self._lock:
            waiting = self._waiters.get(path, [])
            waiting[:] = [w for w in waiting if w[1] is not waiter]

    def _wake(self, path: Path) -> None:
        with self._lock:
            waiters = self._waiters.pop(path, [])
        for loop, future in waiters:
            loop.call_soon_threadsafe(_resolve, future)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _runs(directory: Path) -> list[int]:
    if not directory.is_dir():
        return []
    return [int(p.stem) for p in directory.glob("*.log") if p.stem.isdigit()]


def _read(path: Path, offset: int) -> tuple[list[LogLine], int]:
    """Complete records from ``offset`` on, and the offset after the last one."""
    try:
        with path.open("rb") as source:
            source.seek(offset)
            data = source.read()
    except FileNotFoundError:
        return [], offset
    records = []
    end = data.rfind(b"\n") + 1
    for raw in data[:end].splitlines():
        record = _parse(raw)
        if record is not None:
            records.append(record)
    return records, offset + end


def _parse(raw: bytes) -> LogLine | None:
    parts = raw.split(b" ", 3)
    if len(parts) < 3:
        return None
    text = parts[3] if len(parts) == 4 else b""
    try:
        time = datetime.strptime(parts[0].decode(), "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    except ValueError:
        return None
    return LogLine(time=time, text=text + b"\n" if parts[2] == b"F" else text)


async def pump(
    logs: LogFiles, path: Path, sink: LogSink, stream: str, reader: asyncio.StreamReader
) -> None:
    """Copy ``reader`` to the log, line by line, until end-of-file."""
    while True:
        try:
            line = await reader.readuntil(b"\n")
            logs.append(path, sink, stream, line[:-1], full=True)
        except asyncio.IncompleteReadError as end:
            if end.partial:
                logs.append(path, sink, stream, end.partial, full=True)
            return
        except asyncio.LimitOverrunError as long:
            chunk = await reader.readexactly(long.consumed)
            if chunk.endswith(b"\n"):
                logs.append(path, sink, stream, chunk[:-1], full=True)
            else:
                logs.append(path, sink, stream, chunk, full=False)
