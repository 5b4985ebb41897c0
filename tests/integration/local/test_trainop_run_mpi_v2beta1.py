"""MPIJob v2beta1 under ``trainop run``: the launcher is a batch/v1 Job (run by local mode's
Job controller) whose ``ssh <worker fqdn> cmd`` runs the command inside that worker pod.

No MPI needed: the launcher calls its remote shell itself, as ``mpirun`` would, with Open
MPI's ssh arguments and the FQDN from the hostfile; the e2e example
(``examples/mpi/v2beta1-allreduce.yaml``, tests/e2e) runs the real Open MPI.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.integration.local.test_trainop_run import finish, start
from tests.integration.local.test_trainop_run_mpi import two_worker_mpi_job

SCRIPT = """\
host=$(sed -n 2p "$OMPI_MCA_orte_default_hostfile" | cut -d' ' -f1)
echo "second host: $host"
remote='echo "ran in $HOSTNAME as $K_MPI_JOB_ROLE"; exit 3'
$OMPI_MCA_plm_rsh_agent $OMPI_MCA_plm_rsh_args "$host" "$remote"
echo "ssh exit code $?"
ls "$(dirname "$OMPI_MCA_orte_default_hostfile")"
"""


def v2_job(name: str) -> dict[str, Any]:
    worker = {"name": "mpi", "image": "mpi:1", "command": ["sleep", "365d"]}
    launcher = {"name": "mpi", "image": "mpi:1", "command": ["/bin/sh", "-c", SCRIPT]}
    return two_worker_mpi_job("kubeflow.org/v2beta1", name, launcher, worker)


def test_the_launcher_job_reaches_a_worker_by_its_fqdn(tmp_path: Path) -> None:
    code, output = finish(start(tmp_path, v2_job("ssh")))
    assert code == 0, output
    assert "second host: ssh-worker-1.ssh.default.svc" in output, output
    assert "ran in ssh-worker-1 as worker" in output, output
    assert "ssh exit code 3" in output, output
    assert "discover_hosts.sh" in output, output
    assert "MPIJob/ssh Succeeded" in output, output
