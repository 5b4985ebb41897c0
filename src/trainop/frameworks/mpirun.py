"""What ``mpirun`` on an MPI launcher reads: the hostfile and the remote shell to the hosts.

Each MPI implementation (Open MPI, Intel MPI, MPICH) has its own hostfile line format and its own
variables naming the program that starts ranks on another host (the "rsh agent": ``ssh``,
upstream v1's ``kubexec.sh``, or in local mode the kubelet's exec client). A launcher that is
not itself a host gets no GPUs (upstream blanks the NVIDIA variables).

Shared by both MPIJob plugins, which differ in what they pass: ``mpi`` (v1: pod names, Open MPI's
format, the Open MPI and Intel variables side by side) and ``mpi_v2beta1`` (FQDNs, the job's
``mpiImplementation``). Pure functions of strings.
"""

from __future__ import annotations

from collections.abc import Iterable

OPEN_MPI = "OpenMPI"
_HOSTFILE_LINES = {
    OPEN_MPI: "{host} slots={slots}\n",
    "Intel": "{host}:{slots}\n",
    "MPICH": "{host}:{slots}\n",
}
NO_GPUS = (("NVIDIA_VISIBLE_DEVICES", ""), ("NVIDIA_DRIVER_CAPABILITIES", ""))


def hostfile(hosts: Iterable[str], slots: int, implementation: str = OPEN_MPI) -> str:
    """One line per host, in order, with its slot count in ``implementation``'s format."""
    line = _HOSTFILE_LINES[implementation]
    return "".join(line.format(host=host, slots=slots) for host in hosts)


def remote_shell(
    implementation: str, *, agent: str, bootstrap: str = "ssh"
) -> list[tuple[str, str]]:
    """The variables that make ``implementation`` start remote ranks with ``agent``; Intel MPI
    and MPICH also name the bootstrap mode (``ssh``, or ``rsh`` for a wrapper script)."""
    return {
        OPEN_MPI: [("OMPI_MCA_plm_rsh_agent", agent)],
        "Intel": [("I_MPI_HYDRA_BOOTSTRAP", bootstrap), ("I_MPI_HYDRA_BOOTSTRAP_EXEC", agent)],
        "MPICH": [("HYDRA_LAUNCHER", bootstrap), ("HYDRA_LAUNCHER_EXEC", agent)],
    }[implementation]
