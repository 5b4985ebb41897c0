"""``trainop run --runtime docker`` and ``local up --runtime docker``: the container kubelet
through Docker (note 095), on the images of ``make container-images`` loaded into docker
(``make docker-env container-images``). After every case no container or network of the
test's sessions is left (found by their ``trainop.state`` label, as in test_containers.py).
Skipped, with the reason, where ``docker info`` fails or the images are not loaded.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_containers import (
    _OURS,
    MANIFESTS,
    MPI_PROOF,
    ROOT,
    TRAINOP,
    _exec_into_a_container,
    _ours,
    _ranks,
    _run,
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
    short = tempfile.mkdtemp(prefix="tp-", dir="/tmp")  # sockets' paths stay short
    monkeypatch.setenv("TMPDIR", short)
    _OURS[tmp_path] = (str(tmp_path), short)
    try:
        yield tmp_path
        assert _left(tmp_path) == ([], [])
    finally:
        shutil.rmtree(short, ignore_errors=True)


def _wait_for_a_container(tmp: Path, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 90
    while not _left(tmp)[0] and time.monotonic() < deadline and process.poll() is None:
        with pytest.raises(subprocess.TimeoutExpired):
            process.wait(timeout=0.2)
    assert _left(tmp)[0], "no container appeared before the deadline"


def test_ddp_succeeds_in_docker_containers_reached_by_pod_names(docker: Path) -> None:
    code, output, _ = _run(MANIFESTS / "pytorch-ddp.yaml", "--runtime", "docker")
    assert code == 0, output
    assert output.splitlines()[0] == "runtime: docker (asked for; a network of their own)"
    master = "ddp-containers-master-0"  # the master pod's name, resolved by docker's DNS
    assert _ranks(output) == {"master-0": master, "worker-0": master, "worker-1": master}
    assert output.splitlines()[-1].endswith("Succeeded")


def test_a_missing_image_in_docker_shows_err_image_pull_and_the_run_ends(
    docker: Path, tmp_path: Path
) -> None:
    manifest = tmp_path / "missing.yaml"
    text = (MANIFESTS / "pytorch-ddp.yaml").read_text()
    manifest.write_text(text.replace("localhost/trainop-ddp:1", "localhost/trainop-missing:1"))
    code, output, elapsed = _run(manifest, "--runtime", "docker", "--timeout", "90")
    assert code == 1, output
    assert "(ErrImagePull)" in output
    assert 'failed to pull image "localhost/trainop-missing:1": Error response from daemon' in (
        output
    )
    assert elapsed < 90


def test_ctrl_c_of_a_docker_run_leaves_no_container(docker: Path) -> None:
    process = subprocess.Popen(
        [*TRAINOP, "run", "--runtime", "docker", str(MANIFESTS / "pytorch-ddp.yaml")],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    _wait_for_a_container(docker, process)
    process.send_signal(signal.SIGINT)
    output, _ = process.communicate(timeout=60)
    assert process.returncode == 130, output
    # the fixture asserts that no container or network is left


def test_the_next_docker_start_reaps_what_a_sigkilled_session_left(docker: Path) -> None:
    manifest = str(MANIFESTS / "pytorch-ddp.yaml")
    process = subprocess.Popen(
        [*TRAINOP, "run", "--runtime", "docker", "--timeout", "120", manifest],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        _wait_for_a_container(docker, process)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    containers, networks = _left(docker)
    assert containers
    assert networks
    code, output, _ = _run(MANIFESTS / "pytorch-ddp-entrypoint.yaml", "--runtime", "docker")
    assert code == 0, output  # and the fixture finds nothing left of either session


def test_local_up_with_docker_runs_jobs_and_kubectl_exec_reaches_a_container(
    docker: Path, tmp_path: Path
) -> None:
    state = tmp_path / "cluster"
    up = subprocess.run(
        [*TRAINOP, "local", "up", "--state-dir", str(state), "--runtime", "docker"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert up.returncode == 0, up.stderr
    log = (state / "trainop.log").read_text()  # the daemon's log says which runtime
    assert "runtime: docker (asked for; a network of their own)" in log
    env = {**os.environ, "KUBECONFIG": str(state / "kubeconfig")}
    try:
        manifest = str(MANIFESTS / "pytorch-ddp-entrypoint.yaml")
        subprocess.run([*TRAINOP, "submit", "-f", manifest], env=env, check=True, timeout=60)
        wait = ["wait", "pytorchjob", "ddp-entrypoint", "--for", "Succeeded", "--timeout", "120"]
        waited = subprocess.run(
            [*TRAINOP, *wait],
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        assert waited.returncode == 0, waited.stdout + waited.stderr
        assert _left(docker)[1], "the session's network exists while the cluster runs"
        if shutil.which("kubectl"):
            _exec_into_a_container(env, tmp_path)  # docker exec
    finally:
        down = subprocess.run(
            [*TRAINOP, "local", "down", "--state-dir", str(state)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert down.returncode == 0, down.stderr


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
