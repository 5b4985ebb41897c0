"""Every ``examples/trainjob/`` manifest, run as a user would (issue 23 item 5, note 133).

Under ``trainop run`` (one case per example): the exit status is the TrainJob's result and
each line carries its pod's ``[<replicatedJob>-<job>-<pod>]`` prefix; the scripts' ``PROOF ...
OK`` lines show that the processes cooperated. Under ``trainop local up`` + ``kubectl apply``:
all of them at once (the OpenMPI launcher reaching its nodes through the kubelet's exec),
plus a second copy of the torch example under another name, so two torch
TrainJobs rendezvous at the same time on one loopback, each on the port recorded for it; each
ends ``Complete`` (``Failed`` for ``fail-restart.yaml``, after exactly one JobSet restart).
Marked ``e2e`` (``make e2e``); a framework that is not installed skips its case, unless
``TRAINOP_E2E_REQUIRE=1`` (set by the make targets) makes that a failure. Every example,
JAX's included (``jax[cpu]`` is in the ``e2e`` extra), runs in ``make e2e``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.e2e.test_examples import PROOF_OK, Case, _missing, assert_in_order
from tests.e2e.test_local_up import _run, kubectl  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "trainjob"

CASES = {
    "trainjob/torch-ddp": Case("trainjob/torch-ddp.yaml", ("torch",), proofs=4),
    "trainjob/xgboost": Case("trainjob/xgboost.yaml", ("xgboost",), proofs=2),
    "trainjob/initializers": Case("trainjob/initializers.yaml", (), proofs=1),
    "trainjob/mpi": Case("trainjob/mpi.yaml", ("mpi4py", "mpirun"), proofs=1),
    "trainjob/fail-restart": Case(
        "trainjob/fail-restart.yaml",
        (),
        proofs=0,
        exit_code=1,
        expect="reaching max number of restarts",
        ordered=("restart attempt 0, exiting 1", "restart attempt 1, exiting 1"),
    ),
    "jax/trainjob-jax": Case("trainjob/jax.yaml", ("jax",), proofs=2),
}


def _require(missing: list[str], what: str) -> None:
    if missing and os.environ.get("TRAINOP_E2E_REQUIRE") == "1":
        pytest.fail(f"{what}: not installed: {missing} (make e2e-env / e2e-env-all)")
    if missing:
        pytest.skip(f"{what}: not installed: {missing}")


def trainop_run(*args: str, stdin: str | None = None) -> tuple[int, str, float]:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "trainop.cli.main", "run", *args, "--timeout", "240"],
        cwd=ROOT,
        env={**os.environ, "COLUMNS": "200"},
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return done.returncode, done.stdout + done.stderr, time.monotonic() - started


@pytest.mark.e2e
@pytest.mark.parametrize("name", sorted(CASES))
def test_trainjob_example_runs_under_trainop_run(name: str) -> None:
    case = CASES[name]
    _require(_missing(case), name)
    code, output, seconds = trainop_run(f"examples/{case.manifest}")
    print(f"\n{name}: {seconds:.1f}s under trainop run")
    tail = output[-6000:]
    assert code == case.exit_code, tail
    proofs = PROOF_OK.findall(output)
    assert len(proofs) == case.proofs, tail
    assert "FAIL" not in "".join(line for line in output.splitlines() if "PROOF" in line), tail
    if case.expect:
        assert case.expect in output, tail
    assert_in_order(output, case.ordered)
    if name == "trainjob/torch-ddp":  # two processes on each of two nodes
        assert sorted(set(proofs)) == ["node-0-0", "node-0-1"], tail
        assert "world=4" in output, tail


def _applied(kubectl: list[str], path: Path, name: str | None = None) -> list[str]:  # noqa: F811
    """Apply ``path`` (its TrainJob renamed to ``name``); the TrainJob's name."""
    documents = [d for d in yaml.safe_load_all(path.read_text()) if d]
    for document in documents:
        if document["kind"] == "TrainJob" and name:
            document["metadata"]["name"] = name
    trainjob = next(d["metadata"]["name"] for d in documents if d["kind"] == "TrainJob")
    text = yaml.safe_dump_all(documents)
    done = subprocess.run(
        [*kubectl, "apply", "--server-side", "-f", "-"],
        input=text,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return [trainjob]


@pytest.mark.e2e
def test_trainjob_examples_applied_together_with_kubectl_against_local_up(
    kubectl: list[str],  # noqa: F811
) -> None:
    wanted = {
        "torch": ("torch",),
        "xgboost": ("xgboost",),
        "mpi": ("mpi4py", "mpirun"),
        "jax": ("jax",),
    }
    _require([m for needs in wanted.values() for m in _missing(Case("", needs, 0))], "local up")
    runtimes = _run(kubectl, "get", "clustertrainingruntimes", "-o", "name")
    assert "clustertrainingruntime.trainer.kubeflow.org/torch-distributed" in runtimes
    public = _run(kubectl, "get", "configmap", "kubeflow-trainer-public", "-n", "kubeflow-system",
                  "-o", "jsonpath={.data.kubeflow_trainer_version}")  # fmt: skip
    assert public == "v2.3.0"
    started = time.monotonic()
    complete = _applied(kubectl, EXAMPLES / "torch-ddp.yaml")
    complete += _applied(kubectl, EXAMPLES / "torch-ddp.yaml", "torch-ddp-twin")
    complete += _applied(kubectl, EXAMPLES / "xgboost.yaml")
    complete += _applied(kubectl, EXAMPLES / "initializers.yaml")
    complete += _applied(kubectl, EXAMPLES / "mpi.yaml")
    complete += _applied(kubectl, EXAMPLES / "jax.yaml")
    failed = _applied(kubectl, EXAMPLES / "fail-restart.yaml")
    for name in complete:
        _run(kubectl, "wait", "--for=condition=Complete", f"trainjob/{name}", "--timeout=240s",
             timeout=260)  # fmt: skip
    _run(kubectl, "wait", "--for=condition=Failed", f"trainjob/{failed[0]}", "--timeout=120s",
         timeout=140)  # fmt: skip
    print(f"\ntrainjob examples together: {time.monotonic() - started:.1f}s under local up")
    ports = [
        json.loads(
            _run(
                kubectl,
                "get",
                "trainjob",
                name,
                "-o",
                "jsonpath={.metadata.annotations.local\\.trainop\\.dev/ports}",
            )
        )
        for name in ("torch-ddp", "torch-ddp-twin")
    ]
    assert ports[0]["torch-ddp-node-0-0"] != ports[1]["torch-ddp-twin-node-0-0"], ports
    proofs_of = {
        "torch-ddp": 4,
        "torch-ddp-twin": 4,
        "xgboost": 2,
        "steps": 1,
        "mpi": 1,
        "jax": 2,
    }
    for name, proofs in proofs_of.items():
        logs = _run(kubectl, "logs", "-l", f"jobset.sigs.k8s.io/jobset-name={name}",
                    "--tail=-1", "--prefix")  # fmt: skip
        assert logs.count("PROOF") == proofs, logs
        assert "FAIL" not in logs, logs
    restarts = _run(kubectl, "get", "jobset", "fail-restart", "-o", "jsonpath={.status.restarts}")
    assert restarts == "1"


@pytest.mark.e2e
def test_converted_pytorch_ddp_succeeds_under_trainop_run() -> None:
    """``trainop convert examples/pytorch/ddp.yaml | trainop run -`` (issue 22): the v1 script
    runs unchanged in the converted TrainJob's pods, its MASTER_ADDR the master's address."""
    _require(_missing(Case("", ("torch",), 0)), "converted pytorch/ddp")
    converted = subprocess.run(
        [sys.executable, "-m", "trainop.cli.main", "convert", "examples/pytorch/ddp.yaml"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    code, output, seconds = trainop_run("-", stdin=converted.stdout)
    print(f"\nconverted pytorch/ddp: {seconds:.1f}s under trainop run")
    assert code == 0, output[-6000:]
    assert "TrainJob/pytorch-ddp Succeeded" in output
    proofs = PROOF_OK.findall(output)
    assert sorted(proofs) == ["master-0-0", "worker-0-0", "worker-0-1"], output[-6000:]
