"""Crash of ``trainop local up`` (issue 25 item 1, note 120): kill -9 of the daemon mid-run.

Three PyTorchJobs (``restartPolicy: Never``, a master and a worker each) and one plain pod run
under one daemon. Every replica appends one line to a marker file of its own when it starts
(so "ran exactly once" is checkable), then runs until a ``go`` file of its group exists. The
daemon is SIGKILLed while all of them run: their containers live on under their supervisors.
Jobs ``a`` and ``b`` and the pod ``exits-3`` are let go while the daemon is down (their
containers end then: the pod with exit code 3); job ``c`` only after the daemon is back, so it
is re-attached while it runs. After ``trainop local up`` again every job Succeeds, every
replica ran exactly once with ``restartCount`` 0, and the pod failed with its own exit code 3
(not 137, ``ContainerStatusUnknown``).
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

from kubernetes import client as k8s
from kubernetes import config as k8s_config

from tests.integration.local.conftest import trainop
from tests.polling import wait_for

BLOCKING = """
import os, sys, time
marker, go, code = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(marker, 'a') as out:
    out.write(f"{os.getpid()}\\n")
print("started", flush=True)
deadline = time.monotonic() + 120
while not os.path.exists(go) and time.monotonic() < deadline:
    time.sleep(0.05)
print("done", flush=True)
sys.exit(code)
"""
JOBS = {"a": "early", "b": "early", "c": "late"}


def command(marker: Path, go: Path, code: int = 0) -> list[str]:
    return [sys.executable, "-c", BLOCKING, str(marker), str(go), str(code)]


def job(name: str, markers: Path) -> dict[str, Any]:
    def replica(kind: str) -> dict[str, Any]:
        argv = command(markers / f"{name}-{kind}", markers / JOBS[name])
        container = {"name": "pytorch", "image": "python:3.11", "command": argv}
        return {
            "replicas": 1,
            "restartPolicy": "Never",
            "template": {"spec": {"containers": [container]}},
        }

    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name},
        "spec": {"pytorchReplicaSpecs": {"Master": replica("master"), "Worker": replica("worker")}},
    }


def exiting_pod(markers: Path) -> dict[str, Any]:
    argv = command(markers / "exits-3", markers / "early", 3)
    container = {"name": "main", "image": "python:3.11", "command": argv}
    spec = {"restartPolicy": "Never", "containers": [container]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "exits-3"}, "spec": spec}


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def alive(pid: int) -> bool:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return fields[0] not in ("Z", "X")


def conditions(custom: k8s.CustomObjectsApi, name: str) -> dict[str, dict[str, Any]]:
    obj = custom.get_namespaced_custom_object("kubeflow.org", "v1", "default", "pytorchjobs", name)
    found = (obj.get("status") or {}).get("conditions") or []
    return {c["type"]: c for c in found if c["status"] == "True"}


def phase(core: k8s.CoreV1Api, name: str) -> str:
    try:
        return str(core.read_namespaced_pod(name, "default").status.phase)
    except k8s.ApiException as exc:
        if exc.status == 404:  # not created yet
            return ""
        raise


def clients(state: Path) -> tuple[k8s.CustomObjectsApi, k8s.CoreV1Api]:
    api = k8s_config.new_client_from_config(config_file=str(state / "kubeconfig"))
    return k8s.CustomObjectsApi(api), k8s.CoreV1Api(api)


def test_kill_9_of_the_daemon_leaves_never_jobs_running_and_each_replica_runs_once(
    state: Path, tmp_path: Path
) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    started = trainop(state, "up")
    assert started.returncode == 0, started.stdout + started.stderr
    custom, core = clients(state)
    for name in JOBS:
        custom.create_namespaced_custom_object(
            "kubeflow.org", "v1", "default", "pytorchjobs", job(name, markers)
        )
    core.create_namespaced_pod("default", exiting_pod(markers))
    replicas = [f"{name}-{kind}" for name in JOBS for kind in ("master", "worker")]
    pods = [f"{name}-{kind}-0" for name in JOBS for kind in ("master", "worker")] + ["exits-3"]
    wait_for(
        lambda: (
            all(phase(core, p) == "Running" for p in pods)
            and all(len(lines(markers / r)) == 1 for r in [*replicas, "exits-3"])
        ),
        timeout=120,
        what="every replica running",
    )

    daemon = int((state / "trainop.pid").read_text())
    os.kill(daemon, signal.SIGKILL)
    wait_for(lambda: not alive(daemon), timeout=30, what="the daemon gone")
    running = {r: int(lines(markers / r)[0]) for r in [*replicas, "exits-3"]}
    assert all(alive(pid) for pid in running.values()), "a container died with the daemon"
    (markers / "early").touch()  # a, b and exits-3 end while no daemon runs
    early = [r for r in running if r.startswith(("a-", "b-", "exits-3"))]
    wait_for(
        lambda: not any(alive(running[r]) for r in early),
        timeout=60,
        what="the early containers ended while the daemon was down",
    )
    assert alive(running["c-master"])
    assert alive(running["c-worker"])

    restarted = trainop(state, "up")
    assert restarted.returncode == 0, restarted.stdout + restarted.stderr
    custom, core = clients(state)
    wait_for(
        lambda: all(phase(core, f"c-{kind}-0") == "Running" for kind in ("master", "worker")),
        timeout=60,
        what="c re-attached and still Running",
    )
    (markers / "late").touch()
    wait_for(
        lambda: all("Succeeded" in conditions(custom, name) for name in JOBS),
        timeout=120,
        what="every job Succeeded",
    )

    for replica in replicas:
        assert len(lines(markers / replica)) == 1, f"{replica} ran again"
    for pod in pods[:-1]:
        status = core.read_namespaced_pod(pod, "default").status
        entry = status.container_statuses[0]
        assert (entry.restart_count, entry.state.terminated.exit_code) == (0, 0), pod
        assert entry.state.terminated.reason == "Completed", pod
    for name in JOBS:
        assert "Failed" not in conditions(custom, name), name

    wait_for(lambda: phase(core, "exits-3") == "Failed", timeout=60, what="exits-3 Failed")
    exited = core.read_namespaced_pod("exits-3", "default").status.container_statuses[0]
    assert len(lines(markers / "exits-3")) == 1
    assert exited.restart_count == 0
    assert (exited.state.terminated.exit_code, exited.state.terminated.reason) == (3, "Error")
    log = core.read_namespaced_pod_log("c-master-0", "default")
    assert log == "started\ndone\n", "the re-attached run's output reached its log"


def test_down_after_a_crash_stops_the_containers_the_daemon_left(
    state: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "sleeper"
    started = trainop(state, "up")
    assert started.returncode == 0, started.stdout + started.stderr
    _, core = clients(state)
    argv = command(marker, tmp_path / "never-created")
    container = {"name": "main", "image": "python:3.11", "command": argv}
    body = {"restartPolicy": "Never", "containers": [container]}
    core.create_namespaced_pod(
        "default",
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "sleeper"}, "spec": body},
    )
    wait_for(lambda: len(lines(marker)) == 1, timeout=60, what="the container running")
    pid = int(lines(marker)[0])
    daemon = int((state / "trainop.pid").read_text())
    os.kill(daemon, signal.SIGKILL)
    wait_for(lambda: not alive(daemon), timeout=30, what="the daemon gone")
    assert alive(pid), "the container died with the daemon"

    stopped = trainop(state, "down")
    assert stopped.stdout.strip() == "no local cluster running", stopped.stdout
    wait_for(lambda: not alive(pid), timeout=30, what="the container stopped by down")
