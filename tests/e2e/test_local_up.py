"""Examples applied with the real ``kubectl`` to a ``trainop local up`` started in the repo root.

What a user does after ``trainop local up``: ``export KUBECONFIG=...``, ``kubectl apply -f
examples/pytorch/ddp.yaml``, ``kubectl wait``. The cluster is started from the repository root
and nothing else is set, so the pods find ``examples/pytorch/ddp.py`` only because ``local up``
starts them in the directory it was started from (docs/design/090). Marked ``e2e``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


def _needs() -> str:
    kubectl = shutil.which("kubectl") or shutil.which(
        "kubectl", path=str(Path(sys.executable).parent)
    )
    missing = [] if kubectl else ["kubectl"]
    probe = subprocess.run(
        [sys.executable, "-c", "import torch"], capture_output=True, text=True, check=False
    )
    if probe.returncode != 0:
        missing.append("torch")
    if missing and os.environ.get("TRAINOP_E2E_REQUIRE") == "1":
        pytest.fail(f"not installed: {missing} (make e2e-env / kubectl-env)")
    if missing:
        pytest.skip(f"not installed: {missing}")
    assert kubectl is not None
    return kubectl


def _trainop(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "trainop.cli.main", "local", *args, "--state-dir", str(state)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=ROOT)


@pytest.fixture
def kubectl(tmp_path: Path) -> Iterator[list[str]]:
    binary = _needs()
    state = tmp_path / "local"
    started = _trainop(state, "up")
    assert started.returncode == 0, started.stdout + started.stderr
    try:
        yield [
            binary,
            "--kubeconfig",
            str(state / "kubeconfig"),
            "--cache-dir",
            str(tmp_path / "c"),
        ]
    finally:
        _trainop(state, "down")


def _run(kubectl: list[str], *args: str, timeout: float = 60) -> str:
    done = subprocess.run(
        [*kubectl, *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT, check=False
    )
    assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stdout}{done.stderr}"
    return done.stdout


def _apply_and_wait(kubectl: list[str], manifest: str, name: str) -> float:
    started = time.monotonic()
    _run(kubectl, "apply", "-f", manifest)
    _run(
        kubectl,
        "wait",
        "--for=condition=Succeeded",
        f"pytorchjob/{name}",
        "--timeout=240s",
        timeout=260,
    )
    return time.monotonic() - started


@pytest.mark.e2e
def test_pytorch_ddp_applied_with_kubectl_succeeds(kubectl: list[str]) -> None:
    seconds = _apply_and_wait(kubectl, "examples/pytorch/ddp.yaml", "pytorch-ddp")
    print(f"\npytorch/ddp: {seconds:.1f}s under trainop local up + kubectl apply")
    log = _run(kubectl, "logs", "pytorch-ddp-master-0")
    assert "PROOF ddp rank=0 world=3" in log
    assert log.rstrip().endswith("OK")


@pytest.mark.e2e
def test_pytorch_fail_once_exitcode_applied_with_kubectl_restarts_one_replica(
    kubectl: list[str],
) -> None:
    name = "pytorch-fail-once-exitcode"
    seconds = _apply_and_wait(kubectl, "examples/pytorch/fail-once-exitcode.yaml", name)
    print(f"\npytorch/fail-once-exitcode: {seconds:.1f}s under trainop local up + kubectl apply")
    logs = {
        replica: _run(kubectl, "logs", f"{name}-{replica}")
        for replica in ("master-0", "worker-0", "worker-1")
    }
    assert "second run" in logs["worker-1"]  # the recreated pod; its first instance exited 137
    for replica in ("master-0", "worker-0"):
        assert "run (marker" not in logs[replica]
        assert logs[replica].count("joining") == 1
    messages = _run(
        kubectl,
        "get",
        "events",
        "--field-selector",
        f"involvedObject.name={name}",
        "-o",
        "jsonpath={range .items[*]}{.message}{'\\n'}{end}",
    )
    exited = [line for line in messages.splitlines() if "exited with code 137" in line]
    assert exited, messages
    assert all(f"{name}-worker-1 " in f"{line} " for line in exited), exited


def _in_namespace(source: str, namespace: str, name: str, path: Path) -> str:
    """The example at ``source`` renamed ``name`` in ``namespace``, written to ``path``."""
    manifest = yaml.safe_load((ROOT / source).read_text())
    manifest["metadata"].update(name=name, namespace=namespace)
    path.write_text(yaml.safe_dump(manifest))
    return str(path)


def _interval(kubectl: list[str], namespace: str, name: str) -> tuple[str, str]:
    times = _run(
        kubectl,
        *("get", "mpijob", name, "-n", namespace, "-o"),
        "jsonpath={.status.startTime} {.status.completionTime}",
    ).split()
    assert len(times) == 2, times
    return times[0], times[1]


@pytest.mark.e2e
def test_mpi_v1_and_v2beta1_jobs_of_one_name_run_side_by_side(
    kubectl: list[str], tmp_path: Path
) -> None:
    """One operator, both MPIJob semantics at once: the v1 example and the v2beta1 example,
    both named ``mpi-allreduce``, in two namespaces. Each gets its own version's objects
    (v1: a launcher Pod and kubexec.sh; v2beta1: a launcher batch/v1 Job, the SSH key Secret,
    discover_hosts.sh) and each proves its allreduce."""
    name = "mpi-allreduce"
    v1 = _in_namespace("examples/mpi/allreduce.yaml", "mpi-v1", name, tmp_path / "v1.yaml")
    v2 = _in_namespace("examples/mpi/v2beta1-allreduce.yaml", "mpi-v2", name, tmp_path / "v2.yaml")
    _run(kubectl, "create", "namespace", "mpi-v1")
    _run(kubectl, "create", "namespace", "mpi-v2")
    _run(kubectl, "apply", "-f", v1, "-f", v2)
    for namespace in ("mpi-v1", "mpi-v2"):
        waited = ("wait", "--for=condition=Succeeded", f"mpijob/{name}", "-n", namespace)
        _run(kubectl, *waited, "--timeout=180s", timeout=200)
    v1_config = _run(kubectl, "get", "configmap", f"{name}-config", "-n", "mpi-v1", "-o", "json")
    v2_config = _run(kubectl, "get", "configmap", f"{name}-config", "-n", "mpi-v2", "-o", "json")
    assert "kubexec.sh" in v1_config
    assert "discover_hosts.sh" in v2_config
    assert "kubexec.sh" not in v2_config
    _run(kubectl, "get", "pod", f"{name}-launcher", "-n", "mpi-v1")  # v1: the launcher is a Pod
    _run(kubectl, "get", "job.batch", f"{name}-launcher", "-n", "mpi-v2")  # v2beta1: a Job
    _run(kubectl, "get", "secret", f"{name}-ssh", "-n", "mpi-v2")
    jobs = _run(kubectl, "get", "job.batch", "-n", "mpi-v1", "-o", "name")
    assert jobs.strip() == ""  # no batch/v1 Job for the v1 MPIJob
    proofs = [
        _run(kubectl, "logs", f"{name}-launcher", "-n", "mpi-v1"),
        _run(kubectl, "logs", "-n", "mpi-v2", "-l", "training.kubeflow.org/job-role=launcher"),
    ]
    proof = re.compile(r"^PROOF mpi size=2 allreduce sum=3 expected=3 .* OK$", re.M)
    for log in proofs:  # rank 0's line, wherever the other rank's lines fall around it
        assert proof.search(log), log
    # at the same time: each ran before the other ended (RFC 3339 seconds compare as text)
    (start_1, end_1), (start_2, end_2) = (
        _interval(kubectl, ns, name) for ns in ("mpi-v1", "mpi-v2")
    )
    assert start_1 <= end_2
    assert start_2 <= end_1
