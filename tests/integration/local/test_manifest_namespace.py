"""A manifest's namespace on a local cluster: ``trainop run`` and ``trainop submit`` create it.

Upstream's examples say ``namespace: kubeflow``; a fresh local cluster has only ``default``.
On a cluster that is not a trainop local one, ``submit`` creates nothing (the namespace is
the administrator's business) and the API server's NotFound reaches the user.
"""

from __future__ import annotations

import copy
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from tests.integration.cluster.apiserver.conftest import RunningServer
from tests.integration.controller.cluster import start_cluster_server
from tests.integration.local.test_trainop_run import job, py
from trainop.cli.main import main as cli


def in_namespace(manifest: dict[str, Any], namespace: str) -> dict[str, Any]:
    manifest["metadata"]["namespace"] = namespace
    return manifest


def test_run_creates_the_manifests_namespace_and_says_so(tmp_path: Path) -> None:
    manifest = in_namespace(
        job("ns", master=py("print('hi')"), worker=py("print('hi')")), "kubeflow"
    )
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(manifest))
    done = subprocess.run(
        [sys.executable, "-m", "trainop.cli.main", "run", str(path), "--timeout", "120"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "namespace/kubeflow created" in output
    assert "PyTorchJob/ns Succeeded" in output
    assert "not found" not in output


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    yield from start_cluster_server(tmp_path_factory.mktemp("submit"))


def submit(kubeconfig: Path, manifest: dict[str, Any], tmp_path: Path) -> tuple[int, str]:
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(manifest))
    result = CliRunner().invoke(cli, ["submit", "-f", str(path), "--kubeconfig", str(kubeconfig)])
    return result.exit_code, result.output


def test_submit_to_a_local_cluster_creates_the_namespace_once(
    server: RunningServer, tmp_path: Path
) -> None:
    first = in_namespace(job("a", master=["true"], worker=["true"]), "team-a")
    code, output = submit(server.kubeconfig, first, tmp_path)
    assert code == 0, output
    assert output.splitlines() == ["namespace/team-a created", "pytorchjob/a created"]
    second = in_namespace(job("b", master=["true"], worker=["true"]), "team-a")
    code, output = submit(server.kubeconfig, second, tmp_path)
    assert code == 0, output
    assert output.splitlines() == ["pytorchjob/b created"]


def test_submit_to_another_cluster_creates_no_namespace(
    server: RunningServer, tmp_path: Path
) -> None:
    config = yaml.safe_load(server.kubeconfig.read_text())
    renamed = copy.deepcopy(config)
    for context in renamed["contexts"]:
        context["name"] = "production"
    renamed["current-context"] = "production"
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(renamed))
    manifest = in_namespace(job("c", master=["true"], worker=["true"]), "team-b")
    code, output = submit(kubeconfig, manifest, tmp_path)
    assert code != 0
    assert 'namespaces "team-b" not found' in output
    assert "created" not in output
