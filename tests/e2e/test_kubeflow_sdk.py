"""The Kubeflow SDK 0.5.0, unchanged, against ``trainop local up`` (issue 23 item 6).

``make sdk-env`` installs ``kubeflow==0.5.0`` from PyPI into its own venv
(``.venv-kubeflow-sdk``); the SDK is driven there by ``kubeflow_sdk_driver.py`` as a
subprocess, with the kubeconfig of a ``trainop local up`` (process runtime) started by this
module, and its JSON results are asserted here. What is checked is what a cluster gives the
SDK (trainer-v2-spec §5, docs/design/134): the shipped runtimes and the public ConfigMap, a
2-node DDP function trained through ``torch-distributed`` (the pods run with this interpreter's
``bin`` first on ``PATH``, so ``torchrun`` and ``torch`` are this venv's and nothing is
installed at run time), the SDK's status derivation (Running from pods with no condition,
Complete and Failed from conditions), logs with and without ``follow``, events, delete, and a
TrainJob whose node exits 1 under ``failurePolicy.maxRestarts: 1``: one restart, then Failed.

Marked ``e2e``; ``make e2e`` selects it by the keyword ``kubeflow_sdk`` in its names. Without
the SDK's venv or torch it skips, or fails under ``TRAINOP_E2E_REQUIRE=1``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from tests.polling import NotYet, wait_for

ROOT = Path(__file__).resolve().parents[2]
SDK_PYTHON = ROOT / ".venv-kubeflow-sdk" / "bin" / "python"
DRIVER = Path(__file__).with_name("kubeflow_sdk_driver.py")
SHIPPED = {
    "torch-distributed": "torch",
    "jax-distributed": "jax",
    "xgboost-distributed": "xgboost",
    "deepspeed-distributed": "deepspeed",
    "mlx-distributed": "mlx",
    "torchtune-llama3.2-1b": "torchtune",
    "torchtune-llama3.2-3b": "torchtune",
    "torchtune-qwen2.5-1.5b": "torchtune",
}
pytestmark = pytest.mark.e2e


def _needs() -> None:
    missing = [] if SDK_PYTHON.exists() else ["kubeflow==0.5.0 (make sdk-env)"]
    probe = subprocess.run([sys.executable, "-c", "import torch"], capture_output=True, check=False)
    if probe.returncode != 0:
        missing.append("torch (make e2e-env)")
    if missing and os.environ.get("TRAINOP_E2E_REQUIRE") == "1":
        pytest.fail(f"not installed: {missing}")
    if missing:
        pytest.skip(f"not installed: {missing}")


def _local(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "trainop.cli.main", "local", *args, "--state-dir", str(state)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=ROOT)


@pytest.fixture(scope="module")
def kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One ``trainop local up`` for the module. Pods start in a scratch directory: the SDK's
    command writes the function's source file into the working directory, as in a container."""
    _needs()
    base = tmp_path_factory.mktemp("sdk")
    work = base / "work"
    work.mkdir()
    state = base / "local"
    started = _local(state, "up", "--workdir", str(work))
    assert started.returncode == 0, started.stdout + started.stderr
    try:
        yield state / "kubeconfig"
    finally:
        _local(state, "down")


def _sdk(kubeconfig: Path, scenario: str, timeout: float = 600) -> dict[str, Any]:
    done = subprocess.run(
        [str(SDK_PYTHON), str(DRIVER), str(kubeconfig), scenario],
        env=dict(os.environ, KUBECONFIG=str(kubeconfig)),  # TrainerClient() finds it there
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, f"driver {scenario}: {done.stdout[-4000:]}{done.stderr[-4000:]}"
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"\nkubeflow sdk {scenario}: {result['seconds']}s")
    return result


def _core(kubeconfig: Path) -> k8s.CoreV1Api:
    return k8s.CoreV1Api(k8s_config.new_client_from_config(config_file=str(kubeconfig)))


def test_kubeflow_sdk_lists_the_shipped_runtimes(kubeconfig: Path) -> None:
    result = _sdk(kubeconfig, "runtimes")
    assert result["warnings"] == []  # verify_backend read kubeflow-system/kubeflow-trainer-public
    assert result["namespace"] == "default"  # the kubeconfig context's
    found = {r["name"]: r for r in result["runtimes"]}
    assert {name: found[name]["framework"] for name in SHIPPED} == SHIPPED
    assert all(found[name]["kind"] == "ClusterTrainingRuntime" for name in SHIPPED)
    assert found["torch-distributed"]["num_nodes"] == 1
    # How the SDK will run a function on each (spec 5.2, 5.4): from the runtimes' mlPolicy.
    assert found["torch-distributed"]["entrypoint"] == ["bash", "torchrun"]
    assert found["xgboost-distributed"]["entrypoint"] == ["bash", "python"]
    assert found["deepspeed-distributed"]["entrypoint"] == ["mpirun", "python"]
    assert found["torchtune-llama3.2-1b"]["entrypoint"] == ["tune", "run"]
    assert result["torch"] == {"name": "torch-distributed", "entrypoint": ["bash", "torchrun"]}


