"""One container run of the container runtime (``containers``, note 095): the foreground
``podman run`` client, from the container's creation to its removal.

``started`` waits until the client has created the container (its id in the ``--cidfile``)
and the runtime has started it: kubelet reports a container running once its runtime started
it, so ``Ready``, an ``exec`` or a signal never lands between the create and the start.
``Container`` is the ``Running`` of the seam: its pid and stdio are the client's (the
container's, relayed: ``stdio.StdioRun``), SIGTERM to the client is proxied into the
container, SIGKILL kills the container itself, and after the client ends ``inspect`` gives
the exit code and ``OOMKilled``; the container is then removed (by ``removals`` with its pod,
where the runtime passes ``ended``). ``podman://<id>`` (or ``docker://<id>``) is its
``containerID``; an exec is ``podman exec`` into it.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import signal
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from trainop.cluster.kubelet.runtimes import containercli, processes
from trainop.cluster.kubelet.runtimes.runtime import StartWarning
from trainop.cluster.kubelet.runtimes.stdio import Stdio, StdioRun

CREATE_TIMEOUT = 60.0  # how long ``start`` waits for podman to create the container
_CREATE_POLL = 0.02
_CONTAINER_ID = re.compile(r"[0-9a-f]{64}")
_STARTING = frozenset({"created", "configured", "initialized"})  # states before the start


async def started(cli: containercli.Cli, client: asyncio.subprocess.Process, cidfile: Path) -> str:
    """The id of the container the ``run`` client made (``_created``) once the runtime has
    started it (``_until_started``); "" when it was never created."""
    container_id = await _created(client, cidfile)
    if container_id:
        await _until_started(cli, client, container_id)
    return container_id


class Container(StdioRun):
    """One container run: the foreground ``podman run`` client (its pid, its stdio: the
    container's, relayed) and the container's name."""

    warnings: tuple[StartWarning, ...] = ()  # limits this start could not set (``limits``)

    def __init__(
        self,
        cli: containercli.Cli,
        client: asyncio.subprocess.Process,
        name: str,
        stdio: Stdio,
        *,
        container_id: str = "",
        cidfile: Path | None = None,
        ended: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(client, stdio)
        self._cli, self.name = cli, name
        self._ended = ended  # takes the removal over (``removals``); None: ``finish`` removes
        self.container_id = f"{cli.name}://{container_id}" if container_id else ""
        self._cidfile = cidfile
        self._state: Mapping[str, Any] = {}
        self._oom_before = processes.oom_kills()

    async def wait(self) -> int:
        returncode = await self._process.wait()
        found = await self._cli.json(*self._cli.inspect_words(self.name))
        state = containercli.first_object(found).get("State")
        if isinstance(state, dict):
            self._state = state
        return returncode

    def signal(self, signum: int) -> bool:
        if self._process.returncode is not None:
            return False
        if signum == signal.SIGKILL:  # not proxied: the container itself is killed
            asyncio.get_running_loop().create_task(
                self._cli.call("kill", "--signal", "KILL", self.name)
            )
            return True
        return processes.signal_group(self._process.pid, signum)  # proxied into the container

    async def finish(self) -> None:
        if self._ended is not None:  # removed with its pod, off the pod's path
            self._ended()
        else:
            await self._cli.call(*self._cli.remove_words(self.name))
        processes.signal_group(self._process.pid, signal.SIGKILL)
        self.close_stdin()
        if self._cidfile is not None:
            self._cidfile.unlink(missing_ok=True)

    async def outcome(self, returncode: int, *, killed_by_kubelet: bool) -> tuple[int, str]:
        code = int(self._state.get("ExitCode", processes.exit_code(returncode)))
        if self._state.get("OOMKilled"):
            return code, "OOMKilled"
        # runc with cgroupfs does not report OOM kills: the process kubelet's heuristic (a
        # SIGKILL the kubelet did not send while the kernel's OOM-kill count went up)
        status = -signal.SIGKILL if code == 128 + signal.SIGKILL else code
        reason = processes.reason(
            status, killed_by_kubelet=killed_by_kubelet, oom_before=self._oom_before
        )
        return code, reason

    def exec_argv(self, command: list[str], *, tty: bool) -> tuple[list[str], int]:
        flags = ["-i", "-t"] if tty else ["-i"]
        return self._cli.exec_argv(*flags, self.name, *command), 0


async def _created(client: asyncio.subprocess.Process, cidfile: Path) -> str:
    """The id ``podman run`` wrote to ``cidfile`` once it created the container (64 hex
    digits); "" when the client ended first (the container was never created) or after
    ``CREATE_TIMEOUT`` seconds."""
    ended = asyncio.ensure_future(client.wait())
    deadline = time.monotonic() + CREATE_TIMEOUT
    try:
        while True:
            with contextlib.suppress(OSError):
                found = cidfile.read_text(encoding="ascii").strip()
                if _CONTAINER_ID.fullmatch(found):
                    return found
            if ended.done() or time.monotonic() >= deadline:
                return ""
            await asyncio.wait([ended], timeout=_CREATE_POLL)
    finally:
        ended.cancel()


async def _until_started(
    cli: containercli.Cli, client: asyncio.subprocess.Process, container_id: str
) -> None:
    """Until the created container has started (its state no longer one of
    ``_STARTING``; a state the runtime does not show counts as started), the client
    ended, or ``CREATE_TIMEOUT``: kubelet reports a container running once its runtime
    started it, so ``Ready``, an ``exec`` or a signal never lands between the create and
    the start."""
    ended = asyncio.ensure_future(client.wait())
    deadline = time.monotonic() + CREATE_TIMEOUT
    try:
        while not ended.done() and time.monotonic() < deadline:
            found = await cli.json(*cli.inspect_words(container_id))
            state = containercli.first_object(found).get("State")
            status = state.get("Status") if isinstance(state, dict) else None
            if str(status or "").lower() not in _STARTING:
                return
            await asyncio.wait([ended], timeout=_CREATE_POLL)
    finally:
        ended.cancel()
