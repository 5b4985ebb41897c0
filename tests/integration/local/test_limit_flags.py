"""``--max-replicas-per-job`` and ``--max-pods`` reach the local API server from every entry
point: ``trainop run``, ``trainop local up`` (through the ``serve`` process it starts),
``trainop local serve``, ``trainop local apiserver`` and ``LocalCluster``."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from tests.unit.api.builders import manifest
from trainop.cli import local as local_cli
from trainop.cli.main import main
from trainop.cluster.apiserver import Limits
from trainop.local.session import ClusterConfig, LocalCluster


def write(tmp_path: Path, workers: int) -> Path:
    job = manifest("PyTorchJob", name="big")
    job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = workers
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(job))
    return path


def test_run_refuses_a_billion_replicas_at_once_with_exit_2(tmp_path: Path) -> None:
    started = time.monotonic()
    result = CliRunner().invoke(main, ["run", str(write(tmp_path, 10**9))])
    assert time.monotonic() - started < 5
    assert result.exit_code == 2, result.output
    assert "spec.pytorchReplicaSpecs[Worker].replicas" in result.output
    assert "must be no more than 1024" in result.output
    assert "--max-replicas-per-job" in result.output


def test_run_honours_a_lower_ceiling(tmp_path: Path) -> None:
    path = write(tmp_path, 3)
    result = CliRunner().invoke(main, ["run", "--max-replicas-per-job", "3", str(path)])
    assert result.exit_code == 2, result.output
    assert "must be no more than 3" in result.output


def test_the_flags_refuse_nonsense() -> None:
    result = CliRunner().invoke(main, ["run", "--max-pods", "0", "job.yaml"])
    assert result.exit_code == 2
    assert "--max-pods" in result.output


def test_up_passes_the_limits_to_the_serve_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, Any] = {}

    def fake_up(directory: Path, *, port: int, serve_args: list[str]) -> Any:
        seen["args"] = serve_args
        raise local_cli.TrainopError("stop here")

    monkeypatch.setattr(local_cli.daemon, "up", fake_up)
    args = ["local", "up", "--state-dir", str(tmp_path), "--max-replicas-per-job", "8"]
    result = CliRunner().invoke(main, [*args, "--max-pods", "16"])
    assert result.exit_code == 1, result.output
    flags = seen["args"]
    assert flags[flags.index("--max-replicas-per-job") + 1] == "8"
    assert flags[flags.index("--max-pods") + 1] == "16"


def test_serve_builds_a_cluster_with_the_limits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[ClusterConfig] = []

    async def fake_serve(config: ClusterConfig, *args: Any) -> None:
        seen.append(config)

    monkeypatch.setattr(local_cli, "_serve_cluster", fake_serve)
    args = ["local", "serve", "--state-dir", str(tmp_path), "--max-pods", "7"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert seen[0].limits == Limits(max_replicas_per_job=1024, max_pods=7)


def test_local_cluster_gives_its_server_the_limits(tmp_path: Path) -> None:
    limits = Limits(max_replicas_per_job=5, max_pods=9)
    cluster = LocalCluster(
        ClusterConfig(state_dir=tmp_path / "state", limits=limits), kubelet=lambda c, k: None
    )
    assert cluster.server.state.limits == limits
