"""A small gloo DDP training run for the container e2e test (image path /opt/train/ddp.py).

Reads the operator's env (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK), trains a linear model
for a few steps on each rank's own data, checks that every rank ends with the same weights,
and prints one line per rank that the test reads.
"""

import os
import socket
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def main() -> None:
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Linear(4, 1))
    optimiser = torch.optim.SGD(model.parameters(), lr=0.1)
    generator = torch.Generator().manual_seed(rank)
    for _ in range(5):
        inputs = torch.randn(8, 4, generator=generator)
        loss = model(inputs).pow(2).mean()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    weights = torch.cat([p.detach().flatten() for p in model.parameters()])
    gathered = [torch.zeros_like(weights) for _ in range(world)]
    dist.all_gather(gathered, weights)
    same = all(torch.equal(weights, other) for other in gathered)
    master = os.environ.get("MASTER_ADDR", "")
    print(
        f"ddp rank={rank} world={world} master={master} host={socket.gethostname()} in_sync={same}",
        flush=True,
    )
    dist.barrier()  # nobody tears gloo down while a peer still talks to it
    dist.destroy_process_group()
    sys.stdout.flush()
    # gloo's threads can abort ("terminate called without an active exception") in the
    # interpreter's teardown, failing a run that succeeded: leave without it
    os._exit(0 if same else 1)


if __name__ == "__main__":
    main()
