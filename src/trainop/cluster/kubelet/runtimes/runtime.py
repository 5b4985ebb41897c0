"""The runtime seam: what starts, signals, waits for and execs into one container run.

Everything else about a pod (its state machine, restarts and back-off, sandbox and volumes,
env, logs, status, events, recovery records) lives in ``podrun`` and is shared by every
runtime; a runtime only turns a resolved ``Launch`` into a running thing and back into an
exit. Two implementations:

- ``host.HostRuntime``: the container is a host process group (``processes``), today's
  process kubelet;
- ``containers.ContainerRuntime``: the container is an OCI container run by Podman or Docker.

Both make a container's stdio the same way (``stdio``). A start that fails raises
``StartError`` with the terminated reason (``StartError``, ``ContainerCannotRun``,
``ErrImagePull`` ...) and the waiting reason kubelet shows right after it
(``RunContainerError``, ``CreateContainerError``, ``ErrImagePull`` ...). This module holds
only types and protocols: no I/O.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

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


@dataclass(frozen=True, slots=True)
class Exited:
    """A run that ended while no kubelet watched it, as its supervisor recorded: its status
    as ``asyncio`` reports one (a signal N is -N) and when (RFC 3339)."""

    returncode: int
    finished_at: str


@runtime_checkable
class Reattaching(Protocol):
    """A runtime whose runs outlive the kubelet (note 120): a restarted kubelet finds them."""

    async def reattach(
        self, target: Target, container_id: str, log: Path
    ) -> Running | Exited | None:
        """Run ``target.restart`` of the container (``container_id``, as recorded; ``log``
        the run's log file): still running (its ``Running``), ended meanwhile (``Exited``),
        or lost (None)."""
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
