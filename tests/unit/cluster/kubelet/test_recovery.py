"""``recovery``: a container's state rebuilt from its run record or its last status."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trainop.cluster.kubelet import recovery
from trainop.cluster.kubelet.podstate import ContainerState
from trainop.cluster.kubelet.status.render import Termination

NOW = "2026-01-02T00:00:00Z"
T0 = "2026-01-01T00:00:00Z"
ID = "podman://" + "ab" * 32


def fresh() -> ContainerState:
    return ContainerState("main", "img")


def terminated(code: int, reason: str) -> dict[str, Any]:
    return {"exitCode": code, "reason": reason, "startedAt": T0, "finishedAt": T0}


def test_records_round_trip_and_a_bad_record_is_none(tmp_path: Path) -> None:
    path = tmp_path / "runs" / "main.json"
    recovery.write_started(path, 2, T0, ID)
    assert recovery.read(path) == recovery.Record(2, T0, None, ID)
    ended = Termination(3, "Error", T0, NOW, "boom", ID)
    recovery.write_ended(path, 2, ended)
    assert recovery.read(path) == recovery.Record(2, T0, ended, ID)
    assert path.stat().st_mode & 0o777 == 0o600
    path.write_text("{not json")
    assert recovery.read(path) is None
    assert recovery.read(tmp_path / "absent.json") is None


def test_a_started_run_without_an_end_is_lost_and_counted() -> None:
    container = fresh()
    lost = recovery.recover(container, None, recovery.Record(2, T0, None, ID), NOW)
    assert lost
    assert container.restart_count == 3
    assert container.current == Termination(
        137, "ContainerStatusUnknown", T0, NOW, recovery.LOST_MESSAGE, ID
    )
    shown = container.render(ready=False, started=False)
    assert shown["state"]["terminated"]["reason"] == "ContainerStatusUnknown"
    assert shown["state"]["terminated"]["containerID"] == shown["containerID"] == ID


def test_an_ended_run_is_kept_as_it_ended() -> None:
    container = fresh()
    ended = Termination(0, "Completed", T0, NOW)
    assert not recovery.recover(container, None, recovery.Record(1, T0, ended), NOW)
    assert (container.current, container.restart_count) == (ended, 1)


def test_without_a_record_the_last_status_decides() -> None:
    running = {"restartCount": 4, "containerID": ID, "state": {"running": {"startedAt": T0}}}
    container = fresh()
    assert recovery.recover(container, running, None, NOW)
    assert container.restart_count == 5
    assert container.current is not None
    assert container.current.exit_code == 137
    assert container.current.container_id == ID

    ended = {**terminated(0, "Completed"), "containerID": ID}
    done = {"restartCount": 1, "state": {"terminated": ended}}
    container = fresh()
    assert not recovery.recover(container, done, None, NOW)
    assert container.current is not None
    assert container.current.reason == "Completed"
    assert container.current.container_id == ID
    assert container.restart_count == 1

    backing_off = {
        "restartCount": 2,
        "state": {"waiting": {"reason": "CrashLoopBackOff"}},
        "lastState": {"terminated": terminated(3, "Error")},
    }
    container = fresh()
    assert not recovery.recover(container, backing_off, None, NOW)
    assert container.current is not None
    assert container.current.exit_code == 3
    assert container.restart_count == 2

    container = fresh()
    waiting = {"restartCount": 0, "state": {"waiting": {"reason": "ContainerCreating"}}}
    assert not recovery.recover(container, waiting, None, NOW)
    assert container.current is None
    assert container.restart_count == 0
