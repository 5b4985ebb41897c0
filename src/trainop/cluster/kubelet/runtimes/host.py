"""The host-process runtime: each container run is a host process group (``processes``),
the process kubelet (note 060), watched by the kubelet's reaper.

A run has no runtime id: it is named by its pod, container and restart count
(``process://<uid>/<container>/<restart>``, what its recovery record and log file are named
by too). It has the host's network and address; an exec runs the command itself in the run's
process group. Neighbours: ``runtime`` (the seam it implements), ``stdio``, ``reaper``.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Mapping
from typing import Any

from trainop.cluster.kubelet.reaper import Reaper
from trainop.cluster.kubelet.runtimes import processes
from trainop.cluster.kubelet.runtimes.runtime import (
    NO_COMMAND,
    Launch,
    Report,
    Running,
    StartError,
    StartWarning,
    Target,
    no_report,
)
from trainop.cluster.kubelet.runtimes.stdio import Stdio, StdioRun


class HostProcess(StdioRun):
    """A container run as a host process group."""

    warnings: tuple[StartWarning, ...] = ()  # a host process honours what it is given

    def __init__(
        self,
        process: asyncio.subprocess.Process,
        reaper: Reaper,
        stdio: Stdio,
        *,
        container_id: str = "",
    ) -> None:
        super().__init__(process, stdio)
        self._reaper = reaper
        self.container_id = container_id
        self._oom_before = processes.oom_kills()
        reaper.watch(process.pid)

    async def wait(self) -> int:
        return await self._process.wait()

    def signal(self, signum: int) -> bool:
        return processes.signal_group(self._process.pid, signum)

    async def finish(self) -> None:
        processes.signal_group(self._process.pid, signal.SIGKILL)  # what the process left behind
        self._reaper.forget(self._process.pid)
        self.close_stdin()

    async def outcome(self, returncode: int, *, killed_by_kubelet: bool) -> tuple[int, str]:
        reason = processes.reason(
            returncode, killed_by_kubelet=killed_by_kubelet, oom_before=self._oom_before
        )
        return processes.exit_code(returncode), reason

    def exec_argv(self, command: list[str], *, tty: bool) -> tuple[list[str], int]:
        return command, self._process.pid


class HostRuntime:
    """Containers as host processes (the process kubelet, ``processes``)."""

    def __init__(self, reaper: Reaper) -> None:
        self._reaper = reaper

    @property
    def addresses_by_name(self) -> bool:
        return False

    async def open(self) -> None:
        """Nothing to prepare: the reaper watches the processes."""

    async def close(self) -> None:
        """Nothing left: every process group was killed with its pod."""

    async def prepare(self, target: Target, pod_spec: Mapping[str, Any], report: Report) -> str:
        """Nothing to make: a pod's processes have the host's network and address."""
        del target, pod_spec, report
        return ""

    async def release(self, uid: str) -> None:
        """Nothing held per pod: a pod's processes share the host's network."""

    async def start(
        self, target: Target, launch: Launch, env: Mapping[str, str], report: Report = no_report
    ) -> Running:
        del report  # no image: nothing to pull
        if not launch.argv:
            raise StartError("ContainerCannotRun", "CreateContainerError", NO_COMMAND)
        stdio = Stdio(launch.spec)
        stdin, stdout, stderr = stdio.streams()
        try:
            process = await processes.start(
                launch.argv,
                env=env,
                cwd=launch.cwd,
                stdin=stdin,
                stdout=stdout,
                stderr=stderr,
                watch_fd=self._reaper.fileno,
            )
        except OSError as exc:
            stdio.failed()
            message = processes.describe_start_error(launch.argv, exc)
            raise StartError("StartError", "RunContainerError", message) from exc
        # no runtime id: the run is named by its pod, container and restart count (unique,
        # and what the recovery record and the log file of the run are named by too)
        run_id = f"process://{target.uid}/{target.container}/{target.restart}"
        return HostProcess(process, self._reaper, stdio, container_id=run_id)
