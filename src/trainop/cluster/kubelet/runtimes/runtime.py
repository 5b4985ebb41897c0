"""The runtime seam: what starts, signals, waits for and execs into one container run.

Everything else about a pod (its state machine, restarts and back-off, sandbox and volumes,
env, logs, status, events, recovery records) lives in ``podrun`` and is shared by every
runtime; a runtime only turns a resolved ``Launch`` into a running thing and back into an
exit. Two implementations:

- ``HostRuntime`` (here): the container is a host process group (``processes``), today's
  process kubelet;
- ``containers.ContainerRuntime``: the container is an OCI container run by Podman or Docker.

A start that fails raises ``StartError`` with the terminated reason (``StartError``,
``ContainerCannotRun``, ``ErrImagePull`` ...) and the waiting reason kubelet shows right after
it (``RunContainerError``, ``CreateContainerError``, ``ErrImagePull`` ...).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pty
import signal
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from trainop.cluster.kubelet.reaper import Reaper
from trainop.cluster.kubelet.runtimes import processes

Raw = dict[str, Any]
NO_COMMAND = "images are not pulled in local mode: a container needs an explicit command"


@dataclass(frozen=True, slots=True)
class Launch:
    """How to start one container: resolved by ``podrun``, the same for every runtime.

    ``argv`` is ``command`` + ``args`` expanded (empty without ``command``); ``command`` and
    ``args`` are the same words kept apart (an image runtime combines them with the image's
    entrypoint and cmd); ``volumes`` maps each pod volume to its host directory; ``spec`` is
    the container as the manifest wrote it; ``pod_env`` the variables the pod itself defines
    (its ``env``/``envFrom`` and ``HOSTNAME``), without the host's and the sandbox's;
    ``devices`` the GPUs (``gpus`` pool indices) this run holds that the machine has (not
    the slots ``--gpus`` declares beyond them): the container runtime passes them as CDI
    devices; the host runtime shows every held index as ``CUDA_VISIBLE_DEVICES``, in the host
    ``env`` ``podrun`` passes."""

    argv: list[str]
    env: dict[str, str]
    cwd: Path
    gpus: int
    command: list[str] = field(default_factory=list)
    args: list[str] = field(default_factory=list)
    volumes: dict[str, Path] = field(default_factory=dict)
    spec: Raw = field(default_factory=dict)
    pod_env: dict[str, str] = field(default_factory=dict)
    devices: tuple[str, ...] = ()
    pod_spec: Raw = field(default_factory=dict)  # the pod's spec (securityContext, DNS)


@dataclass(frozen=True, slots=True)
class Target:
    """Which pod a container belongs to (names for the runtime's objects and labels)."""

    namespace: str
    pod: str
    uid: str
    container: str
    hostname: str
    restart: int = 0  # which run of the container: its ``restartCount`` once it runs
    subdomain: str = ""  # the pod's ``subdomain`` (a headless Service's name) or ""


class StartError(Exception):
    """A container that could not be started: ``reason`` ends it (``terminated``),
    ``waiting`` is what kubelet shows just after, ``str()`` the runtime's message."""

    def __init__(
        self, reason: str, waiting: str, message: str, *, image: str = "", config: bool = False
    ) -> None:
        super().__init__(message)
        self.reason, self.waiting = reason, waiting
        # an image that could not be had (pulled, or present under ``Never``): the container
        # was never created, so it only waits (``ErrImagePull``, then ``ImagePullBackOff``)
        self.image = image
        # a container kubelet refuses to create (``CreateContainerConfigError``: runAsNonRoot
        # with a root user): it only waits too, and is tried again after the back-off
        self.config = config


# How a runtime reports what happens during a start as it happens (kubelet's image events:
# ``Pulling``, then ``Pulled`` or the failure): ``report(type, reason, message)``; ``podrun``
# records each as an Event on the pod, before ``Created``/``Started`` or the start's error.
Report = Callable[[str, str, str], None]


def no_report(type_: str, reason: str, message: str) -> None:
    """A ``Report`` for starts nobody watches (tests, runtimes without images)."""
    del type_, reason, message


@dataclass(frozen=True, slots=True)
class StartWarning:
    """Something a runtime could not honour in a start that went ahead anyway (a limit the
    machine cannot set): ``podrun`` records it as a ``Warning`` Event on the pod."""

    reason: str
    message: str


class Running(Protocol):
    """One started container run."""

    @property
    def pid(self) -> int:
        """A process id to show (the host process, or the runtime's client process)."""
        ...

    @property
    def container_id(self) -> str:
        """This run's id as kubelet shows it, ``<runtime>://<id>`` (``containerID``)."""
        ...

    @property
    def stdout(self) -> asyncio.StreamReader: ...

    @property
    def stderr(self) -> asyncio.StreamReader: ...

    @property
    def stdin_fd(self) -> int:
        """The kubelet's end of the container's stdin (``stdin: true``: a pipe's write end;
        ``tty: true``: a copy of its terminal's master side), -1 when it has none or it was
        closed; ``attach -i`` hands a copy of it to the caller."""
        ...

    def close_stdin(self) -> None:
        """Close the kubelet's end of the container's stdin: the container reads end-of-file
        once no attach holds it either (``stdinOnce``, or the run ended)."""
        ...

    async def wait(self) -> int:
        """Wait for the run's main process; its status as ``asyncio`` reports one."""
        ...

    def signal(self, signum: int) -> bool:
        """Send ``signum`` to the container; False when nothing is left to signal."""
        ...

    async def finish(self) -> None:
        """After the main process ended: kill what it left and release what it held."""
        ...

    async def outcome(self, returncode: int, *, killed_by_kubelet: bool) -> tuple[int, str]:
        """Kubernetes' exit code and reason (``Completed``, ``Error``, ``OOMKilled``)."""
        ...

    def exec_argv(self, command: list[str], *, tty: bool) -> tuple[list[str], int]:
        """The argv that runs ``command`` inside this container and the process group to
        place it in (0: a new one)."""
        ...

    @property
    def warnings(self) -> tuple[StartWarning, ...]:
        """What this start could not honour (each a ``Warning`` Event, once per start)."""
        ...


class Runtime(Protocol):
    """Starts container runs (see the module docstring)."""

    @property
    def addresses_by_name(self) -> bool:
        """Whether pods reach each other by their names on the manifest's ports (a network
        of their own); False: on the host's loopback with ports of their own."""
        ...

    async def open(self) -> None:
        """Prepare before the first pod (and clean what an earlier session left)."""
        ...

    async def close(self) -> None:
        """After the last pod stopped: remove whatever the runtime made."""
        ...

    async def start(
        self, target: Target, launch: Launch, env: Mapping[str, str], report: Report = no_report
    ) -> Running:
        """Start one run of the container (``StartError`` when it cannot); ``report`` gets
        the start's events as they happen (an image pulled or found present)."""
        ...

    async def prepare(self, target: Target, pod_spec: Mapping[str, Any], report: Report) -> str:
        """Before the pod's first container starts: make what its containers share (the
        container runtime's holder of the pod's network); the pod's own address, "" where
        the pod has the host's."""
        ...

    async def release(self, uid: str) -> None:
        """The pod ``uid`` has ended (every container of it finished or was stopped):
        free what the runtime held for the pod as a whole (its network holder)."""
        ...


class Stdio:
    """A container's stdio, made before its process starts (``stdin``/``tty`` of the spec).

    ``tty: true``: a pseudo terminal is the process's stdin, stdout and stderr; the kubelet
    keeps its master side (the output read from it, a copy written by ``attach -i``).
    ``stdin: true`` alone: a pipe whose write end the kubelet keeps for ``attach -i``.
    Neither: stdin is /dev/null, stdout and stderr pipes. The process is the container's own
    (host runtime) or the runtime's client that relays its stdio (``podman run -i [-t]``)."""

    def __init__(self, spec: Raw) -> None:
        self.tty = spec.get("tty") is True
        self.stdin = self.tty or spec.get("stdin") is True
        self._mine, self._theirs = -1, -1
        if self.tty:
            self._mine, self._theirs = pty.openpty()
        elif self.stdin:
            self._theirs, self._mine = os.pipe()

    def streams(self) -> tuple[int | None, int | None, int | None]:
        """``processes.start``'s ``stdin``, ``stdout`` and ``stderr`` (None: its default)."""
        theirs = self._theirs if self._theirs >= 0 else None
        return theirs, theirs if self.tty else None, theirs if self.tty else None

    def started(self) -> tuple[int, tuple[asyncio.StreamReader, asyncio.StreamReader] | None]:
        """After the process started: close its ends here; the kubelet's stdin end and, with a
        terminal, the (stdout, stderr) readers of it (its stderr empty: one stream)."""
        self._close_theirs()
        if not self.tty:
            return self._mine, None
        empty = asyncio.StreamReader()
        empty.feed_eof()
        return os.dup(self._mine), (_terminal_reader(self._mine), empty)

    def failed(self) -> None:
        """The process could not be started: close everything."""
        self._close_theirs()
        if self._mine >= 0:
            os.close(self._mine)
            self._mine = -1

    def _close_theirs(self) -> None:
        if self._theirs >= 0:
            os.close(self._theirs)
            self._theirs = -1


class StdioRun:
    """What every ``Running`` whose stdio is one local process's shares: its pid, output
    streams (pipes, or a terminal's readers) and the kubelet's end of its stdin (``Stdio``)."""

    def __init__(self, process: asyncio.subprocess.Process, stdio: Stdio) -> None:
        self._process = process
        self.stdin_fd, self._terminal = stdio.started()

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def stdout(self) -> asyncio.StreamReader:
        if self._terminal is not None:
            return self._terminal[0]
        assert self._process.stdout is not None
        return self._process.stdout

    @property
    def stderr(self) -> asyncio.StreamReader:
        if self._terminal is not None:
            return self._terminal[1]
        assert self._process.stderr is not None
        return self._process.stderr

    def close_stdin(self) -> None:
        """Close the kubelet's end of the container's stdin: the container reads end-of-file
        once no attach holds it either (``stdinOnce``, or the run ended)."""
        if self.stdin_fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.stdin_fd)
            self.stdin_fd = -1


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


def _terminal_reader(fd: int) -> asyncio.StreamReader:
    """A reader of a terminal's master side: end-of-file once every slave user is gone (EIO),
    when the descriptor is closed too."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    os.set_blocking(fd, False)

    def readable() -> None:
        try:
            data = os.read(fd, 65536)
        except BlockingIOError:
            return
        except OSError:  # EIO: the last process using the terminal is gone
            data = b""
        if data:
            reader.feed_data(data)
            return
        loop.remove_reader(fd)
        os.close(fd)
        reader.feed_eof()

    loop.add_reader(fd, readable)
    return reader
