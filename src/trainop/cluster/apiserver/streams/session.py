"""One ``pods/exec``: its stdio, the kubelet's exec endpoint, and the copying between them and
the WebSocket (``channels``' protocol).

The command runs in the kubelet that runs the pod, through its exec endpoint
(``cluster/kubelet/exec/execserver``: an abstract Unix socket of the same user, published on
the Node, ``streams.ANNOTATION``). ``ExecSession`` makes the stdio: pipes, or with
``tty=true`` a pseudo terminal whose resize messages become ``TIOCSWINSZ``; it hands the far
ends to the kubelet with the request and copies between the near ends and the WebSocket. The
WebSocket closing first kills the command (the kubelet does so when its connection closes);
the container stopping does too (``_until_stopped``). ``connect`` is the endpoint's
connection, shared with ``attach -i`` (``attach``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pty
import socket
from collections.abc import Callable
from typing import Any

from aiohttp import WSMsgType, web

from trainop.cluster.apiserver.streams import channels
from trainop.cluster.apiserver.streams.channels import CLOSE, RESIZE, STDERR, STDIN, STDOUT

_CHUNK = 32 * 1024
_POLL = 1.0  # seconds between checks that the container still runs
_DRAIN = 2.0  # seconds to wait for output still in the pipes once the command has exited


async def connect(address: str) -> socket.socket:
    """A connection to the kubelet's exec endpoint at ``address`` (``@name``: an abstract
    socket); ``OSError`` when it cannot be reached."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        target = "\0" + address[1:] if address.startswith("@") else address
        await asyncio.get_running_loop().run_in_executor(None, conn.connect, target)
    except OSError:
        conn.close()
        raise
    return conn


