"""MPI all-reduce across the ranks that an MPIJob's launcher starts with ``mpirun``.

Each rank contributes rank+1 and a vector; the all-reduced sum must equal size*(size+1)/2 on
every rank, and rank 0 also gathers every rank's pid (distinct processes) and Open MPI's local
rank count (1 when each rank runs on its own hostfile node, i.e. in its own worker) and the
ranks' hostnames (in containers: the worker pods' names). Prints ``PROOF ... OK`` on rank 0 (and exits 0), else exits 1 on every rank.
"""

import os
import socket
import sys

from mpi4py import MPI


def say(line: str) -> None:
    """One write per line: ranks share the launcher's output, and ``print`` under ``python -u``
    writes the text and its newline separately, so another rank's line could land between."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main() -> int:
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    total = comm.allreduce(rank + 1, op=MPI.SUM)
    expected = size * (size + 1) // 2
    local_size = os.environ.get("OMPI_COMM_WORLD_LOCAL_SIZE", "?")
    peers = comm.gather((f"{socket.gethostname()}:{os.getpid()}", local_size), root=0)
    say(f"rank {rank}/{size}: allreduce sum={total}")
    ok = total == expected and size > 1
    if rank == 0:
        distinct = len({pid for pid, _ in peers or []}) == size
        ok = ok and distinct
        per_node = ",".join(sorted({local for _, local in peers or []}))
        hosts = ",".join(sorted({peer.split(":")[0] for peer, _ in peers or []}))
        say(
            f"PROOF mpi size={size} allreduce sum={total} expected={expected} "
            f"distinct_processes={distinct} ranks_per_node={per_node} hosts={hosts} "
            f"{'OK' if ok else 'FAIL'}"
        )
    return 0 if comm.allreduce(ok, op=MPI.LAND) else 1


if __name__ == "__main__":
    sys.exit(main())
