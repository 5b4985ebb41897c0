"""MPIJob under ``trainop run``: the launcher's rsh agent runs commands inside worker pods.

The fast test needs no MPI: the launcher calls the generated ``kubexec.sh`` itself, as
``mpirun`` would, and the command must run in the worker's sandbox (its env, working
directory and pod name) with its exit code and output forwarded. The ``e2e`` test runs the
real Open MPI example (``examples/mpi/allreduce.yaml``).
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path
from typing import Any

from tests.integration.local.test_trainop_run import finish, start

ROOT = Path(__file__).resolve().parents[3]
AGENT_SCRIPT = """\
"$OMPI_MCA_plm_rsh_agent" rsh-worker-1 'echo "ran in $HOSTNAME: $GREETING at $PWD"; exit 3'
echo "agent exit code $?"
while read -r host slots; do echo "hostfile: $host $slots"; done < "$OMPI_MCA_orte_default_hostfile"
"""


def two_worker_mpi_job(
    api_version: str, name: str, launcher: dict[str, Any], worker: dict[str, Any]
) -> dict[str, Any]:
    """An MPIJob (``api_version``) of one launcher and two workers of two slots each, with
    these containers; cleanPodPolicy Running. The v2beta1 test builds its job here too."""
    return {
        "apiVersion": api_version,
        "kind": "MPIJob",
        "metadata": {"name": name},
        "spec": {
            "slotsPerWorker": 2,
            "runPolicy": {"cleanPodPolicy": "Running"},
            "mpiReplicaSpecs": {
                "Launcher": {"replicas": 1, "template": {"spec": {"containers": [launcher]}}},
                "Worker": {"replicas": 2, "template": {"spec": {"containers": [worker]}}},
            },
        },
    }


def mpi_job(name: str, launcher: list[str]) -> dict[str, Any]:
    worker = {
        "name": "mpi",
        "image": "mpi:1",
        "env": [{"name": "GREETING", "value": "hello from the worker"}],
        "workingDir": "/scratch",
    }
    launcher_container = {"name": "mpi", "image": "mpi:1", "command": launcher}
    return two_worker_mpi_job("kubeflow.org/v1", name, launcher_container, worker)


def test_the_rsh_agent_runs_the_command_in_the_named_worker_pod(tmp_path: Path) -> None:
    code, output = finish(start(tmp_path, mpi_job("rsh", ["/bin/sh", "-c", AGENT_SCRIPT])))
    assert code == 0, output
    lines = [
        line.split(None, 1)[1] for line in output.splitlines() if line.startswith("[launcher]")
    ]
    ran = [line for line in lines if line.startswith("ran in ")]
    assert len(ran) == 1, output
    assert ran[0].startswith("ran in rsh-worker-1: hello from the worker at "), output
    directory = Path(ran[0].rsplit(" at ", 1)[1])
    assert directory.parts[-3:] == ("fs", "mpi", "scratch"), "the worker's mapped workingDir"
    assert "rsh-worker-1" in directory.parts, "inside the worker's sandbox"
    assert "agent exit code 3" in lines, output
    assert "hostfile: rsh-worker-0 slots=2" in lines, output
    assert "hostfile: rsh-worker-1 slots=2" in lines, output
    assert "MPIJob/rsh Succeeded" in output, output


def _missing_mpi() -> list[str]:
    missing = [] if shutil.which("mpirun") else ["mpirun"]
    return missing + ([] if importlib.util.find_spec("mpi4py") else ["mpi4py"])
