"""One simulated pod: its state machine and the ``status`` it shows.

A ``SimPod`` moves through the states below; each arrow is one transition, and the kubelet
writes ``status()`` once after each (a restart with no back-off is one transition)::

    Pending ──start──▶ Running ──exit──┬──▶ Succeeded | Failed        (no restart due)
       ▲                  ▲            ├──▶ Running, CrashLoopBackOff (restart after a delay)
       │                  └──start─────┘    ... ──start──▶ Running, restartCount + 1
    first sight                                any state ──kill (deletion)──▶ Failed

Every container of the pod follows the same run (the rules are per pod): they start, exit and
restart together. Init containers complete instantly when the pod starts.

Invariants: ``restart_count`` counts in-place restarts done; ``runs`` the runs that ended
(the index ``Rules.exit_code_of`` uses); ``phase`` is terminal only after ``exit`` without a
restart, ``kill`` or ``reject``. Pure apart from mutating itself: time is an argument.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from trainop.cluster.kubelet.sim.rules import Rules
from trainop.cluster.kubelet.status import render, restartpolicy
from trainop.cluster.kubelet.status.render import TERMINAL, Termination
from trainop.kube.clock import Timer

SIGTERM_EXIT_CODE = 143


@dataclass(slots=True)
class SimPod:
    """The simulated state of one pod (see the module docstring)."""

    namespace: str
    name: str
    uid: str
    containers: tuple[tuple[str, str], ...]  # (name, image)
    init_containers: tuple[tuple[str, str], ...]
    restart_policy: str
    rules: Rules
    host_ip: str
    scheduled_at: str
    phase: str = "Pending"
    waiting_reason: str = "ContainerCreating"
    running_since: str = ""
    start_time: str = ""
    ready_changed_at: str = ""
    runs: int = 0
    restart_count: int = 0
    current: Termination | None = None  # the state, when terminated
    last: Termination | None = None  # lastState
    reason: str = ""
    message: str = ""
    deleting: bool = False
    timer: Timer | None = field(default=None, repr=False)

    @property
    def is_terminal(self) -> bool:
        return self.phase in TERMINAL

    @property
    def is_ready(self) -> bool:
        return bool(self.running_since)

    def start(self, now: str) -> None:
        """The containers start (again, after an exit: an in-place restart)."""
        if self.runs:
            self.restart_count += 1
        self.phase, self.running_since, self.waiting_reason = "Running", now, ""
        self.start_time = self.start_time or now
        self.ready_changed_at = now

    def exit(self, now: str) -> bool:
        """The containers exit by rule; True when a restart is due (``restartPolicy``)."""
        code = self.rules.exit_code_of(self.runs)
        self.runs += 1
        ended = Termination(code, self.rules.reason_for(code), self.running_since, now)
        self.running_since, self.ready_changed_at = "", now
        if restartpolicy.restarts(self.restart_policy, code):
            self.last, self.waiting_reason = ended, "CrashLoopBackOff"
            return True
        self.current = ended
        self.phase = restartpolicy.phase_when_done([code == 0])
        return False

    def kill(self, now: str) -> None:
        """The pod is being deleted: running or waiting containers end as on SIGTERM."""
        started = self.running_since or now
        self.current = Termination(SIGTERM_EXIT_CODE, "Error", started, now)
        self.running_since, self.waiting_reason, self.ready_changed_at = "", "", now
        self.phase = "Failed"

    def reject(self, now: str, message: str) -> None:
        """The pod cannot be simulated (bad annotation): Failed with a reason, never run."""
        self.phase, self.reason, self.message = "Failed", "InvalidSimulationRule", message
        self.waiting_reason, self.ready_changed_at = "InvalidSimulationRule", now

    def status(self) -> dict[str, Any]:
        """The pod's ``status`` as the kubelet reports it now."""
        started_or_seen = self.start_time or self.scheduled_at
        conditions = render.conditions(
            scheduled_at=self.scheduled_at,
            initialized=bool(self.start_time or not self.init_containers),
            initialized_since=started_or_seen,
            ready=self.is_ready,
            ready_since=self.ready_changed_at or self.scheduled_at,
            terminal=self.is_terminal,
        )
        return render.pod(
            phase=self.phase,
            conditions=conditions,
            host_ip=self.host_ip,
            containers=[self._container(n, image) for n, image in self.containers],
            init_containers=[self._init(n, i) for n, i in self.init_containers],
            start_time=self.start_time,
            reason=self.reason,
            message=self.message,
        )

    def _container(self, name: str, image: str) -> dict[str, Any]:
        if self.running_since:
            state = render.running(self.running_since)
        elif self.current is not None:
            state = self.current.state()
        else:
            state = render.waiting(self.waiting_reason)
        return render.container(
            name=name,
            image=image,
            container_id=f"sim://{self.uid}/{name}/{self.restart_count}",
            ready=self.is_ready,
            started=self.is_ready,
            restart_count=self.restart_count,
            state=state,
            last_state=self.last.state() if self.last is not None else {},
        )

    def _init(self, name: str, image: str) -> dict[str, Any]:
        if self.start_time:
            state = Termination(0, "Completed", self.start_time, self.start_time).state()
        else:
            state = render.waiting("PodInitializing")
        return render.container(
            name=name,
            image=image,
            container_id="",
            ready=bool(self.start_time),
            restart_count=0,
            state=state,
            last_state={},
        )
