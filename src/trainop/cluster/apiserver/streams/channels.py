"""The channel protocol of ``pods/exec`` and ``pods/attach`` over WebSocket (``streams``).

kubectl (1.30 and newer by default) opens exec and attach as a WebSocket with the
``v5.channel.k8s.io`` (or ``v4.channel.k8s.io``) subprotocol. Every binary message starts
with a channel byte: 0 stdin, 1 stdout, 2 stderr, 3 error (one ``Status`` when the command
ends: ``Success``, or ``NonZeroExitCode`` with the exit code as a cause, which kubectl turns
into its own exit code), 4 terminal resize (``{"Width", "Height"}``); v5 adds 255, whose
payload names a channel the client closes (stdin: the command sees end-of-file, as
``kubectl cp`` needs). A request that is not a WebSocket upgrade (SPDY, which kubectl before
1.30 speaks) gets a ``Status`` that says what local mode does not do, never a bare 404.

Also here: writing a channel's bytes to a non-blocking descriptor and applying a resize to a
terminal, which the exec session (``session``) and ``attach -i`` (``attach``) share.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import struct
import termios
from typing import Any

from aiohttp import web

from trainop.cluster.apiserver.http import status
from trainop.cluster.apiserver.rest.call import Call

PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")
STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255
SPDY_UNSUPPORTED = (
    "only WebSocket streaming (v5.channel.k8s.io, v4.channel.k8s.io) is supported in local "
    "mode; SPDY is not: use kubectl 1.30 or newer"
)


def check_transport(call: Call) -> None:
    """A ``Status`` error unless the request is a WebSocket upgrade (say why: SPDY is not
    served). Checked last: kubectl retries a refused WebSocket with SPDY."""
    if call.request.headers.get("Upgrade", "").lower() != "websocket":
        reason = (
            SPDY_UNSUPPORTED if call.request.headers.get("Upgrade") else "Upgrade request required"
        )
        raise status.bad_request(reason)


async def open_websocket(call: Call) -> web.WebSocketResponse:
    """The WebSocket with one of ``PROTOCOLS`` (a ``Status`` error without one)."""
    ws = web.WebSocketResponse(protocols=PROTOCOLS, autoping=True)
    ready = ws.can_prepare(call.request)
    if not ready.ok or ready.protocol is None:
        raise status.bad_request(
            "a WebSocket with one of the subprotocols "
            + ", ".join(PROTOCOLS)
            + " is required in local mode"
        )
    await ws.prepare(call.request)
    return ws


def is_v5(ws: web.WebSocketResponse) -> bool:
    """Whether the client speaks v5 (its close messages are read)."""
    return ws.ws_protocol == PROTOCOLS[0]


def exit_status(code: int) -> dict[str, Any]:
    """The error channel's ``Status`` for a command that exited with ``code``."""
    if code == 0:
        return {"metadata": {}, "status": "Success"}
    return {
        "metadata": {},
        "status": "Failure",
        "message": f"command terminated with non-zero exit code: exit status {code}",
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]},
    }


def failure(message: str) -> dict[str, Any]:
    """The error channel's ``Status`` for a stream that failed (``InternalError``)."""
    return {
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": "InternalError",
        "code": 500,
    }


async def write_all(fd: int, data: bytes) -> None:
    """Write ``data`` to the non-blocking ``fd`` as it takes it (nothing once it is closed)."""
    loop = asyncio.get_running_loop()
    os.set_blocking(fd, False)
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except BlockingIOError:
            writable: asyncio.Future[None] = loop.create_future()
            loop.add_writer(fd, resolve, writable)
            try:
                await writable
            finally:
                loop.remove_writer(fd)
            continue
        except OSError:  # the command closed its stdin
            return
        view = view[written:]


def resize(fd: int, data: bytes) -> None:
    """Apply a resize message (``{"Width", "Height"}``) to a terminal (nothing on a pipe)."""
    try:
        size = json.loads(data)
        packed = struct.pack("HHHH", int(size["Height"]), int(size["Width"]), 0, 0)
        fcntl.ioctl(fd, termios.TIOCSWINSZ, packed)
    except (ValueError, KeyError, TypeError, OSError, struct.error):
        return


def resolve(future: asyncio.Future[None]) -> None:
    """A loop reader's or writer's callback: the descriptor is ready."""
    if not future.done():
        future.set_result(None)
