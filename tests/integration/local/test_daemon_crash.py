"""Crash recovery of ``trainop local up`` (issue 10 item 5): kill -9 of the daemon mid-run.

Two PyTorchJobs run under one daemon: ``never`` (``restartPolicy: Never``) and ``onfail``
(``OnFailure``). Their workers exit 0 at once; their masters block until a ``go`` file
exists. The daemon is SIGKILLed while the masters run (their processes die with it), ``go`` is
created, and the daemon started again. Every run appends a line to a marker file, so the test
sees what ran again: no worker (Succeeded) runs again, the ``never`` master is not run again
(its pod fails with ``ContainerStatusUnknown``, naming the lost container, and so does the
job), the ``onfail`` master is restarted in place once (``restartCount`` 1) and its job
succeeds.
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
marker, go = sys.argv[1], sys.argv[2]
with open(marker, 'a') as out:
    out.write(f"{os.getpid()}\\n")
deadline = time.monotonic() + 120
while not os.path.exists(go) and time.monotonic() < deadline:
    time.sleep(0.05)
"""


def job(name: str, policy: str, markers: Path) -> dict[str, Any]:
    def replica(replica: str, replicas: int) -> dict[str, Any]:
        argv = [sys.executable, "-c", BLOCKING, str(markers / f"{name}-{replica}"), "GO"]
        if replica == "worker":
            argv[-1] = str(markers)  # exists: a worker ends at once
        else:
            argv[-1] = str(markers / "go")
        container = {"name": "pytorch", "image": "python:3.11", "command": argv}
        spec = {"containers": [container]}
        return {"replicas": replicas, "restartPolicy": policy, "template": {"spec": spec}}

    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name},
        "spec": {
            "pytorchReplicaSpecs": {"Master": replica("master", 1), "Worker": replica("worker", 2)}
        },
    }


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


def test_kill_9_of_the_daemon_neither_reruns_finished_work_nor_never_pods(
    state: Path, tmp_path: Path
) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    started = trainop(state, "up")
    assert started.returncode == 0, started.stdout + started.stderr
    api = k8s_config.new_client_from_config(config_file=str(state / "kubeconfig"))
    custom, core = k8s.CustomObjectsApi(api), k8s.CoreV1Api(api)
    for name, policy in (("never", "Never"), ("onfail", "OnFailure")):
        custom.create_namespaced_custom_object(
            "kubeflow.org", "v1", "default", "pytorchjobs", job(name, policy, markers)
        )
    workers = [f"{j}-worker-{i}" for j in ("never", "onfail") for i in (0, 1)]
    masters = {j: markers / f"{j}-master" for j in ("never", "onfail")}
    wait_for(
        lambda: (
            all(phase(core, w) == "Succeeded" for w in workers)
            and all(len(lines(m)) == 1 for m in masters.values())
        ),
        timeout=90,
        what="workers Succeeded and masters running",
    )
    wait_for(
        lambda: all(phase(core, f"{j}-master-0") == "Running" for j in masters),
        timeout=30,
        what="masters reported Running",
    )

    daemon = int((state / "trainop.pid").read_text())
    os.kill(daemon, signal.SIGKILL)
    lost = [int(lines(m)[0]) for m in masters.values()]
    wait_for(
        lambda: not any(alive(p) for p in [daemon, *lost]),
        timeout=30,
        what="no process outlived the daemon",
    )
    (markers / "go").touch()

    restarted = trainop(state, "up")
    assert restarted.returncode == 0, restarted.stdout + restarted.stderr
    api = k8s_config.new_client_from_config(config_file=str(state / "kubeconfig"))
    custom, core = k8s.CustomObjectsApi(api), k8s.CoreV1Api(api)
    wait_for(
        lambda: (
            "Failed" in conditions(custom, "never") and "Succeeded" in conditions(custom, "onfail")
        ),
        timeout=90,
        what="never Failed and onfail Succeeded",
    )

    for name in ("never", "onfail"):  # two workers each, each ran once: none ran again
        assert len(lines(markers / f"{name}-worker")) == 2, name
    assert len(lines(masters["never"])) == 1, "a Never container ran again"
    assert len(lines(masters["onfail"])) == 2, "the OnFailure master: lost, then one more run"

    never = core.read_namespaced_pod("never-master-0", "default").status
    assert never.phase == "Failed"
    assert never.reason == "ContainerStatusUnknown"
    assert "container pytorch" in never.message
    terminated = never.container_statuses[0].state.terminated
    assert (terminated.reason, terminated.exit_code) == ("ContainerStatusUnknown", 137)
    assert terminated.message == "The container could not be located when the pod was terminated"
    failed = conditions(custom, "never")["Failed"]["message"]
    assert "Master replica(s) failed" in failed, failed
    events = core.list_namespaced_event("default").items
    exited = [e.message for e in events if e.involved_object.name == "never"]
    assert "Pod: default.never-master-0 exited with code 137" in exited, exited

    onfail = core.read_namespaced_pod("onfail-master-0", "default").status
    assert onfail.phase == "Succeeded"
    entry = onfail.container_statuses[0]
    assert entry.restart_count >= 1
    assert entry.last_state.terminated.reason == "ContainerStatusUnknown"
