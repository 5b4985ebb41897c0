"""``trainop local up/down/status`` with the official Kubernetes client as the user."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kubernetes import client as k8s
from kubernetes import config as k8s_config

from tests.integration.local.conftest import trainop
from tests.integration.local.test_trainop_run import job, py
from tests.polling import wait_for


def api(state: Path) -> k8s.ApiClient:
    return k8s_config.new_client_from_config(config_file=str(state / "kubeconfig"))


def conditions(custom: k8s.CustomObjectsApi, name: str) -> list[tuple[str, str]]:
    obj = custom.get_namespaced_custom_object("kubeflow.org", "v1", "default", "pytorchjobs", name)
    return [(c["type"], c["status"]) for c in (obj.get("status") or {}).get("conditions", [])]


def test_up_run_a_job_with_the_official_client_down_up_and_it_is_still_there(state: Path) -> None:
    started = trainop(state, "up")
    assert started.returncode == 0, started.stdout + started.stderr
    assert f"KUBECONFIG={state / 'kubeconfig'}" in started.stdout
    assert trainop(state, "status").returncode == 0

    custom = k8s.CustomObjectsApi(api(state))
    hello = "import os; print('hello from rank', os.environ['RANK'])"
    custom.create_namespaced_custom_object(
        "kubeflow.org",
        "v1",
        "default",
        "pytorchjobs",
        job("daemon", master=py(hello), worker=py(hello)),
    )
    wait_for(
        lambda: ("Succeeded", "True") in conditions(custom, "daemon"), timeout=60, what="Succeeded"
    )
    log = k8s.CoreV1Api(api(state)).read_namespaced_pod_log("daemon-worker-1", "default")
    assert "hello from rank 2" in log

    assert trainop(state, "down").returncode == 0
    assert trainop(state, "status").returncode == 3
    assert trainop(state, "up").returncode == 0
    custom = k8s.CustomObjectsApi(api(state))
    listed = custom.list_namespaced_custom_object("kubeflow.org", "v1", "default", "pytorchjobs")
    assert [item["metadata"]["name"] for item in listed["items"]] == ["daemon"]
    assert ("Succeeded", "True") in conditions(custom, "daemon")


def test_up_starts_pods_in_its_working_directory_and_offers_the_cpus_it_is_given(
    state: Path, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "hello.py").write_text("import os; print('hello from', os.getcwd())\n")
    command = [sys.executable, "-m", "trainop.cli.main", "local", "up", "--state-dir", str(state)]
    started = subprocess.run(
        [*command, "--cpus", "1"], capture_output=True, text=True, timeout=120, cwd=project
    )
    assert started.returncode == 0, started.stdout + started.stderr
    custom = k8s.CustomObjectsApi(api(state))
    relative = ["python3", "hello.py"]
    manifest = job("wd", master=relative, worker=relative)
    manifest["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 1
    for spec in manifest["spec"]["pytorchReplicaSpecs"].values():
        spec["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
    custom.create_namespaced_custom_object("kubeflow.org", "v1", "default", "pytorchjobs", manifest)
    wait_for(
        lambda: ("Succeeded", "True") in conditions(custom, "wd"), timeout=60, what="Succeeded"
    )
    core = k8s.CoreV1Api(api(state))
    assert f"hello from {project}" in core.read_namespaced_pod_log("wd-master-0", "default")
    assert core.read_node("trainop-local").status.allocatable["cpu"] == "1"

    # One CPU: the two replicas, one CPU each, never ran together.
    def finished() -> list[tuple[object, object]]:
        statuses = [
            s
            for p in core.list_namespaced_pod("default").items
            for s in p.status.container_statuses or []
        ]
        ended = [s.state.terminated for s in statuses if s.state.terminated]
        return [(t.started_at, t.finished_at) for t in ended] if len(ended) == 2 else []

    wait_for(lambda: bool(finished()), timeout=60, what="both replicas finished")
    first, second = sorted(finished(), key=lambda span: str(span[0]))
    assert str(first[1]) <= str(second[0])
