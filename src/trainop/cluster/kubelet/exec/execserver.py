"""``exec``: run a command inside a running container, for the MPI launcher's rsh agent.

The kubelet listens on a Linux *abstract* Unix socket (``@trainop-kubelet-<pid>-<random>``:
no path length limit, nothing left on disk) and accepts connections only from processes of
its own user (``SO_PEERCRED``). Every container gets the address in ``TRAINOP_EXEC_ADDRESS``.

Protocol (``execclient`` speaks it): the client sends one JSON line
``{"namespace", "pod", "container", "command"}`` together with its own stdin, stdout and stderr
descriptors (``SCM_RIGHTS``). The kubelet starts ``command`` with the container's environment
and working directory, *in the container's process group*, with exactly those descriptors as
its stdio — so the output goes straight to the caller (a pipe, a terminal) and the kubelet
copies nothing. When it exits, the kubelet answers ``{"exitCode": N}`` and closes; an error
(no such pod, container not running) is answered ``{"error": "..."}`` before anything starts.
A pod or container that is still starting is waited for first (``Kubelet``'s
``exec_wait``): an MPI launcher may reach its workers before their processes run.
If the client goes away first (the connection closes), the command is SIGKILLed. Being in the
container's group, the command also dies with the container (stop, exit, kubelet death).
A request with ``"tty": true`` (its stdio a pseudo terminal) instead makes the command a
session leader with that terminal as its controlling terminal, so ^C reaches it; it then dies
with its terminal (SIGHUP when the caller closes it), by its group's SIGKILL on hang-up, or
with the kubelet (its parent-death signal), not by the container's group.

``{"attach": true, "namespace", "pod", "container"}`` (no descriptors) is ``attach -i``: the
kubelet answers ``{"attached": true}`` with a copy of the kubelet's end of the container's
stdin (``Running.stdin_fd``: a container with ``stdin: true`` gets a pipe, one with ``tty: true``
a terminal, under either runtime: ``runtimes.stdio.Stdio``) and holds until the caller hangs up;
with ``stdinOnce`` (and no ``tty``, as containerd) it then closes its own end, so the
container reads end-of-file once the caller's copy is closed too.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import struct
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from trainop.cluster.kubelet.runtimes import processes
from trainop.cluster.kubelet.runtimes.runtime import Launch, Running
from trainop.cluster.kubelet.supervisor import TERMINAL_LEADER

# With ``"tty": true`` a command this server runs itself (a host process placed in the
# container's group) leads a session whose controlling terminal is its stdin (a pseudo
# terminal the caller made), so the terminal's signals (^C, ^Z) and job control work; it
# leaves the container's process group for that, and is killed as a group instead. A runtime
# whose exec argv is a client of its own (``podman exec -t``, the supervisor's ``--tty``; a new
# group, 0) gives the terminal to the command on its side: the client is not wrapped.
_SESSION_LEADER = TERMINAL_LEADER
Target = Callable[[str, str, str], Awaitable["tuple[Launch, Running] | str"]]
_REQUEST_LIMIT = 1 << 20


class ExecServer:
    """The kubelet's exec endpoint (see the module docstring)."""

    def __init__(self, listener: socket.socket, address: str, target: Target) -> None:
        self._listener = listener
        self.address = address
        self._target = target
        self._serving: asyncio.Task[None] | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self._more: list[socket.socket] = []  # ``listen``'s socket files

    @staticmethod
    async def start(target: Target) -> ExecServer:
        """Listen on a fresh abstract address and serve until ``close``."""
        name = f"trainop-kubelet-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind("\0" + name)
        listener.listen(64)
        listener.setblocking(False)
        server = ExecServer(listener, "@" + name, target)
        server._serving = asyncio.get_running_loop().create_task(server._accept(listener))
        return server

    def listen(self, path: Path) -> None:
        """Also accept on the socket file ``path`` (replaced if there), same protocol: for
        containers, which have a network namespace of their own and so cannot reach the
        abstract address (the container runtime bind-mounts its directory)."""
        path.unlink(missing_ok=True)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(path))
        listener.listen(64)
        listener.setblocking(False)
        self._more.append(listener)
        task = asyncio.get_running_loop().create_task(self._accept(listener))
        self._connections.add(task)
        task.add_done_callback(self._connections.discard)

    async def close(self) -> None:
        """Stop accepting; end the commands still running."""
        for task in [self._serving, *self._connections]:
            if task is not None:
                task.cancel()
        await asyncio.gather(
            *(t for t in [self._serving, *self._connections] if t), return_exceptions=True
        )
        self._listener.close()
        for listener in self._more:
            listener.close()

    async def _accept(self, listener: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            conn, _ = await loop.sock_accept(listener)
            conn.setblocking(False)
            task = loop.create_task(self._serve(conn))
            self._connections.add(task)
            task.add_done_callback(self._connections.discard)

    async def _serve(self, conn: socket.socket) -> None:
        fds: list[int] = []
        try:
            if _peer_uid(conn) != os.getuid():
                return
            request, fds = await _receive(conn)
            reply = await self._run(conn, request, fds)
            await asyncio.get_running_loop().sock_sendall(conn, json.dumps(reply).encode() + b"\n")
        except (OSError, ValueError) as exc:
            with contextlib.suppress(OSError):
                await asyncio.get_running_loop().sock_sendall(
                    conn, json.dumps({"error": str(exc)}).encode() + b"\n"
                )
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
            conn.close()

    async def _run(self, conn: socket.socket, request: dict[str, Any], fds: list[int]) -> Any:
        if request.get("attach") is True:
            return await self._attach(conn, request)
        if len(fds) != 3:
            return {"error": "send stdin, stdout and stderr with the request"}
        command = [str(word) for word in request.get("command") or []]
        if not command:
            return {"error": "a command is required"}
        found = await self._find(request)
        if isinstance(found, str):
            return {"error": found}
        launch, running = found
        tty = request.get("tty") is True
        argv, group = running.exec_argv(command, tty=tty)
        process = await processes.start(
            [*_SESSION_LEADER, *argv] if tty and group != 0 else argv,
            env=launch.env,
            cwd=launch.cwd,
            stdin=fds[0],
            stdout=fds[1],
            stderr=fds[2],
            process_group=group,
        )
        for fd in fds:
            os.close(fd)
        fds.clear()
        code = await _wait_or_hang_up(conn, process, own_group=tty)
        return {"exitCode": processes.exit_code(code)}

    async def _find(self, request: dict[str, Any]) -> tuple[Launch, Running] | str:
        """The running container a request names (or why there is none)."""
        return await self._target(
            str(request.get("namespace") or "default"),
            str(request.get("pod") or ""),
            str(request.get("container") or ""),
        )

    async def _attach(self, conn: socket.socket, request: dict[str, Any]) -> Any:
        """Hand a copy of the container's stdin (a pipe's write end, or its terminal) to the
        caller, then hold until the caller hangs up; with ``stdinOnce`` (no ``tty``) the
        kubelet then closes its own end, so the container reads end-of-file once the caller's
        copy is closed too."""
        found = await self._find(request)
        if isinstance(found, str):
            return {"error": found}
        launch, running = found
        if running.stdin_fd < 0:
            return {"error": "the container's stdin is closed"}
        loop = asyncio.get_running_loop()
        ready = json.dumps({"attached": True}).encode() + b"\n"
        await loop.run_in_executor(None, socket.send_fds, conn, [ready], [running.stdin_fd])
        with contextlib.suppress(OSError):
            while await loop.sock_recv(conn, 4096):
                pass
        if launch.spec.get("stdinOnce") is True and launch.spec.get("tty") is not True:
            running.close_stdin()  # containerd's rule: a terminal's stdin stays open
        return {"detached": True}


async def _wait_or_hang_up(
    conn: socket.socket, process: asyncio.subprocess.Process, *, own_group: bool = False
) -> int:
    loop = asyncio.get_running_loop()
    exited = asyncio.ensure_future(process.wait())
    hung_up = asyncio.ensure_future(loop.sock_recv(conn, 1))
    try:
        await asyncio.wait([exited, hung_up], return_when=asyncio.FIRST_COMPLETED)
        if not exited.done():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                if own_group:
                    os.killpg(process.pid, signal.SIGKILL)
                else:
                    os.kill(process.pid, signal.SIGKILL)
        return await exited
    finally:
        hung_up.cancel()
        exited.cancel()


def _peer_uid(conn: socket.socket) -> int:
    raw = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", raw)
    return int(uid)


async def _receive(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    loop = asyncio.get_running_loop()
    data, fds = b"", []
    while not data.endswith(b"\n"):
        readable: asyncio.Future[None] = loop.create_future()
        loop.add_reader(conn.fileno(), _resolve, readable)
        try:
            await readable
        finally:
            loop.remove_reader(conn.fileno())
        chunk, more, _flags, _addr = socket.recv_fds(conn, 65536, 3)
        fds.extend(more)
        if not chunk or len(data) + len(chunk) > _REQUEST_LIMIT:
            raise ValueError("incomplete exec request")
        data += chunk
    request = json.loads(data)
    if not isinstance(request, dict):
        raise ValueError("an exec request is a JSON object")
    return request, fds


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
