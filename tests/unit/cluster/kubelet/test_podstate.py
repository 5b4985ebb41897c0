"""``podstate``: a container's ``containerID`` is its run's, in the status and its states."""

from __future__ import annotations

from trainop.cluster.kubelet.podstate import ContainerState, PodState
from trainop.cluster.kubelet.status.render import Termination

T0 = "2026-01-01T00:00:00Z"
T1 = "2026-01-01T00:00:05Z"
FIRST = "podman://" + "a1" * 32
SECOND = "podman://" + "b2" * 32


def shown(container: ContainerState) -> dict[str, object]:
    return container.render(ready=False, started=None)


def test_the_id_is_the_running_runs_then_its_terminated_states() -> None:
    container = ContainerState("main", "img")
    assert "containerID" not in shown(container)  # waiting to start: no run yet
    container.run(T0, 10, FIRST)
    assert shown(container)["containerID"] == FIRST
    container.end(Termination(1, "Error", T0, T1, container_id=container.container_id))
    entry = shown(container)
    assert entry["containerID"] == FIRST
    assert entry["state"] == {
        "terminated": {
            "exitCode": 1,
            "reason": "Error",
            "startedAt": T0,
            "finishedAt": T1,
            "containerID": FIRST,
        }
    }
    container.wait("CrashLoopBackOff", "back-off")  # kubelet keeps the last run's id
    entry = shown(container)
    assert entry["containerID"] == FIRST
    assert entry["lastState"]["terminated"]["containerID"] == FIRST
    container.run(T1, 11, SECOND)  # the restart: a new id, lastState keeps the first run's
    entry = shown(container)
    assert (entry["containerID"], entry["restartCount"]) == (SECOND, 1)
    assert entry["lastState"]["terminated"]["containerID"] == FIRST


def test_a_run_without_an_id_shows_none() -> None:
    container = ContainerState("main", "img")
    container.start_failed(Termination(128, "StartError", T0, T0, "no such file"))
    entry = shown(container)
    assert "containerID" not in entry
    assert "containerID" not in entry["state"]["terminated"]


def test_next_run_is_the_restart_count_the_next_run_shows() -> None:
    container = ContainerState("main", "img")
    assert container.next_run == 0
    container.run(T0, 10, FIRST)
    container.end(Termination(1, "Error", T0, T1, container_id=FIRST))
    assert container.next_run == 1
    container.run(T1, 11, SECOND)
    assert container.restart_count == container.next_run == 1


def test_a_pull_failure_after_a_run_keeps_that_run_as_last_state() -> None:
    """``imagePullPolicy: Always`` and the registry gone: the failed pull is no run (podrun
    only makes the container wait), so lastState stays the run before it and the next run
    counts one restart, not two."""
    container = ContainerState("main", "img")
    container.run(T0, 10, FIRST)
    container.end(Termination(1, "Error", T0, T1, container_id=FIRST))
    container.wait("ErrImagePull", "failed to pull image")
    entry = shown(container)
    assert entry["state"] == {
        "waiting": {"reason": "ErrImagePull", "message": "failed to pull image"}
    }
    assert entry["lastState"]["terminated"]["exitCode"] == 1
    assert (entry["restartCount"], entry["containerID"]) == (0, FIRST)
    container.run(T1, 11, SECOND)
    assert shown(container)["restartCount"] == 1


def test_a_running_container_is_ready_while_another_has_completed() -> None:
    """Each container is ready while it runs (no probes here); the pod only when all are:
    a sidecar that finished leaves the server ready and the pod not."""
    server, client = ContainerState("server", "img"), ContainerState("client", "img")
    pod = PodState("ns", "two", "uid", T0, [], [server, client], phase="Running")
    server.run(T0, 10, FIRST)
    client.run(T0, 11, SECOND)
    client.end(Termination(0, "Completed", T0, T1, container_id=SECOND))
    status = pod.status()
    assert [(c["name"], c["ready"]) for c in status["containerStatuses"]] == [
        ("server", True),
        ("client", False),
    ]
    ready = {c["type"]: c["status"] for c in status["conditions"]}
    assert (ready["ContainersReady"], ready["Ready"]) == ("False", "False")
    client.run(T1, 12, FIRST)  # both running: the pod is ready too
    status = pod.status()
    assert [c["ready"] for c in status["containerStatuses"]] == [True, True]
    assert {c["type"]: c["status"] for c in status["conditions"]}["Ready"] == "True"