def test_kubeflow_sdk_trains_a_ddp_function_on_two_nodes(kubeconfig: Path) -> None:
    result = _sdk(kubeconfig, "train")
    name = result["name"]
    assert result["warnings"] == []
    # Running is derived from the pods (no condition yet); Complete from the condition.
    assert result["first"]["status"] == "Running", result["first"]
    assert result["first"]["num_nodes"] == 2
    complete = result["complete"]
    assert complete["status"] == "Complete"
    steps = {s["name"]: s for s in complete["steps"]}
    assert set(steps) == {"node-0", "node-1"}
    assert all(s["status"] == "Succeeded" for s in steps.values())
    assert steps["node-0"]["pod"].startswith(f"{name}-node-0-0-")
    assert steps["node-1"]["pod"].startswith(f"{name}-node-0-1-")
    # No limits: the device is unknown to the SDK, its count is the pod's PET_NPROC_PER_NODE.
    assert all(s["device_count"] == "1" for s in steps.values())
    # Both nodes' processes cooperated: one world of 2, the all-reduced sum 1 + 2, one model.
    for index, step in enumerate(("node-0", "node-1")):
        proofs = [line for line in result["logs"][step] if line.startswith("PROOF sdk-ddp")]
        assert proofs == [f"PROOF sdk-ddp rank={index} world=2 node={index} sum=3 same=True"]
    followed = [line.rstrip("\n") for line in result["followed"]]
    assert "PROOF sdk-ddp rank=0 world=2 node=0 sum=3 same=True" in followed
    assert any(line.startswith("done rank=0") for line in followed)  # followed to the end
    assert name in result["listed"]
    events = {(e["kind"], e["name"], e["reason"]) for e in result["events"]}
    for step in complete["steps"]:
        assert ("Pod", step["pod"], "Scheduled") in events
        assert ("Pod", step["pod"], "Started") in events
    assert all(e["kind"] in {"TrainJob", "JobSet", "Pod"} for e in result["events"])
    assert result["gone_after_delete"] is True
    # The function's source in a bash script that pip-installs torch from an index nobody
    # serves, then runs torchrun: torch was found installed (the pod's Python overlay over
    # this venv, note 134), nothing was fetched.
    command = result["command"]
    assert command[:2] == ["bash", "-c"]
    assert "def ddp_sum() -> None:" in command[2]
    assert "\nddp_sum()\n" in command[2]
    assert "--index-url http://127.0.0.1:9/simple" in command[2]
    assert command[2].rstrip().endswith('torchrun "kubeflow_sdk_driver.py"')
    for step in ("node-0", "node-1"):
        installed = "Successfully installed Python packages (system-wide): torch"
        assert result["logs"][step][0] == installed, result["logs"][step]
    core = _core(kubeconfig)
    selector = f"jobset.sigs.k8s.io/jobset-name={name}"

    def no_pods() -> bool | NotYet:
        pods = core.list_namespaced_pod("default", label_selector=selector).items
        return not pods or NotYet([p.metadata.name for p in pods])

    wait_for(no_pods, timeout=60, what=f"the pods of deleted TrainJob {name} to go")


def test_kubeflow_sdk_reports_failed_after_one_jobset_restart(kubeconfig: Path) -> None:
    result = _sdk(kubeconfig, "fail")
    assert result["raised"] == f"TrainJob {result['name']} is Failed"
    assert result["final"]["status"] == "Failed"
    # The SDK's float 1.0 was admitted as a quantity, and the step's device read from it.
    assert result["resources"] == {"limits": {"cpu": 1}, "requests": {"cpu": 1}}
    assert [(s["name"], s["device"], s["status"]) for s in result["final"]["steps"]] == [
        ("node-0", "cpu", "Failed")
    ]
    assert result["jobset_restarts"] == 1
    assert result["step_restart_attempt"] == "1"  # the step the SDK shows is the restart's pod
    # Trainer copies the JobSet's Failed condition (spec 2.5): maxRestarts reached.
    assert result["conditions"] == [
        {"type": "Failed", "status": "True", "reason": "ReachedMaxRestarts"}
    ]
    assert any(line.startswith("failing on purpose") for line in result["logs"])


def test_kubeflow_sdk_options_label_patch_and_deadline_a_trainjob(kubeconfig: Path) -> None:
    result = _sdk(kubeconfig, "options")
    assert result["name"] == "sdk-options"
    assert result["labels"] == {"team": "research"}
    assert result["annotations"]["purpose"] == "e2e"  # beside the session's port record
    assert result["managers"] == ["trainer.kubeflow.org/kubeflow-sdk"]
    # The runtime patch reached the JobSet and the pods (spec 1.3, 3.2).
    assert result["jobset_labels"]["sdk-patched"] == "jobset"
    assert result["pod_labels"]["sdk-patched"] == "pod"
    assert result["pod_node_selector"] == {"kubernetes.io/os": "linux"}
    # The deadline fails the TrainJob (spec 2.6) and the SDK says so.
    assert result["raised"] == "TrainJob sdk-options is Failed"
    assert result["status"] == "Failed"
    assert result["conditions"] == [
        {"type": "Failed", "status": "True", "reason": "DeadlineExceeded"}
    ]
