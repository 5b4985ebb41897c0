"""One ``pods/attach`` once its WebSocket is open (``streams.attach`` checks the request).

The container's output is streamed from now on (from its log, as the process kubelet keeps
no other handle on it) until the container stops. With ``stdin=true`` (``attach -i``,
``run -i``) the kubelet hands over a copy of the container's stdin (``AttachedStdin``: its
exec endpoint's ``attach`` request) and the stdin channel is written to it; the client's close
of stdin, or of the WebSocket, hangs up, and with ``stdinOnce`` the kubelet then closes the
container's stdin (end-of-file); without it, the client's close of stdin ends the attach and
the container's stdin stays open (containerd's behaviour). Neighbours: ``channels`` (the
protocol), ``session.connect`` (the kubelet's endpoint).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
from datetime import UTC, datetime
from typing import Any

from aiohttp import WSMsgType, web

from trainop.cluster.apiserver import store
from trainop.cluster.apiserver.streams import channels, session
from trainop.cluster.apiserver.streams.channels import CLOSE, ERROR, RESIZE, STDIN, STDOUT
from trainop.kube import podlogs


async def relay(
    ws: web.WebSocketResponse,
    logs: podlogs.LogSource,
    ref: podlogs.LogRef,
    stdin: AttachedStdin,
    *,
    address: str,
    request: dict[str, Any],
) -> None:
    """Stream the container's output from now on and feed ``stdin`` (from the kubelet at
    ``address`` with ``request``; "": no stdin) until either ends; the ``Success`` Status
    when the container stopped or the client closed stdin, nothing when the client left."""
    since = datetime.now(UTC)

    async def follow() -> bool:
        async for line in logs.lines(ref, follow=True):
            if line.time >= since:
                await ws.send_bytes(bytes([STDOUT]) + line.text)
        return True

    if address:
        failed = await stdin.open(address, request)
        if failed is not None:
            await ws.send_bytes(bytes([ERROR]) + store.encode(channels.failure(failed)))
            return
    following = asyncio.ensure_future(follow())
    feeding = asyncio.ensure_future(stdin.feed())
    try:
        await asyncio.wait([following, feeding], return_when=asyncio.FIRST_COMPLETED)
    finally:
        stdin.close()
        for task in (following, feeding):
            task.cancel()
        await asyncio.gather(following, feeding, return_exceptions=True)
    ended = [t for t in (following, feeding) if t.done() and not t.cancelled()]
    if any(t.exception() is None and t.result() is not False for t in ended):
        await ws.send_bytes(bytes([ERROR]) + store.encode(channels.exit_status(0)))


class AttachedStdin:
    """``attach -i``: a copy of the container's stdin from the kubelet (its exec endpoint's
    ``attach`` request), fed from the WebSocket's stdin channel. Closing it (the client's
    close of stdin, the WebSocket's end) hangs up on the kubelet, which closes the
    container's stdin when the container has ``stdinOnce``; without it, the client's close of
    stdin ends the attach (containerd then stops copying the output to it too)."""

    def __init__(self, ws: web.WebSocketResponse, *, v5: bool, once: bool) -> None:
        self.ws, self.v5, self.once = ws, v5, once
        self._conn: socket.socket | None = None
        self._fd = -1

    async def open(self, address: str, request: dict[str, Any]) -> str | None:
        """Ask the kubelet for the container's stdin; an error message when it cannot."""
        loop = asyncio.get_running_loop()
        try:
            self._conn = conn = await session.connect(address)
            await loop.run_in_executor(None, conn.sendall, json.dumps(request).encode() + b"\n")
            data, fds, _flags, _addr = await loop.run_in_executor(
                None, socket.recv_fds, conn, 65536, 1
            )
        except OSError as exc:
            return f"cannot reach the kubelet's exec endpoint: {exc}"
        self._fd = fds[0] if fds else -1
        try:
            answer = json.loads(data) if data else {"error": "the kubelet closed the connection"}
        except ValueError:
            answer = {"error": "a bad answer from the kubelet"}
        if self._fd < 0:
            return str(answer.get("error") or "the kubelet sent no stdin")
        return None

    async def feed(self) -> bool:
        """WebSocket → stdin. False when the client closed the WebSocket; True when it closed
        stdin and that ends the attach (a container without ``stdinOnce``)."""
        async for msg in self.ws:
            if msg.type != WSMsgType.BINARY or not msg.data:
                continue
            channel, data = msg.data[0], msg.data[1:]
            if channel == STDIN and self._fd >= 0 and data:
                await channels.write_all(self._fd, data)
            elif channel == RESIZE and self._fd >= 0:  # a ``tty: true`` container's terminal
                channels.resize(self._fd, data)
            elif channel == CLOSE and self.v5 and data[:1] == bytes([STDIN]) and self._fd >= 0:
                self.close()
                if not self.once:
                    return True
        return False

    def close(self) -> None:
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = -1
        if self._conn is not None:
            self._conn.close()
            self._conn = None
