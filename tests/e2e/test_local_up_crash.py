"""Crash of ``trainop local up --runtime podman`` (issue 25 item 1, note 120): kill -9 of the
daemon while Podman containers run; the next ``local up`` adopts the earlier session and
re-attaches to them.

One ``Never`` PyTorchJob (a master and a worker) and two plain pods run as containers of
``localhost/trainop-python:3.11``, with a hostPath of marker files: every run appends one line
to its own file when it starts, then runs until a ``go-*`` file of its group exists (named
apart from every run's own file: a run never lets itself go). The daemon
is SIGKILLed while all run; the pods are let go while it is down (``exits-3`` exits 3), the job
only once it is back. Afterwards the job Succeeded, every container ran exactly once with
``restartCount`` 0, ``exits-3`` failed with its own exit code 3, and the logs hold each run's
whole output. Marked ``e2e`` and ``containers``; skipped where podman or the image is missing.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from tests.integration.local.test_daemon_crash import BLOCKING, alive, conditions, lines, phase
from tests.polling import wait_for

IMAGE = "localhost/trainop-python:3.11"
MOUNT = "/markers"

pytestmark = [pytest.mark.e2e, pytest.mark.containers]


def trainop(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "trainop.cli.main", "local", *args, "--state-dir", str(state)]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)


@pytest.fixture
def state(tmp_path: Path) -> Any:
    podman = subprocess.run(["podman", "--version"], capture_output=True, check=False)
    if podman.returncode != 0:
        pytest.skip("podman is not installed (make container-env)")
    found = subprocess.run(["podman", "image", "exists", IMAGE], check=False)
    if found.returncode != 0:
        pytest.skip(f"image {IMAGE} is missing (make container-images)")
    directory = tmp_path / "local"
    yield directory
    trainop(directory, "down")


def spec(markers: Path, name: str, go: str, code: int = 0) -> dict[str, Any]:
    argv = ["python3", "-c", BLOCKING, f"{MOUNT}/{name}", f"{MOUNT}/{go}", str(code)]
    container = {
        "name": "main",
        "image": IMAGE,
        "command": argv,
        "volumeMounts": [{"name": "markers", "mountPath": MOUNT}],
    }
    volume = {"name": "markers", "hostPath": {"path": str(markers), "type": "Directory"}}
    return {"restartPolicy": "Never", "containers": [container], "volumes": [volume]}


def job(markers: Path) -> dict[str, Any]:
    def replica(kind: str) -> dict[str, Any]:
        pod = spec(markers, f"c-{kind}", "go-late")
        pod["containers"][0]["name"] = "pytorch"
        return {"replicas": 1, "restartPolicy": "Never", "template": {"spec": pod}}

    replicas = {"Master": replica("master"), "Worker": replica("worker")}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "c"},
        "spec": {"pytorchReplicaSpecs": replicas},
    }


def test_kill_9_of_a_podman_daemon_leaves_its_containers_running(
    state: Path, tmp_path: Path
) -> None:
    markers = tmp_path / "markers"
    markers.mkdir(mode=0o777)
    markers.chmod(0o777)
    started = trainop(state, "up", "--runtime", "podman")
    assert started.returncode == 0, started.stdout + started.stderr
    api = k8s_config.new_client_from_config(config_file=str(state / "kubeconfig"))
    custom, core = k8s.CustomObjectsApi(api), k8s.CoreV1Api(api)
    custom.create_namespaced_custom_object(
        "kubeflow.org", "v1", "default", "pytorchjobs", job(markers)
    )
    for name, code in (("early", 0), ("exits-3", 3)):
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}}
        core.create_namespaced_pod(
            "default", {**body, "spec": spec(markers, name, "go-early", code)}
        )
    pods = ["c-master-0", "c-worker-0", "early", "exits-3"]
    runs = ["c-master", "c-worker", "early", "exits-3"]
    wait_for(
        lambda: (
            all(phase(core, p) == "Running" for p in pods)
            and all(len(lines(markers / r)) == 1 for r in runs)
        ),
        timeout=180,
        what="every container running",
    )

    daemon = int((state / "trainop.pid").read_text())
    os.kill(daemon, signal.SIGKILL)
    wait_for(lambda: not alive(daemon), timeout=30, what="the daemon gone")
    (markers / "go-early").touch()

    restarted = trainop(state, "up", "--runtime", "podman")
    assert restarted.returncode == 0, restarted.stdout + restarted.stderr
    api = k8s_config.new_client_from_config(config_file=str(state / "kubeconfig"))
    custom, core = k8s.CustomObjectsApi(api), k8s.CoreV1Api(api)
    wait_for(
        lambda: phase(core, "early") == "Succeeded" and phase(core, "exits-3") == "Failed",
        timeout=120,
        what="the pods let go while the daemon was down ended",
    )
    assert phase(core, "c-master-0") == "Running", "the job's containers were re-attached"
    (markers / "go-late").touch()
    wait_for(lambda: "Succeeded" in conditions(custom, "c"), timeout=120, what="c Succeeded")
    # the job succeeds with its master: the worker's end may be reported just after
    wait_for(lambda: phase(core, "c-worker-0") == "Succeeded", timeout=60, what="worker ended")

    for run in runs:
        assert len(lines(markers / run)) == 1, f"{run} ran again"
    for pod in ("c-master-0", "c-worker-0", "early"):
        entry = core.read_namespaced_pod(pod, "default").status.container_statuses[0]
        assert (entry.restart_count, entry.state.terminated.exit_code) == (0, 0), pod
    exited = core.read_namespaced_pod("exits-3", "default").status.container_statuses[0]
    assert exited.restart_count == 0
    assert (exited.state.terminated.exit_code, exited.state.terminated.reason) == (3, "Error")
    for pod in ("c-master-0", "exits-3"):
        assert core.read_namespaced_pod_log(pod, "default") == "started\ndone\n", pod


def test_down_after_a_crash_removes_the_podman_containers_left(state: Path, tmp_path: Path) -> None:
    markers = tmp_path / "markers"
    markers.mkdir(mode=0o777)
    markers.chmod(0o777)
    started = trainop(state, "up", "--runtime", "podman")
    assert started.returncode == 0, started.stdout + started.stderr
    api = k8s_config.new_client_from_config(config_file=str(state / "kubeconfig"))
    core = k8s.CoreV1Api(api)
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "sleeper"}}
    core.create_namespaced_pod("default", {**body, "spec": spec(markers, "sleeper", "never")})
    wait_for(lambda: len(lines(markers / "sleeper")) == 1, timeout=180, what="it runs")
    label = f"label=trainop.state={state / 'podman'}"

    def left() -> list[str]:
        listed = subprocess.run(
            ["podman", "ps", "-a", "-q", "--filter", label],
            capture_output=True,
            text=True,
            check=True,
        )
        return listed.stdout.split()

    daemon = int((state / "trainop.pid").read_text())
    os.kill(daemon, signal.SIGKILL)
    wait_for(lambda: not alive(daemon), timeout=30, what="the daemon gone")
    assert left(), "the container died with the daemon"
    stopped = trainop(state, "down")
    assert stopped.stdout.strip() == "no local cluster running", stopped.stdout
    assert left() == []
