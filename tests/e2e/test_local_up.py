"""Examples applied with the real ``kubectl`` to a ``trainop local up`` started in the repo root.

What a user does after ``trainop local up``: ``export KUBECONFIG=...``, ``kubectl apply -f
examples/pytorch/ddp.yaml``, ``kubectl wait``. The cluster is started from the repository root
and nothing else is set, so the pods find ``examples/pytorch/ddp.py`` only because ``local up``
starts them in the directory it was started from (docs/design/090). Marked ``e2e``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

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
