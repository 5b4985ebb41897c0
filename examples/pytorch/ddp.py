"""PyTorch DDP on gloo across the replicas of a PyTorchJob (or torchrun's local processes).

Reads MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK from the environment (the operator sets them
in every pod; under torchrun, torchrun sets them for each local process). Proves cooperation
twice: an all-reduce of rank+1 must equal WORLD_SIZE*(WORLD_SIZE+1)/2, and a tiny linear model
trained with DistributedDataParallel on per-rank synthetic shards must reach the stated loss
with bit-identical parameters on every rank. Prints ``PROOF ... OK`` and exits 0, else exits 1.

``--fail-once-rank R``: the process with RANK R exits 137 (as if OOM-killed) the first time it
runs. A marker file in ``--fail-once-dir`` (default: the temp dir, which is the pod's own)
remembers the first run, named after the pod ($POD_NAME, which the manifests set from the
downward API; a recreated pod keeps its name), MASTER_PORT and RANK. The second run removes it,
so the next run of the job fails once again; a marker older than 10 minutes is a leftover of an
interrupted run and is ignored. Used by the restart-policy examples: ``fail-once-exitcode.yaml``
mounts a ``hostPath`` there so that the marker outlives the pod the operator recreates.
"""

import argparse
import contextlib
import os
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

TARGET_LOSS = 0.02


STALE_MARKER_SECONDS = 600


def say(line: str) -> None:
    """One write per line: under ``torchrun --nproc-per-node`` several ranks share the pod's
    output, and ``print`` under ``python -u`` writes the text and its newline separately, so
    another rank's line could land between them."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def fail_once(rank: int, directory: Path) -> None:
    pod = os.environ.get("POD_NAME") or os.environ["MASTER_ADDR"]
    marker = directory / f"trainop-fail-once-{pod}-{os.environ['MASTER_PORT']}-rank{rank}"
    with contextlib.suppress(OSError):
        if time.time() - marker.stat().st_mtime < STALE_MARKER_SECONDS:
            marker.unlink()
            say(f"rank {rank}: second run (marker {marker} present), carrying on")
            return
    directory.mkdir(parents=True, exist_ok=True)
    marker.write_text("failed once\n")
    say(f"rank {rank}: first run, exiting 137 to simulate an OOM kill")
    os._exit(137)


def allreduce_sum(rank: int) -> int:
    value = torch.tensor([float(rank + 1)])
    dist.all_reduce(value, op=dist.ReduceOp.SUM)
    return int(value.item())


def train(rank: int) -> tuple[float, float]:
    """Fit y = 3x - 2 on this rank's shard; returns (global mean loss, parameter spread)."""
    torch.manual_seed(1234 + rank)  # every rank gets different data ...
    x = torch.randn(256, 1)
    y = 3.0 * x - 2.0 + 0.01 * torch.randn(256, 1)
    torch.manual_seed(0)  # ... and DDP broadcasts rank 0's initial weights anyway
    model = DistributedDataParallel(torch.nn.Linear(1, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(100):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
    mean_loss = loss.detach().clone()
    dist.all_reduce(mean_loss, op=dist.ReduceOp.AVG)
    params = torch.cat([p.detach().flatten() for p in model.parameters()])
    highest, lowest = params.clone(), params.clone()
    dist.all_reduce(highest, op=dist.ReduceOp.MAX)
    dist.all_reduce(lowest, op=dist.ReduceOp.MIN)
    w, b = params.tolist()
    say(f"rank {rank}: loss={loss.item():.5f} w={w:.4f} b={b:.4f}")
    return mean_loss.item(), (highest - lowest).abs().max().item()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fail-once-rank", type=int, default=None)
    parser.add_argument("--fail-once-dir", type=Path, default=Path(tempfile.gettempdir()))
    args = parser.parse_args()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    if args.fail_once_rank == rank:
        fail_once(rank, args.fail_once_dir)
    say(f"rank {rank}/{world}: joining {os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}")
    dist.init_process_group("gloo", timeout=timedelta(seconds=120))
    total, expected = allreduce_sum(rank), world * (world + 1) // 2
    loss, spread = train(rank)
    dist.barrier()  # nobody tears down (rank 0 hosts the store) while another still talks
    dist.destroy_process_group()
    ok = total == expected and loss < TARGET_LOSS and spread == 0.0
    verdict = "OK" if ok else "FAIL"
    say(
        f"PROOF ddp rank={rank} world={world} allreduce sum={total} expected={expected} "
        f"loss={loss:.5f} target<{TARGET_LOSS} param_spread={spread:g} {verdict}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Leave without interpreter teardown: torch 2.13's gloo occasionally aborts (SIGABRT) while
    # Python exits after a clean destroy_process_group; the result is already printed.
    os._exit(code)
