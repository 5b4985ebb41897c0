"""What a restarted kubelet knows about the containers an earlier kubelet ran.

Every start and every exit of a container is recorded in its pod's sandbox
(``<sandbox>/runs/<container>.json``: the ``restartCount`` it ran with, when it started and,
once it ended, its ``Termination``), written atomically *before* the status is sent. After a
kubelet (daemon) restart, ``recover`` rebuilds each container's state from that record, or
from the pod's last written status where there is none:

- a run that ended: that termination (a container that exited 0 is never run again unless its
  pod's ``restartPolicy`` is ``Always``);
- a run that started and never ended (its process was lost with the kubelet): terminated,
  reason ``ContainerStatusUnknown``, exit code 137, message "The container could not be
  located when the pod was terminated", ``restartCount`` + 1, as kubelet reports a container
  it can no longer find (with the lost run's ``containerID``, which the record keeps); the
  restart policy then decides (``podrun``);
- no run: the container starts as in a new pod.

Neighbours: ``podrun`` (writes the records, calls ``recover``), ``podstate``.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainop.cluster import privacy
from trainop.cluster.kubelet.podstate import ContainerState
from trainop.cluster.kubelet.status.render import Termination

LOST_REASON = "ContainerStatusUnknown"
LOST_EXIT_CODE = 137
LOST_MESSAGE = "The container could not be located when the pod was terminated"


@dataclass(frozen=True, slots=True)
class Record:
    """The last run of one container, as recorded in the sandbox."""

    restart_count: int
    started_at: str
    ended: Termination | None
    container_id: str = ""


def write_started(path: Path, restart_count: int, started_at: str, container_id: str = "") -> None:
    """Record that run ``restart_count`` (the runtime's ``container_id``) started."""
    data = {
        "restartCount": restart_count,
        "startedAt": started_at,
        "containerID": container_id,
        "ended": None,
    }
    _write(path, data)


def write_ended(path: Path, restart_count: int, ended: Termination) -> None:
    """Record how run ``restart_count`` of the container ended."""
    data = {
        "restartCount": restart_count,
        "startedAt": ended.started_at,
        "containerID": ended.container_id,
        "ended": {
            "exitCode": ended.exit_code,
            "reason": ended.reason,
            "startedAt": ended.started_at,
            "finishedAt": ended.finished_at,
            "message": ended.message,
            "containerID": ended.container_id,
        },
    }
    _write(path, data)


def read(path: Path) -> Record | None:
    """The record at ``path``; None when there is none (or it cannot be read)."""
    try:
        data = json.loads(path.read_text())
        ended = data.get("ended")
        return Record(
            restart_count=int(data["restartCount"]),
            started_at=str(data.get("startedAt") or ""),
            ended=None if ended is None else _termination(ended),
            container_id=str(data.get("containerID") or ""),
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def recover(
    container: ContainerState, status: dict[str, Any] | None, record: Record | None, now: str
) -> bool:
    """Rebuild ``container`` from its record or last status (see the module docstring).

    Returns True when a process of it was lost (it was running when the kubelet went away).
    """
    reported = int((status or {}).get("restartCount") or 0)
    state = (status or {}).get("state") or {}
    last = ((status or {}).get("lastState") or {}).get("terminated")
    if record is not None:
        container.restart_count = max(record.restart_count, reported)
        if record.ended is not None:
            _ended(container, record.ended, last)
            return False
        return _lost(container, record.started_at, now, record.container_id)
    if "running" in state:
        container.restart_count = reported
        started = str(state["running"].get("startedAt") or now)
        return _lost(container, started, now, str((status or {}).get("containerID") or ""))
    if "terminated" in state:
        container.restart_count = reported
        _ended(container, _termination(state["terminated"]), last)
    elif last:  # waiting to be restarted
        container.restart_count = reported
        _ended(container, _termination(last), None)
    return False


def _ended(container: ContainerState, ended: Termination, last: dict[str, Any] | None) -> None:
    container.end(ended)
    if last:
        container.last = _termination(last)


def _lost(container: ContainerState, started_at: str, now: str, container_id: str) -> bool:
    lost = Termination(
        LOST_EXIT_CODE, LOST_REASON, started_at or now, now, LOST_MESSAGE, container_id
    )
    container.restart_count += 1
    container.end(lost)
    return True


def _termination(data: dict[str, Any]) -> Termination:
    return Termination(
        exit_code=int(data.get("exitCode") or 0),
        reason=str(data.get("reason") or ""),
        started_at=str(data.get("startedAt") or ""),
        finished_at=str(data.get("finishedAt") or ""),
        message=str(data.get("message") or ""),
        container_id=str(data.get("containerID") or ""),
    )


def _write(path: Path, data: dict[str, Any]) -> None:
    privacy.private_dirs(path.parent)
    staged = path.with_name(f".{path.name}.tmp")
    with contextlib.suppress(FileNotFoundError):
        staged.unlink()
    fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(data, out)
    os.replace(staged, path)
