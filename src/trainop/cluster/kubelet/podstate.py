"""What the kubelet knows about one pod, and the ``status`` it shows (no I/O).

Each container has its own state (``waiting`` with a reason, ``running`` since a time, or
``terminated`` with a ``Termination``), ``lastState`` and ``restartCount``; ``podrun`` moves
them as processes start and exit and sets the pod's ``phase``. The pod is ``Ready`` while
every (regular) container runs: probes are not run in local mode. Rendering goes through
``status.render``, shared with the simulated kubelet.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainop.cluster.kubelet.status import render
from trainop.cluster.kubelet.status.render import TERMINAL, Termination

HOST_IP = "127.0.0.1"


@dataclass(slots=True)
class ContainerState:
    """One container (or init container) of a pod."""

    name: str
    image: str
    restart_count: int = 0
    waiting_reason: str = "ContainerCreating"
    waiting_message: str = ""
    running_since: str = ""
    pid: int = 0
    container_id: str = ""  # the running run's (``Running.container_id``)
    current: Termination | None = None  # the state, when terminated
    last: Termination | None = None  # lastState

    @property
    def is_running(self) -> bool:
        return bool(self.running_since)

    def wait(self, reason: str, message: str = "") -> None:
        """Waiting (to start, to be configured, in back-off)."""
        self.waiting_reason, self.waiting_message = reason, message
        self.running_since, self.pid = "", 0

    @property
    def next_run(self) -> int:
        """The ``restartCount`` the next run of this container will have."""
        return self.restart_count + (self.current is not None)

    def run(self, now: str, pid: int, container_id: str = "") -> None:
        """A process of this container started (after an exit: a restart)."""
        if self.current is not None:
            self.last, self.current = self.current, None
            self.restart_count += 1
        self.running_since, self.pid, self.waiting_reason = now, pid, ""
        self.container_id = container_id

    def start_failed(self, ended: Termination) -> None:
        """A start of this container failed (it counts as a run: a retry is a restart)."""
        if self.current is not None:
            self.last = self.current
            self.restart_count += 1
        self.end(ended)

    def end(self, ended: Termination) -> None:
        """The process ended (or could never start)."""
        self.current, self.running_since, self.pid, self.waiting_reason = ended, "", 0, ""

    def render(self, *, ready: bool, started: bool | None) -> dict[str, Any]:
        if self.running_since:
            state = render.running(self.running_since)
        elif self.current is not None and not self.waiting_reason:
            state = self.current.state()
        else:
            state = render.waiting(self.waiting_reason, self.waiting_message)
        shown_last = self.current if self.waiting_reason and self.current else self.last
        # kubelet's containerID: the running run's, else the last run's (also while waiting)
        if self.running_since:
            container_id = self.container_id
        else:
            container_id = self.current.container_id if self.current is not None else ""
        return render.container(
            name=self.name,
            image=self.image,
            container_id=container_id,
            ready=ready,
            started=started,
            restart_count=self.restart_count,
            state=state,
            last_state=shown_last.state() if shown_last is not None else {},
        )


@dataclass(slots=True)
class PodState:
    """One pod the kubelet runs."""

    namespace: str
    name: str
    uid: str
    scheduled_at: str
    init_containers: list[ContainerState]
    containers: list[ContainerState]
    phase: str = "Pending"
    start_time: str = ""
    initialized_at: str = ""
    ready_since: str = ""
    was_ready: bool = False
    reason: str = ""
    message: str = ""
    pod_ip: str = ""  # its address on a network of its own ("": the host's)

    @property
    def is_terminal(self) -> bool:
        return self.phase in TERMINAL

    @property
    def is_ready(self) -> bool:
        return not self.is_terminal and all(c.is_running for c in self.containers)

    def all_containers(self) -> list[ContainerState]:
        return [*self.init_containers, *self.containers]

    def container(self, name: str) -> ContainerState | None:
        return next((c for c in self.all_containers() if c.name == name), None)

    def note_readiness(self, now: str) -> None:
        """Record when readiness last changed (call before rendering a transition)."""
        if self.is_ready != self.was_ready or not self.ready_since:
            self.was_ready, self.ready_since = self.is_ready, now

    def fail(self, reason: str, message: str) -> None:
        """The pod cannot run: Failed, with a reason for people and controllers."""
        self.phase, self.reason, self.message = "Failed", reason, message

    def status(self) -> dict[str, Any]:
        """The pod's ``status`` now."""
        ready = self.is_ready
        conditions = render.conditions(
            scheduled_at=self.scheduled_at,
            initialized=bool(self.initialized_at),
            initialized_since=self.initialized_at or self.scheduled_at,
            ready=ready,
            ready_since=self.ready_since or self.scheduled_at,
            terminal=self.is_terminal,
        )
        return render.pod(
            phase=self.phase,
            conditions=conditions,
            host_ip=HOST_IP,
            containers=[  # each ready while it runs (no probes): the pod once all are
                c.render(ready=c.is_running and not self.is_terminal, started=c.is_running)
                for c in self.containers
            ],
            init_containers=[
                c.render(
                    ready=c.current is not None and not c.current.exit_code,
                    started=None,
                )
                for c in self.init_containers
            ],
            start_time=self.start_time,
            reason=self.reason,
            message=self.message,
            pod_ip=self.pod_ip,
        )
