"""``trainop run --runtime podman`` of an MPIJob v2beta1 whose workers run sshd: the launcher's
mpirun reaches them over real SSH (note 100), not through the kubelet's exec.

Uses ``localhost/trainop-mpi-ssh:1`` from ``make container-images``
(containers/Containerfile.mpi-ssh); skipped, with the reason, where podman or the images are
missing, and, as every container test, checks that no container or network is left.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.e2e.test_containers import MPI_PROOF, ROOT, _podman, _run, podman  # noqa: F401

SSH_IMAGE = "localhost/trainop-mpi-ssh:1"
EXAMPLE = ROOT / "examples" / "mpi" / "v2beta1-ssh-containers.yaml"
# sshd -De logs each login to its stderr, the worker's log: the launcher's key (the job's
# Secret) from the launcher's address. The kubelet's exec logs in nowhere.
ACCEPTED = re.compile(r"^\[(worker-[01])\]\s+Accepted publickey for root from (\S+) port \d+ ")
LISTENING = re.compile(r"^\[(worker-[01])\]\s+Server listening on 0\.0\.0\.0 port 22\.$")

pytestmark = [pytest.mark.e2e, pytest.mark.containers]


def test_the_launcher_reaches_sshd_workers_over_real_ssh(podman: Path) -> None:  # noqa: F811
    if _podman(podman, "image", "exists", SSH_IMAGE).returncode != 0:
        pytest.skip(f"image {SSH_IMAGE} is missing (make container-images)")
    code, output, elapsed = _run(EXAMPLE, "--runtime", "podman")
    assert code == 0, output
    assert output.splitlines()[0] == "runtime: podman (asked for; a network of their own)"
    job = "mpi-v2-ssh"
    assert MPI_PROOF.findall(output) == [f"{job}-worker-0,{job}-worker-1"], output
    lines = output.splitlines()
    assert {m.group(1) for m in map(LISTENING.match, lines) if m} == {"worker-0", "worker-1"}
    logins = [m.groups() for m in map(ACCEPTED.match, lines) if m]
    assert sorted(worker for worker, _ in logins) == ["worker-0", "worker-1"], output
    assert len({address for _, address in logins}) == 1, logins  # both from the launcher
    assert "Could not resolve hostname" not in output
    assert lines[-1].endswith("Succeeded")
    print(f"mpi over ssh: {elapsed:.1f}s")
