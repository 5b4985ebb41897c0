"""Every runnable example under ``examples/``, run with ``trainop run`` as a user would.

Each case starts ``trainop run examples/<framework>/<job>.yaml`` from the repository root and
asserts the job's outcome (exit code) and the scripts' proof that the replicas cooperated:
their ``PROOF ... OK`` lines, each under its replica's ``[prefix]``. Marked ``e2e``:
``make e2e`` runs PyTorch, XGBoost and MPI (CI runs those), ``make e2e-all`` every framework.
A case whose framework is not installed is skipped, unless ``TRAINOP_E2E_REQUIRE=1`` (set by
the make targets) makes that a failure. Each case's wall time is printed.

DGL has two more: its two-worker example under ``--runtime podman`` (markers ``e2e`` and
``containers``; image ``localhost/trainop-dgl:1`` from ``make container-images``, skipped
without it), and a failing partitioner under ``trainop local up`` + ``kubectl``, whose job
Fails with no worker pod ever made (a watch of the job's pods from before the apply).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.e2e.test_containers import _podman, _run, podman  # noqa: F401
from tests.e2e.test_local_up import kubectl  # noqa: F401

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
    ordered: tuple[str, ...] = ()  # texts the output must contain, in this order


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
    # The partitioner's output, then (after the worker started) the launcher's servers and
    # trainers; trainer 0's proof in the launcher's log (the trainers' output reaches it).
    "dgl/partition-train": Case(
        "dgl/partition-train.yaml",
        ("dgl", "torch"),
        proofs=1,
        ordered=(
            "[partitioner] partitioned graph toy: {'nodes': 2000",
            "server on dgl-graph-worker-0:",
            "PROOF dgl trainers=1 partitions=1 nodes=2000 owned_sum=2000",
        ),
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
    assert_in_order(output, case.ordered)


def assert_in_order(output: str, texts: tuple[str, ...]) -> None:
    """``output`` contains each of ``texts``, each after the one before."""
    position = 0
    for text in texts:
        found = output.find(text, position)
        assert found >= 0, (f"missing, or before {texts[texts.index(text) - 1]!r}: {text!r}",
                            output[-6000:])  # fmt: skip
        position = found + len(text)


def assert_only_restarted(output: str, replica: str) -> None:
    """Exactly ``replica`` ran twice: its first instance failed before joining, its second
    joined; every other replica joined once, in its only instance (ddp.py's log lines)."""
    joined = re.findall(r"^\[([\w/-]+)\]\s+rank \d+/\d+: joining", output, re.MULTILINE)
    assert sorted(joined) == sorted(set(joined)), f"a replica joined twice: {joined}"
    first = re.findall(r"^\[([\w/-]+)\]\s+rank \d+: first run", output, re.MULTILINE)
    second = re.findall(r"^\[([\w/-]+)\]\s+rank \d+: second run", output, re.MULTILINE)
    assert (first, second) == ([replica], [replica]), (first, second)
    assert replica in joined


DGL_IMAGE = "localhost/trainop-dgl:1"
DGL_PAIR = re.compile(r"^\[launcher\]\s+trainer (\d)/2 on (dgl-graph-pair-worker-\d):", re.M)


@pytest.mark.e2e
@pytest.mark.containers
def test_dgl_two_workers_train_on_their_own_partitions_under_podman(podman: Path) -> None:  # noqa: F811
    """``partition-train-containers.yaml`` as shipped under ``--runtime podman``: two DGL
    machines, each a worker pod with its own IP and /dev/shm (on one IP they crash); each
    trainer owns one partition, and both read the whole graph through the servers."""
    if _podman(podman, "image", "exists", DGL_IMAGE).returncode != 0:
        pytest.skip(f"image {DGL_IMAGE} is missing (make container-images)")
    manifest = ROOT / "examples" / "dgl" / "partition-train-containers.yaml"
    code, output, elapsed = _run(manifest, "--runtime", "podman", timeout=300)
    assert code == 0, output[-6000:]
    assert_in_order(output, (
        "[partitioner] partitioned graph toy: {'nodes': 2000",
        "server on dgl-graph-pair-worker-1:",
        "PROOF dgl trainers=2 partitions=2 nodes=2000 owned_sum=2000 expected=2000 "
        "whole_graph=2/2 edges=4000",
    ))  # fmt: skip
    assert len(PROOF_OK.findall(output)) == 1, output[-6000:]
    trainers = dict(DGL_PAIR.findall(output))
    assert trainers == {"0": "dgl-graph-pair-worker-0", "1": "dgl-graph-pair-worker-1"}, output
    masters = set(re.findall(r"--master_addr=(\S+)", output))  # the hostfile's first IP
    assert len(masters) == 1, masters
    assert not masters.pop().startswith("127."), "worker 0's pod IP, not loopback"
    print(f"dgl/partition-train-containers: {elapsed:.1f}s under trainop run --runtime podman")


@pytest.mark.e2e
def test_dgl_a_failing_partitioner_fails_the_job_and_no_worker_pod_is_ever_made(
    kubectl: list[str],  # noqa: F811
    tmp_path: Path,
) -> None:
    """The example with a launcher command that exits 3 (so the partitioner's, which is the
    launcher's): applied to ``trainop local up``, the job Fails, and a watch of the job's pods
    from before the apply to after the failure sees the partitioner and nothing else."""
    job = "dgl-broken"
    manifest = yaml.safe_load((ROOT / "examples" / "dgl" / "partition-train.yaml").read_text())
    manifest["metadata"]["name"] = job
    launcher = manifest["spec"]["dglReplicaSpecs"]["Launcher"]["template"]["spec"]
    launcher["containers"][0]["command"] = ["python3", "-c", "raise SystemExit(3)"]
    (tmp_path / "broken.yaml").write_text(yaml.safe_dump(manifest))
    before = _kubectl(kubectl, "get", "pods", "-o", "jsonpath={.metadata.resourceVersion}")
    _kubectl(kubectl, "apply", "-f", str(tmp_path / "broken.yaml"))
    _kubectl(kubectl, "wait", "--for=condition=Failed", f"dgljob/{job}", "--timeout=120s")
    selector = f"training.kubeflow.org%2Fjob-name%3D{job}"
    query = f"watch=1&resourceVersion={before}&timeoutSeconds=3&labelSelector={selector}"
    events = _kubectl(kubectl, "get", "--raw", f"/api/v1/namespaces/default/pods?{query}")
    pods = [json.loads(line)["object"] for line in events.splitlines() if line.strip()]
    assert {pod["metadata"]["name"] for pod in pods} == {f"{job}-partitioner"}, events
    assert pods[-1]["status"]["phase"] == "Failed"
    message = _kubectl(
        kubectl, "get", "dgljob", job, "-o", "jsonpath={.status.conditions[-1].message}"
    )
    assert message == f"DGLJob {job} is failed because 1 Partitioner replica(s) failed."


def _kubectl(command: list[str], *args: str) -> str:
    done = subprocess.run(
        [*command, *args], capture_output=True, text=True, timeout=150, cwd=ROOT, check=False
    )
    assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stdout}{done.stderr}"
    return done.stdout
