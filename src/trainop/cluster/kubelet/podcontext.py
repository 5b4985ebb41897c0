"""What the parts of one pod's run share: the pod, its state, its sandbox, time and reporting.

``PodRun`` (the pod's life) makes one ``PodContext`` and hands it to its parts:
``podconfig.Configuration`` (env, volumes, launches), ``podprocesses.ContainerProcesses``
(one run of a container) and ``crashloop.CrashLoop`` (restarts and back-off). Through it they
report a change of the pod's state (``changed``: the kubelet writes the status once per loop
turn), record kubelet's Events about the pod or one of its containers (``event``), wait on the
injected clock unless the pod is being stopped (``backed_off``), and name the pod's containers
to the runtime (``target``). ``Settings`` is what every pod run of one kubelet shares.
Neighbours: ``podrun``, ``podstate``, ``kube.events``, ``runtimes.runtime``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainop import errors
from trainop.cluster.kubelet import sandbox
from trainop.cluster.kubelet.environment import Node
from trainop.cluster.kubelet.podstate import ContainerState, PodState
from trainop.cluster.kubelet.runtimes import runtime
from trainop.cluster.kubelet.runtimes.runtime import Report
from trainop.cluster.kubelet.status.render import Termination
from trainop.kube.clock import Clock
from trainop.kube.events import EventRecorder, ObjectRef

Raw = dict[str, Any]
CANNOT_RUN_EXIT_CODE = 128  # what container runtimes report for a container never started


@dataclass(frozen=True, slots=True)
class Backoff:
    """Delay before restarting a container that exited (kubelet's CrashLoopBackOff)."""

    initial: float = 10.0
    maximum: float = 300.0
    reset_after: float = 600.0

    def delay(self, failures: int) -> float:
        return float(min(self.initial * 2 ** max(failures - 1, 0), self.maximum))


@dataclass(frozen=True, slots=True)
class Settings:
    """What every pod run of one kubelet shares."""

    root: Path
    node: Node
    working_dir: Path
    base_env: Mapping[str, str]
    backoff: Backoff = field(default_factory=Backoff)
    config_timeout: float = 30.0
    config_retry: float = 1.0
    exec_address: str = ""


class CannotRun(errors.TrainopError):
    """The pod can never run: it fails with ``reason`` and the message; ``containers`` (not
    started) end ``terminated`` with that reason."""

    def __init__(self, reason: str, message: str, containers: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.reason = reason
        self.containers = containers


@dataclass(slots=True)
class PodContext:
    """One pod's run, as its parts share it (see the module docstring)."""

    pod: Raw
    state: PodState
    sandbox: sandbox.Sandbox
    settings: Settings
    clock: Clock
    now: Callable[[], str]
    on_change: Callable[[], None]
    events: EventRecorder | None = None
    stopping: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def is_stopping(self) -> bool:
        return self.stopping.is_set()

    @property
    def ref(self) -> ObjectRef:
        """The pod, as its Events name it."""
        return ObjectRef.pod(self.state.namespace, self.state.name, self.state.uid)

    @property
    def pod_id(self) -> str:
        """The pod as kubelet's messages name it: ``<name>_<namespace>(<uid>)``."""
        return f"{self.state.name}_{self.state.namespace}({self.state.uid})"

    def changed(self) -> None:
        """The pod's state changed: its status is written (once per loop turn)."""
        self.on_change()

    def event(self, container: str, type_: str, reason: str, message: str) -> None:
        """Record kubelet's Event about ``container`` of this pod."""
        if self.events is not None:
            init = any(c.name == container for c in self.state.init_containers)
            about = self.ref.container(container, init=init)
            self.events.record_nowait(about, type_, reason, message)

    def reporter(self, container: str) -> Report:
        """The runtime's reports during one start of ``container``, as its Events."""

        def report(type_: str, reason: str, message: str) -> None:
            self.event(container, type_, reason, message)

        return report

    def target(self, container: ContainerState) -> runtime.Target:
        """The runtime's name for the next run of ``container``."""
        spec, state = self.pod["spec"], self.state
        return runtime.Target(
            state.namespace,
            state.name,
            state.uid,
            container.name,
            str(spec.get("hostname") or state.name),
            container.next_run,
            subdomain=str(spec.get("subdomain") or ""),
        )

    def never_ran(self, reason: str, message: str) -> Termination:
        """How a container that could not start ended: 128 with ``reason``, now."""
        now = self.now()
        return Termination(CANNOT_RUN_EXIT_CODE, reason, now, now, message)

    async def backed_off(self, seconds: float) -> bool:
        """Wait ``seconds`` of the injected clock; True when the pod was stopped meanwhile."""
        slept = asyncio.ensure_future(self.clock.sleep(seconds))
        stopped = asyncio.ensure_future(self.stopping.wait())
        try:
            await asyncio.wait([slept, stopped], return_when=asyncio.FIRST_COMPLETED)
        finally:
            slept.cancel()
            stopped.cancel()
        return self.is_stopping

    async def stopped_within(self, seconds: float) -> bool:
        """Wait ``seconds`` of real time; True when the pod was stopped meanwhile."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.stopping.wait(), timeout=seconds)
        return self.is_stopping


def containers_of(pod: Raw) -> list[Raw]:
    """The pod's init containers, then its containers."""
    spec = pod.get("spec") or {}
    return [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
