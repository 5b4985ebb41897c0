"""The pod ``status`` shapes a kubelet reports, built from plain values (pure).

Shared by the simulated kubelet (``sim.podstate``) and the process kubelet
(``kubelet.podstate``) so both render the same fields the same way: the four conditions with
their ``lastTransitionTime``, one entry per container (``state``/``lastState`` as
``running``, ``waiting`` or ``terminated``), and the pod-level fields (``phase``, host and pod
IPs, ``startTime``, ``reason``/``message``). Times are RFC 3339 strings the caller formats.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

TERMINAL = ("Succeeded", "Failed")


@dataclass(frozen=True, slots=True)
class Termination:
    """How one run of a container ended."""

    exit_code: int
    reason: str
    started_at: str
    finished_at: str
    message: str = ""
    container_id: str = ""  # the runtime's id of the run (``<runtime>://<id>``), if it had one

    def state(self) -> dict[str, Any]:
        """The ``terminated`` container state."""
        terminated: dict[str, Any] = {
            "exitCode": self.exit_code,
            "reason": self.reason,
            "startedAt": self.started_at,
            "finishedAt": self.finished_at,
        }
        if self.message:
            terminated["message"] = self.message
        if self.container_id:
            terminated["containerID"] = self.container_id
        return {"terminated": terminated}


def running(started_at: str) -> dict[str, Any]:
    """The ``running`` container state."""
    return {"running": {"startedAt": started_at}}


def waiting(reason: str, message: str = "") -> dict[str, Any]:
    """The ``waiting`` container state."""
    found: dict[str, Any] = {"reason": reason}
    if message:
        found["message"] = message
    return {"waiting": found}


def conditions(
    *,
    scheduled_at: str,
    initialized: bool,
    initialized_since: str,
    ready: bool,
    ready_since: str,
    terminal: bool,
) -> list[dict[str, Any]]:
    """PodScheduled, Initialized, ContainersReady and Ready, as kubelet reports them."""
    rows = [
        ("PodScheduled", True, scheduled_at),
        ("Initialized", initialized, initialized_since),
        ("ContainersReady", ready, ready_since),
        ("Ready", ready, ready_since),
    ]
    found = []
    for kind, value, since in rows:
        condition = {"type": kind, "status": str(value), "lastTransitionTime": since}
        if not value:
            condition["reason"] = "PodCompleted" if terminal else "ContainersNotReady"
        found.append(condition)
    return found


def container(
    *,
    name: str,
    image: str,
    container_id: str,
    ready: bool,
    restart_count: int,
    state: dict[str, Any],
    last_state: dict[str, Any],
    started: bool | None = None,
) -> dict[str, Any]:
    """One ``containerStatuses`` (or ``initContainerStatuses``) entry."""
    entry: dict[str, Any] = {
        "name": name,
        "image": image,
        "imageID": "",
        "ready": ready,
        "restartCount": restart_count,
        "state": state,
        "lastState": last_state,
    }
    if container_id:
        entry["containerID"] = container_id
    if started is not None:
        entry["started"] = started
    return entry


def pod(
    *,
    phase: str,
    conditions: list[dict[str, Any]],
    host_ip: str,
    containers: list[dict[str, Any]],
    init_containers: list[dict[str, Any]],
    start_time: str = "",
    reason: str = "",
    message: str = "",
    pod_ip: str = "",
) -> dict[str, Any]:
    """The pod's ``status`` (written as a merge patch: the server's own fields stay)."""
    out: dict[str, Any] = {
        "phase": phase,
        "conditions": conditions,
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "podIP": pod_ip or host_ip,  # a pod of its own network's address, else the host's
        "podIPs": [{"ip": pod_ip or host_ip}],
        "containerStatuses": containers,
    }
    if init_containers:
        out["initContainerStatuses"] = init_containers
    if start_time:
        out["startTime"] = start_time
    if reason:
        out["reason"], out["message"] = reason, message
    return out
