"""``pods/exec`` and ``pods/attach`` over WebSocket (``portforward`` is ``portforward.py``).

kubectl (1.30 and newer by default) opens exec as a WebSocket with the ``v5.channel.k8s.io``
(or ``v4.channel.k8s.io``) subprotocol. Every binary message starts with a channel byte: 0
stdin, 1 stdout, 2 stderr, 3 error (one ``Status`` when the command ends: ``Success``, or
``NonZeroExitCode`` with the exit code as a cause, which kubectl turns into its own exit
code), 4 terminal resize (``{"Width", "Height"}``); v5 adds 255, whose payload names a
channel the client closes (stdin: the command sees end-of-file, as ``kubectl cp`` needs).

The command runs in the process kubelet that runs the pod, through its exec endpoint
(``local/kubelet/execserver``: an abstract Unix socket of the same user, published on the
Node as ``ANNOTATION``). This module makes the stdio: pipes, or with ``tty=true`` a pseudo
terminal whose resize messages become ``TIOCSWINSZ``; it hands the far ends to the kubelet
and copies between them and the WebSocket. The WebSocket closing first kills the command (the
kubelet does so when its connection closes).

``attach`` streams the container's output from now on (from its log, as the process kubelet
keeps no other handle on it) until the container stops. With ``stdin=true`` (``attach -i``,
``run -i``) the kubelet hands over a copy of the container's stdin pipe (a container with
``stdin: true`` gets one) and the stdin channel is written to it; the client's close of stdin,
or of the WebSocket, hangs up, and with ``stdinOnce`` the kubelet then closes the container's
stdin (end-of-file); without it, the client's close of stdin ends the attach and the
container's stdin stays open (containerd's behaviour). A container without ``stdin: true``
has no stdin to attach: ``attach -i`` then only follows its output.
A request that is not a WebSocket upgrade (SPDY, which kubectl before 1.30 speaks) gets
a ``Status`` that says what local mode does not do, never a bare 404.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import pty
import socket
import struct
import termios
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from aiohttp import WSMsgType, web

from trainop.cluster.apiserver import store
from trainop.cluster.apiserver.http import status
from trainop.cluster.apiserver.rest.call import ApiState, Call
from trainop.kube import podlogs

ANNOTATION = "trainop.io/exec-address"
PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")
STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255
_CHUNK = 32 * 1024
_POLL = 1.0  # seconds between checks that the container still runs
_DRAIN = 2.0  # seconds to wait for output still in the pipes once the command has exited

TOKEN_UNSUPPORTED = (
    "service account tokens are not issued in local mode: there is one principal, and the "
    "kubeconfig's token is its credential"
)
SPDY_UNSUPPORTED = (
    "only WebSocket streaming (v5.channel.k8s.io, v4.channel.k8s.io) is supported in local "
    "mode; SPDY is not: use kubectl 1.30 or newer"
)


def _is_websocket(request: web.Request) -> bool:
    return request.headers.get("Upgrade", "").lower() == "websocket"


def _pod(state: ApiState, call: Call) -> dict[str, Any]:
    stored = state.store.get(call.key())
    if stored is None:
        raise status.not_found(call.rt, call.name or "")
    return stored.obj


def _container(call: Call, pod: dict[str, Any]) -> str:
    spec = pod.get("spec") or {}
    names = [str(c.get("name")) for c in spec.get("containers") or []]
    inits = [str(c.get("name")) for c in spec.get("initContainers") or []]
    wanted = call.query.get("container")
    if not wanted:
        if not names:
            raise status.bad_request(f"pod {call.name} has no containers")
        return names[0]  # kubectl names the default container itself; kube takes the first
    if wanted not in names and wanted not in inits:
        raise status.bad_request(f"container {wanted} is not valid for pod {call.name}")
    return wanted


def _check_phase(pod: dict[str, Any], what: str) -> None:
    phase = (pod.get("status") or {}).get("phase")
    if phase in ("Succeeded", "Failed"):
        raise status.bad_request(
            f"cannot {what} into a container in a completed pod; current phase is {phase}"
        )


def _check_transport(call: Call) -> None:
    if not _is_websocket(call.request):
        reason = (
            SPDY_UNSUPPORTED if call.request.headers.get("Upgrade") else "Upgrade request required"
        )
        raise status.bad_request(reason)


def _exec_address(state: ApiState, pod: dict[str, Any]) -> str:
    node_name = (pod.get("spec") or {}).get("nodeName") or ""
    nodes = state.store.select(resource="core/nodes")
    chosen = [n for n in nodes if n.key.name == node_name] if node_name else nodes[:1]
    for node in chosen:
        address = (node.obj["metadata"].get("annotations") or {}).get(ANNOTATION)
        if address:
            return str(address)
    where = f"node {node_name}" if node_name else "any node"
    raise status.RequestError(
        f"no kubelet serves exec on {where} (pod {pod['metadata'].get('name')})",
        status=503,
        reason="ServiceUnavailable",
    )


def _exit_status(code: int) -> dict[str, Any]:
    if code == 0:
        return {"metadata": {}, "status": "Success"}
    return {
        "metadata": {},
        "status": "Failure",
        "message": f"command terminated with non-zero exit code: exit status {code}",
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]},
    }


def _failure(message: str) -> dict[str, Any]:
    return {
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": "InternalError",
        "code": 500,
    }


async def _open_websocket(call: Call) -> web.WebSocketResponse:
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


async def exec_(state: ApiState, call: Call) -> web.StreamResponse:
    """``pods/exec``: run ``command`` in the container and bridge its stdio to a WebSocket."""
    pod = _pod(state, call)
    container = _container(call, pod)
    command = call.request.query.getall("command", [])
    if not command:
        raise status.bad_request("you must specify at least 1 command")
    _check_phase(pod, "exec")
    address = _exec_address(state, pod)
    _check_transport(call)  # last: kubectl retries a refused WebSocket with SPDY
    ws = await _open_websocket(call)
    session = _Session(
        ws,
        v5=ws.ws_protocol == PROTOCOLS[0],
        tty=call.flag("tty"),
        stdin=call.flag("stdin"),
        stderr=call.flag("stderr") and not call.flag("tty"),
    )
    request = {
        "namespace": call.namespace or "default",
        "pod": call.name or "",
        "container": container,
        "command": command,
        "tty": session.tty,
    }

    def running() -> bool:
        stored = state.store.get(call.key())
        return stored is not None and _is_running(stored.obj, container)

    try:
        result = await session.run(address, request, running=running)
        await session.send(ERROR, json.dumps(result).encode())
    finally:
        session.close_fds()
        await ws.close()
    return ws


async def attach(state: ApiState, call: Call) -> web.StreamResponse:
    """``pods/attach``: the container's output from now on, until it stops; with
    ``stdin=true`` the WebSocket's stdin channel goes to the container's stdin."""
    pod = _pod(state, call)
    container = _container(call, pod)
    _check_phase(pod, "attach")
    spec = _spec_of(pod, container)
    # a container without ``stdin: true`` has no stdin to attach: the stream's stdin is ignored
    # and its output followed (as containerd does), not refused
    wants_stdin = call.flag("stdin") and spec.get("stdin") is True
    address = _exec_address(state, pod) if wants_stdin else ""
    _check_transport(call)
    ws = await _open_websocket(call)
    ref = podlogs.LogRef(namespace=call.namespace or "", pod=call.name or "", container=container)
    since = datetime.now(UTC)

    async def follow() -> bool:
        async for line in state.log_source.lines(ref, follow=True):
            if line.time >= since:
                await ws.send_bytes(bytes([STDOUT]) + line.text)
        return True

    request = {"attach": True, "namespace": ref.namespace or "default", "pod": ref.pod}
    request["container"] = container
    once = spec.get("stdinOnce") is True and spec.get("tty") is not True  # as containerd
    stdin = _AttachedStdin(ws, v5=ws.ws_protocol == PROTOCOLS[0], once=once)
    try:
        if address:
            failed = await stdin.open(address, request)
            if failed is not None:
                await ws.send_bytes(bytes([ERROR]) + store.encode(_failure(failed)))
                return ws
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
            await ws.send_bytes(bytes([ERROR]) + store.encode(_exit_status(0)))
    finally:
        stdin.close()
        await ws.close()
    return ws


def _spec_of(pod: dict[str, Any], container: str) -> dict[str, Any]:
    spec = pod.get("spec") or {}
    for item in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        if item.get("name") == container:
            return dict(item)
    return {}


class _AttachedStdin:
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
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._conn = conn
        try:
            target = "\0" + address[1:] if address.startswith("@") else address
            await loop.run_in_executor(None, conn.connect, target)
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
                await _write_all(self._fd, data)
            elif channel == RESIZE and self._fd >= 0:  # a ``tty: true`` container's terminal
                _resize(self._fd, data)
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


class _Session:
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
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            try:
                target = "\0" + address[1:] if address.startswith("@") else address
                await loop.run_in_executor(None, conn.connect, target)
                payload = json.dumps(request).encode() + b"\n"
                await loop.run_in_executor(None, socket.send_fds, conn, [payload], self.child_fds)
            except OSError as exc:
                return _failure(f"cannot reach the kubelet's exec endpoint: {exc}")
            self._handed_over()
            conn.setblocking(False)
            pumps = [
                asyncio.ensure_future(self._pump(fd, channel)) for fd, channel in self._outputs
            ]
            feeder = asyncio.ensure_future(self._feed())
            reply = asyncio.ensure_future(_read_reply(conn))
            watcher = asyncio.ensure_future(_until_stopped(running, conn))
            pumps.append(watcher)  # cancelled with the pumps
            try:
                await asyncio.wait([reply, feeder], return_when=asyncio.FIRST_COMPLETED)
                if not reply.done():  # the client went away: closing the socket kills it
                    return _failure("the client closed the stream")
                answer = reply.result()
                watcher.cancel()
                outputs = [p for p in pumps if p is not watcher]
                if outputs:
                    await asyncio.wait(outputs, timeout=_DRAIN)
            finally:
                for task in (*pumps, feeder, reply):
                    task.cancel()
                await asyncio.gather(*pumps, feeder, reply, return_exceptions=True)
        finally:
            conn.close()
        if "error" in answer:
            return _failure(str(answer["error"]))
        return _exit_status(int(answer.get("exitCode", 1)))

    async def _pump(self, fd: int, channel: int) -> None:
        loop = asyncio.get_running_loop()
        os.set_blocking(fd, False)
        while True:
            readable: asyncio.Future[None] = loop.create_future()
            loop.add_reader(fd, _resolve, readable)
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
                await _write_all(self._stdin_fd, data)
            elif channel == RESIZE and self._master >= 0:
                self._resize(data)
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

    def _resize(self, data: bytes) -> None:
        _resize(self._master, data)


def _resize(fd: int, data: bytes) -> None:
    """Apply a resize message (``{"Width", "Height"}``) to a terminal (nothing on a pipe)."""
    try:
        size = json.loads(data)
        packed = struct.pack("HHHH", int(size["Height"]), int(size["Width"]), 0, 0)
        fcntl.ioctl(fd, termios.TIOCSWINSZ, packed)
    except (ValueError, KeyError, TypeError, OSError, struct.error):
        return


def _is_running(pod: dict[str, Any], container: str) -> bool:
    statuses = [
        *((pod.get("status") or {}).get("containerStatuses") or []),
        *((pod.get("status") or {}).get("initContainerStatuses") or []),
    ]
    found = next((c for c in statuses if c.get("name") == container), None)
    return found is None or "running" in (found.get("state") or {})


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


async def _write_all(fd: int, data: bytes) -> None:
    loop = asyncio.get_running_loop()
    os.set_blocking(fd, False)
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except BlockingIOError:
            writable: asyncio.Future[None] = loop.create_future()
            loop.add_writer(fd, _resolve, writable)
            try:
                await writable
            finally:
                loop.remove_writer(fd)
            continue
        except OSError:  # the command closed its stdin
            return
        view = view[written:]


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


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
