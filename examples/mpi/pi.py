"""Estimate pi across MPI ranks (upstream mpi-operator's ``pi`` example, as a Python program).

Each rank integrates 4/(1+x^2) over its share of N midpoints; the shares are summed with
``reduce`` on rank 0, which prints ``PROOF mpi-pi ... OK`` when the estimate is within 1e-9 of
pi with more than one rank, else exits 1.
"""

import math
import socket
import sys

from mpi4py import MPI

STEPS = 2_000_000


def say(line: str) -> None:
    """One write per line (ranks share the launcher's output; see allreduce.py)."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main() -> int:
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    width = 1.0 / STEPS
    part = sum(4.0 / (1.0 + ((i + 0.5) * width) ** 2) for i in range(rank, STEPS, size)) * width
    total = comm.reduce(part, op=MPI.SUM, root=0)
    hosts = comm.gather(socket.gethostname(), root=0)
    say(f"rank {rank}/{size} on {socket.gethostname()}: partial={part:.12f}")
    if rank != 0:
        return 0
    error = abs((total or 0.0) - math.pi)
    ok = error < 1e-9 and size > 1 and len(hosts or []) == size
    verdict = "OK" if ok else "FAIL"
    say(f"PROOF mpi-pi ranks={size} pi={total:.12f} error={error:.1e} {verdict}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
