"""``trainop run`` shares the CPUs among a job's host-process replicas as torchrun does among
its workers: ``OMP_NUM_THREADS`` = CPUs over replicas (at least 1), unless already set."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainop.api import manifest
from trainop.cli.run import share_cores

ROOT = Path(__file__).resolve().parents[3]


def _raw(name: str) -> dict[str, object]:
    [document] = manifest.parse_documents((ROOT / "examples" / "pytorch" / name).read_text())
    return document


@pytest.mark.parametrize(("cpus", "expected"), [(2, "1"), (3, "1"), (16, "5"), (1, "1")])
def test_the_three_replicas_of_ddp_yaml_share_the_cpus(
    monkeypatch: pytest.MonkeyPatch, cpus: int, expected: str
) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: cpus)
    environ: dict[str, str] = {}
    line = share_cores(_raw("ddp.yaml"), environ)
    assert environ == {"OMP_NUM_THREADS": expected}
    assert line.startswith(f"OMP_NUM_THREADS={expected} for each of the 3 replicas")


def test_a_value_the_user_set_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    environ = {"OMP_NUM_THREADS": "4"}
    assert share_cores(_raw("ddp.yaml"), environ) == ""
    assert environ == {"OMP_NUM_THREADS": "4"}


def test_one_replica_keeps_every_cpu() -> None:
    raw = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": {}}}},
    }
    environ: dict[str, str] = {}
    assert share_cores(raw, environ) == ""
    assert environ == {}


def test_an_unset_replica_count_is_one_and_other_kinds_count_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: 8)
    raw = {"spec": {"mpiReplicaSpecs": {"Launcher": {}, "Worker": {"replicas": 3}}}}
    environ: dict[str, str] = {}
    assert share_cores(raw, environ).startswith("OMP_NUM_THREADS=2 for each of the 4 replicas")


def test_a_trainjob_is_left_alone() -> None:
    raw = {"kind": "TrainJob", "spec": {"trainer": {"numNodes": 4}}}
    environ: dict[str, str] = {}
    assert share_cores(raw, environ) == ""
    assert environ == {}