class ExecSession:
    """One exec: the stdio file descriptors and the copying between them and the WebSocket."""

    def __init__(
        self, ws: web.WebSocketResponse, *, v5: bool, tty: bool, stdin: bool, stderr: bool
    ) -> None:
        self.ws = ws
        self.v5 = v5
        self.tty = tty
        self._mine: list[int] = []  # our ends, closed at the end
        self._theirs: list[int] = []  # the command's ends, closed once handed over
        self._stdin_fd = -1
        self._outputs: list[tuple[int, int]] = []  # (fd, channel)
        self._master = -1
        devnull = os.open(os.devnull, os.O_RDWR)
        self._theirs.append(devnull)
        if tty:
            master, slave = pty.openpty()
            self._master = master
            self._mine.append(master)
            self._theirs.append(slave)
            self.child_fds = [slave, slave, slave]
            self._stdin_fd = master if stdin else -1
            self._outputs.append((master, STDOUT))
            return
        fds = [devnull, devnull, devnull]
        if stdin:
            read_end, write_end = os.pipe()
            self._mine.append(write_end)
            self._theirs.append(read_end)
            fds[0], self._stdin_fd = read_end, write_end
        for index, channel, wanted in ((1, STDOUT, True), (2, STDERR, stderr)):
            if not wanted:
                continue
            read_end, write_end = os.pipe()
            self._mine.append(read_end)
            self._theirs.append(write_end)
            fds[index] = write_end
            self._outputs.append((read_end, channel))
        self.child_fds = fds

    async def send(self, channel: int, data: bytes) -> None:
        if not self.ws.closed:
            with contextlib.suppress(ConnectionError, RuntimeError):
                await self.ws.send_bytes(bytes([channel]) + data)

    def close_fds(self) -> None:
        for fd in {*self._mine, *self._theirs}:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._mine.clear()
        self._theirs.clear()

    def _handed_over(self) -> None:
        for fd in set(self._theirs):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._theirs.clear()

    async def run(
        self, address: str, request: dict[str, Any], *, running: Callable[[], bool]
    ) -> dict[str, Any]:
        """Start the command in the kubelet, copy until it ends; the Status to send.

        A command on a terminal has left the container's process group (so that ^C works),
        so it does not die with the container by itself: once ``running`` says the container
        has stopped, the kubelet is told to kill it, as the container's end would have."""
        loop = asyncio.get_running_loop()
        try:
            conn = await connect(address)
        except OSError as exc:
            return channels.failure(f"cannot reach the kubelet's exec endpoint: {exc}")
        try:
            try:
                payload = json.dumps(request).encode() + b"\n"
                await loop.run_in_executor(None, socket.send_fds, conn, [payload], self.child_fds)
            except OSError as exc:
                return channels.failure(f"cannot reach the kubelet's exec endpoint: {exc}")
            self._handed_over()
            conn.setblocking(False)
            answer = await self._copy(conn, running)
        finally:
            conn.close()
        if answer is None:
            return channels.failure("the client closed the stream")
        if "error" in answer:
            return channels.failure(str(answer["error"]))
        return channels.exit_status(int(answer.get("exitCode", 1)))

    async def _copy(
        self, conn: socket.socket, running: Callable[[], bool]
    ) -> dict[str, Any] | None:
        """Copy until the kubelet answers (its answer) or the client goes away (None:
        closing the connection then kills the command)."""
        pumps = [asyncio.ensure_future(self._pump(fd, channel)) for fd, channel in self._outputs]
        feeder = asyncio.ensure_future(self._feed())
        reply = asyncio.ensure_future(_read_reply(conn))
        watcher = asyncio.ensure_future(_until_stopped(running, conn))
        pumps.append(watcher)  # cancelled with the pumps
        try:
            await asyncio.wait([reply, feeder], return_when=asyncio.FIRST_COMPLETED)
            if not reply.done():
                return None
            answer = reply.result()
            watcher.cancel()
            outputs = [p for p in pumps if p is not watcher]
            if outputs:
                await asyncio.wait(outputs, timeout=_DRAIN)
            return answer
        finally:
            for task in (*pumps, feeder, reply):
                task.cancel()
            await asyncio.gather(*pumps, feeder, reply, return_exceptions=True)

    async def _pump(self, fd: int, channel: int) -> None:
        loop = asyncio.get_running_loop()
        os.set_blocking(fd, False)
        while True:
            readable: asyncio.Future[None] = loop.create_future()
            loop.add_reader(fd, channels.resolve, readable)
            try:
                await readable
            finally:
                loop.remove_reader(fd)
            try:
                data = os.read(fd, _CHUNK)
            except BlockingIOError:
                continue
            except OSError:  # EIO: the terminal's last user is gone
                return
            if not data:
                return
            await self.send(channel, data)

    async def _feed(self) -> None:
        """WebSocket → stdin and resizes; returns when the client closes the WebSocket."""
        async for msg in self.ws:
            if msg.type != WSMsgType.BINARY or not msg.data:
                continue
            channel, data = msg.data[0], msg.data[1:]
            if channel == STDIN and self._stdin_fd >= 0 and data:
                await channels.write_all(self._stdin_fd, data)
            elif channel == RESIZE and self._master >= 0:
                channels.resize(self._master, data)
            elif channel == CLOSE and self.v5 and data[:1] == bytes([STDIN]):
                self._close_stdin()

    def _close_stdin(self) -> None:
        if self._stdin_fd < 0:
            return
        if self.tty:  # a terminal has no end-of-file of its own: send ^D
            with contextlib.suppress(OSError):
                os.write(self._stdin_fd, b"\x04")
            return
        with contextlib.suppress(OSError):
            os.close(self._stdin_fd)
        self._mine.remove(self._stdin_fd)
        self._stdin_fd = -1


async def _until_stopped(running: Callable[[], bool], conn: socket.socket) -> None:
    """Poll ``running`` every ``_POLL`` seconds; when it turns False, hang up on the kubelet
    (half-close: it kills the command and still answers with its exit code)."""
    was_running = False
    while True:
        await asyncio.sleep(_POLL)
        now_running = running()
        if was_running and not now_running:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_WR)
            return
        was_running = was_running or now_running


async def _read_reply(conn: socket.socket) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    data = b""
    while not data.endswith(b"\n"):
        chunk = await loop.sock_recv(conn, 65536)
        if not chunk:
            return {"error": "the kubelet closed the exec connection"}
        data += chunk
    answer = json.loads(data)
    return answer if isinstance(answer, dict) else {"error": "a bad answer from the kubelet"}
