"""DGL distributed training over the partitioned graph: a DGL server or a trainer.

``examples/dgl/dglrun.py`` (the launcher) starts both on every worker with DGL's environment:
``DGL_ROLE=server`` makes ``dgl.distributed.initialize`` serve this machine's partition until
every trainer has left; a trainer (``DGL_ROLE=client``, under ``torch.distributed.run``)
connects to all servers and opens the ``DistGraph``. Each trainer then

- reads the feature ``x`` and the in-degree of *every* node of the graph (most of them served
  by other machines' servers) and checks them against ``facts.json``, what the partitioner
  made: node count, edge count, the sum of ``x``;
- takes the nodes of its own partition (``node_split``), samples all their in-neighbours
  (``sample_neighbors``, across partitions) and trains ``y ~ w * mean(x of in-neighbours) + b``
  with DDP (gloo) until the loss is small.

Trainer 0 all-reduces (owned nodes, trainers that saw the whole graph) and prints
``PROOF dgl ... OK`` when the owned nodes of all trainers add up to the graph's node count,
every trainer saw the whole graph and the model fits; otherwise ``... FAIL`` and exit 1.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import dgl
import torch
import torch.distributed as dist

GRAPH = "toy"


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def whole_graph(graph: dgl.distributed.DistGraph) -> tuple[int, int, float]:
    """(nodes, sum of in-degrees, sum of x) over every node, pulled from all servers."""
    every = torch.arange(graph.num_nodes())
    degrees = int(graph.in_degrees(every).sum())
    return graph.num_nodes(), degrees, float(graph.ndata["x"][every].sum())


def fit(graph: dgl.distributed.DistGraph, seeds: torch.Tensor) -> float:
    """Learn y from the mean of the seeds' in-neighbours' x (DDP over all trainers)."""
    frontier = dgl.distributed.sample_neighbors(graph, seeds, -1)  # every in-edge
    src, dst = frontier.edges()
    x = graph.ndata["x"][src]
    where = torch.searchsorted(seeds, dst)  # seeds are sorted
    total = torch.zeros(len(seeds)).index_add_(0, where, x)
    count = torch.zeros(len(seeds)).index_add_(0, where, torch.ones(len(x)))
    inputs, target = (total / count).unsqueeze(1), graph.ndata["y"][seeds].unsqueeze(1)
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(1, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    for _ in range(300):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(inputs), target)
        loss.backward()
        optimizer.step()
    return float(loss.detach())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workspace", type=Path, required=True)
    args = parser.parse_args()
    dgl.distributed.initialize(str(args.workspace / "ip_config.txt"))  # a server ends here
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    graph = dgl.distributed.DistGraph(GRAPH)
    facts = json.loads((args.workspace / "graph" / "facts.json").read_text())
    seen = whole_graph(graph)
    whole = seen == (facts["nodes"], facts["edges"], facts["x_sum"])  # x sums are exact
    mine = torch.ones(graph.num_nodes(), dtype=torch.bool)
    seeds = dgl.distributed.node_split(mine, graph.get_partition_book(), force_even=False)
    seeds = torch.sort(seeds).values
    loss = fit(graph, seeds)
    say(f"trainer {rank}/{world} on {os.environ.get('HOSTNAME', '?')}: owns {len(seeds)} "
        f"of {graph.num_nodes()} nodes; saw (nodes, in-degrees, x sum) {seen}, partitioner "
        f"made {tuple(facts.values())}; loss={loss:.6f}")  # fmt: skip
    sums = torch.tensor([len(seeds), int(whole)], dtype=torch.int64)
    dist.all_reduce(sums)
    owned, seeing = int(sums[0]), int(sums[1])
    ok = owned == facts["nodes"] and seeing == world and loss < 1e-3
    if rank == 0:
        parts = graph.get_partition_book().num_partitions()
        say(
            f"PROOF dgl trainers={world} partitions={parts} nodes={graph.num_nodes()} "
            f"owned_sum={owned} expected={facts['nodes']} whole_graph={seeing}/{world} "
            f"edges={graph.num_edges()} loss={loss:.6f} target<0.001 {'OK' if ok else 'FAIL'}"
        )
    dist.barrier()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
