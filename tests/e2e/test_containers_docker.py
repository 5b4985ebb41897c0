"""``trainop run --runtime docker`` and ``local up --runtime docker``: the container kubelet
through Docker (note 095), on the images of ``make container-images`` loaded into docker
(``make docker-env container-images``). After every case no container or network of the
test's sessions is left (found by their ``trainop.state`` label, as in test_containers.py).
Skipped, with the reason, where ``docker info`` fails or the images are not loaded.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_containers import (
    MANIFESTS,
    MPI_PROOF,
    ROOT,
    _ours,
    _run,
    check_a_missing_image_ends_the_run,
    check_an_oom_kill_is_oomkilled,
    check_ctrl_c_leaves_no_container,
    check_ddp_succeeds,
    check_limits_apply,
    check_local_up_runs_containers,
    check_the_next_start_reaps_a_sigkilled_session,
    private_sessions,
)

MPI_IMAGES = ("localhost/trainop-mpi:1", "localhost/trainop-mpi-ssh:1")
IMAGES = (
    "localhost/trainop-ddp:1",
    "localhost/trainop-ddp-entry:1",
    "localhost/trainop-debian-py:12",
)

pytestmark = [pytest.mark.e2e, pytest.mark.containers]


def _docker(*words: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["docker", *words], capture_output=True, text=True, check=False, timeout=60
    )


def _inspected(listing: list[str], inspect: list[str]) -> list[dict[str, Any]]:
    """The inspected objects of a docker listing (its labels as JSON, not ``k=v,...``)."""
    listed = _docker(
        *listing, "--no-trunc", "--filter", "label=trainop.session", "--format", "{{json .}}"
    )
    ids = [json.loads(line)["ID"] for line in listed.stdout.splitlines() if line.strip()]
    if not ids:
        return []
    found = _docker(*inspect, *ids)
    return list(json.loads(found.stdout or "[]"))  # a container gone meanwhile: fewer


def _left(tmp: Path) -> tuple[list[str], list[str]]:
    """Containers and networks of this test's trainop sessions that exist now."""
    containers = [
        str(c["Name"]).lstrip("/")
        for c in _inspected(["ps", "-a"], ["inspect"])
        if _ours((c.get("Config") or {}).get("Labels"), tmp)
    ]
    networks = [
        str(n["Name"])
        for n in _inspected(["network", "ls"], ["network", "inspect"])
        if _ours(n.get("Labels"), tmp)
    ]
    return sorted(containers), sorted(networks)


@pytest.fixture
def docker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    if shutil.which("docker") is None or _docker("info").returncode != 0:
        pytest.skip("docker does not work here (make docker-env)")
    for image in IMAGES:
        if _docker("image", "inspect", image).returncode != 0:
            pytest.skip(f"image {image} is not loaded into docker (make container-images)")
    yield from private_sessions(tmp_path, monkeypatch, _left)


def test_ddp_succeeds_in_docker_containers_reached_by_pod_names(docker: Path) -> None:
    check_ddp_succeeds("docker")  # MASTER_ADDR resolved by docker's embedded DNS


def test_a_missing_image_in_docker_shows_err_image_pull_and_the_run_ends(docker: Path) -> None:
    check_a_missing_image_ends_the_run(docker, "docker", "Error response from daemon: ")


def test_ctrl_c_of_a_docker_run_leaves_no_container(docker: Path) -> None:
    check_ctrl_c_leaves_no_container(docker, "docker", _left)


def test_the_next_docker_start_reaps_what_a_sigkilled_session_left(docker: Path) -> None:
    check_the_next_start_reaps_a_sigkilled_session(docker, "docker", _left)


def test_local_up_with_docker_runs_jobs_and_kubectl_exec_reaches_a_container(
    docker: Path,
) -> None:
    check_local_up_runs_containers(docker, "docker", _left)  # exec: docker exec


@pytest.mark.parametrize(
    ("manifest", "job"),
    [
        (MANIFESTS / "mpi-allreduce.yaml", "mpi-allreduce"),  # ranks started by docker exec
        (ROOT / "examples" / "mpi" / "v2beta1-ssh-containers.yaml", "mpi-v2-ssh"),  # real ssh
    ],
)
def test_an_mpi_launcher_reaches_its_docker_workers(docker: Path, manifest: Path, job: str) -> None:
    for image in MPI_IMAGES:
        if _docker("image", "inspect", image).returncode != 0:
            pytest.skip(f"image {image} is not loaded into docker (make container-images)")
    code, output, _ = _run(manifest, "--runtime", "docker")
    assert code == 0, output
    assert MPI_PROOF.findall(output) == [f"{job}-worker-0,{job}-worker-1"], output


def test_docker_sets_the_pods_limits_and_reports_an_oom_kill(docker: Path, tmp_path: Path) -> None:
    """Docker's info says memory and CPU limits work here (cgroup v1, cgroupfs): the container
    runs under 96Mi and half a CPU, and one over 64Mi is killed: 137, OOMKilled."""
    check_limits_apply(tmp_path, "docker")
    check_an_oom_kill_is_oomkilled(tmp_path, "docker")
