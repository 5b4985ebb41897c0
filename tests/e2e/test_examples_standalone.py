"""Every runnable example, its replicas started by the standalone harness with the operator's env.

Each case runs one manifest under ``examples/`` (harness: engine-planned env, local topology,
processes) and checks the outcome and the scripts' ``PROOF ... OK`` lines. Marked ``e2e``:
``make e2e`` runs PyTorch, XGBoost and MPI, ``make e2e-all`` every framework. A case whose
framework is not installed is skipped, unless ``TRAINOP_E2E_REQUIRE=1`` (set by the make
targets) turns that into a failure. Wall time per case is printed and recorded as a property.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e import harness

ROOT = harness.ROOT
PROOF_OK = re.compile(r"^PROOF .* OK$", re.MULTILINE)
PROOF_FAIL = re.compile(r"^PROOF .* FAIL$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Case:
    manifest: str
    needs: tuple[str, ...]  # modules (or "mpirun") the replicas import
    proofs: int  # PROOF ... OK lines expected (0: the job must fail)
    succeeds: bool = True
    failed_exit: int | None = None  # an exit code some replica must have failed with
    venv: str = ""  # a separate environment (MXNet's old numpy), relative to the repo root
    deadline: float = 300.0


CASES = {
    "pytorch/ddp": Case("pytorch/ddp.yaml", ("torch",), proofs=3),
    "pytorch/torchrun-nproc": Case("pytorch/torchrun-nproc.yaml", ("torch",), proofs=4),
    "pytorch/fail-once-exitcode": Case(
        "pytorch/fail-once-exitcode.yaml", ("torch",), proofs=3, failed_exit=137
    ),
    "pytorch/fail-once-never": Case(
        "pytorch/fail-once-never.yaml", ("torch",), proofs=0, succeeds=False, failed_exit=137
    ),
    "xgboost/xgboostjob": Case("xgboost/xgboostjob.yaml", ("xgboost",), proofs=3),
    "mpi/allreduce": Case("mpi/allreduce.yaml", ("mpi4py", "mpirun"), proofs=1),
    "tensorflow/mwms": Case("tensorflow/mwms.yaml", ("tensorflow",), proofs=2),
    "jax/psum": Case("jax/psum.yaml", ("jax",), proofs=2),
    "paddlepaddle/collective": Case("paddlepaddle/collective.yaml", ("paddle",), proofs=2),
    "mxnet/mxjob-train": Case("mxnet/mxjob-train.yaml", ("mxnet",), proofs=2, venv=".venv-mxnet"),
}


def _python_bin(case: Case) -> Path:
    return ROOT / case.venv / "bin" if case.venv else Path(sys.executable).parent


def _missing(case: Case) -> list[str]:
    python = _python_bin(case) / "python3"
    if not python.exists():
        return [str(python)]
    missing = [name for name in case.needs if name == "mpirun" and not shutil.which(name)]
    modules = [name for name in case.needs if name != "mpirun"]
    probe = (
        "import importlib.util, sys;"
        "print(*[m for m in sys.argv[1:] if not importlib.util.find_spec(m)])"
    )
    found = subprocess.run([python, "-c", probe, *modules], capture_output=True, text=True)
    return missing + found.stdout.split()


@pytest.mark.e2e
@pytest.mark.parametrize("name", sorted(CASES))
def test_example_replicas_cooperate(
    name: str, tmp_path: Path, record_property: pytest.RecordProperty
) -> None:
    case = CASES[name]
    missing = _missing(case)
    if missing and os.environ.get("TRAINOP_E2E_REQUIRE") == "1":
        pytest.fail(f"{name}: not installed: {missing} (make e2e-env / e2e-env-all)")
    if missing:
        pytest.skip(f"{name}: not installed: {missing}")
    outcome = harness.run(
        ROOT / "examples" / case.manifest,
        deadline=case.deadline,
        python_bin=_python_bin(case),
        extra_env={"FAILURE_MARKER_DIR": str(tmp_path)},
    )
    record_property("seconds", round(outcome.seconds, 1))
    print(f"\n{name}: {outcome.seconds:.1f}s exit codes {outcome.exit_codes}")
    text = outcome.output()
    tail = text[-6000:]
    assert outcome.succeeded == case.succeeds, tail
    assert not PROOF_FAIL.search(text), tail
    assert len(PROOF_OK.findall(text)) >= case.proofs, tail
    if case.failed_exit is not None:
        codes = [code for codes in outcome.exit_codes.values() for code in codes]
        assert case.failed_exit in codes, tail
