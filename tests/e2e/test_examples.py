"""Every runnable example under ``examples/``, run with ``trainop run`` as a user would.

Each case starts ``trainop run examples/<framework>/<job>.yaml`` from the repository root and
asserts the job's outcome (exit code) and the scripts' proof that the replicas cooperated:
their ``PROOF ... OK`` lines, each under its replica's ``[prefix]``. Marked ``e2e``:
``make e2e`` runs PyTorch, XGBoost and MPI (CI runs those), ``make e2e-all`` every framework.
A case whose framework is not installed is skipped, unless ``TRAINOP_E2E_REQUIRE=1`` (set by
the make targets) makes that a failure. Each case's wall time is printed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
IMPI_HYDRA = str(ROOT / ".venv-impi" / "bin" / "mpiexec.hydra")  # PyPI's impi-rt
PROOF_OK = re.compile(r"^\[([\w/-]+)\]\s+PROOF .* OK$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Case:
    manifest: str
    needs: tuple[str, ...]  # modules (or "mpirun") the replicas need
    proofs: int  # PROOF ... OK lines expected (0: the job must fail)
    exit_code: int = 0
    expect: str = ""  # a line the output must contain
    python: str = ""  # the interpreter the replicas use, when not trainop's own
    restarted: str = ""  # the one replica that must have run twice (all others once)


CASES = {
    "pytorch/ddp": Case("pytorch/ddp.yaml", ("torch",), proofs=3),
    "pytorch/torchrun-nproc": Case("pytorch/torchrun-nproc.yaml", ("torch",), proofs=4),
    "pytorch/fail-once-exitcode": Case(
        "pytorch/fail-once-exitcode.yaml",
        ("torch",),
        proofs=3,
        expect="Restarting",
        restarted="worker-1",
    ),
    "pytorch/fail-once-never": Case(
        "pytorch/fail-once-never.yaml",
        ("torch",),
        proofs=0,
        exit_code=1,
        expect="exited with code 137",
    ),
    "xgboost/xgboostjob": Case("xgboost/xgboostjob.yaml", ("xgboost",), proofs=3),
    "mpi/allreduce": Case("mpi/allreduce.yaml", ("mpi4py", "mpirun"), proofs=1),
    "mpi/v2beta1-allreduce": Case("mpi/v2beta1-allreduce.yaml", ("mpi4py", "mpirun"), proofs=1),
    "mpi/v2beta1-pi": Case("mpi/v2beta1-pi.yaml", ("mpi4py", "mpirun"), proofs=1),
    "mpich/v2beta1-mpich": Case(
        "mpi/v2beta1-mpich.yaml",
        ("mpi4py", "mpiexec.hydra"),
        proofs=1,
        python=".venv-mpich/bin/python",
    ),
    "impi/v2beta1-intel": Case(
        "mpi/v2beta1-intel.yaml", ("mpi4py", IMPI_HYDRA), proofs=1, python=".venv-impi/bin/python"
    ),
    "tensorflow/mwms": Case("tensorflow/mwms.yaml", ("tensorflow",), proofs=2),
    "jax/psum": Case("jax/psum.yaml", ("jax",), proofs=2),
    "paddlepaddle/collective": Case("paddlepaddle/collective.yaml", ("paddle",), proofs=2),
    "mxnet/mxjob-train": Case(
        "mxnet/mxjob-train.yaml", ("mxnet",), proofs=2, python=".venv-mxnet/bin/python"
    ),
}


def _missing(case: Case) -> list[str]:
    python = ROOT / case.python if case.python else Path(sys.executable)
    if not python.exists():
        return [str(python)]
    programs = ("mpirun", "mpiexec.hydra")
    missing = [name for name in case.needs if name in programs and not shutil.which(name)]
    missing += [name for name in case.needs if name == IMPI_HYDRA and not Path(name).exists()]
    modules = [name for name in case.needs if name not in (*programs, IMPI_HYDRA)]
    probe = (
        "import importlib.util, sys;"
        "print(*[m for m in sys.argv[1:] if not importlib.util.find_spec(m)])"
    )
    found = subprocess.run([python, "-c", probe, *modules], capture_output=True, text=True)
    return missing + found.stdout.split()


@pytest.mark.e2e
@pytest.mark.parametrize("name", sorted(CASES))
def test_example_runs_under_trainop_run(name: str) -> None:
    case = CASES[name]
    missing = _missing(case)
    if missing and os.environ.get("TRAINOP_E2E_REQUIRE") == "1":
        pytest.fail(f"{name}: not installed: {missing} (make e2e-env / e2e-env-all)")
    if missing:
        pytest.skip(f"{name}: not installed: {missing}")
    command = [sys.executable, "-m", "trainop.cli.main", "run", f"examples/{case.manifest}"]
    env = {**os.environ, "COLUMNS": "200"}
    started = time.monotonic()
    done = subprocess.run(
        [*command, "--timeout", "240"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    output = done.stdout + done.stderr
    print(f"\n{name}: {time.monotonic() - started:.1f}s under trainop run")
    tail = output[-6000:]
    assert done.returncode == case.exit_code, tail
    proofs = PROOF_OK.findall(output)
    assert len(proofs) >= case.proofs, tail
    assert "FAIL" not in "".join(line for line in output.splitlines() if "PROOF" in line), tail
    if case.expect:
        assert case.expect in output, tail
    if case.restarted:
        assert_only_restarted(output, case.restarted)


def assert_only_restarted(output: str, replica: str) -> None:
    """Exactly ``replica`` ran twice: its first instance failed before joining, its second
    joined; every other replica joined once, in its only instance (ddp.py's log lines)."""
    joined = re.findall(r"^\[([\w/-]+)\]\s+rank \d+/\d+: joining", output, re.MULTILINE)
    assert sorted(joined) == sorted(set(joined)), f"a replica joined twice: {joined}"
    first = re.findall(r"^\[([\w/-]+)\]\s+rank \d+: first run", output, re.MULTILINE)
    second = re.findall(r"^\[([\w/-]+)\]\s+rank \d+: second run", output, re.MULTILINE)
    assert (first, second) == ([replica], [replica]), (first, second)
    assert replica in joined
