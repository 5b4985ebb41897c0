"""A small ``dglrun`` for the DGLJob example: the Launcher's command, so also the Partitioner's.

The operator runs the Launcher's command in two pods (dgljob-spec 2.4), told apart by
``DGL_OPERATOR_PHASE_ENV``:

- ``Partitioner`` (the Worker template with this command): makes a small graph (no download),
  partitions it with ``dgl.distributed.partition_graph`` into ``--num-parts`` parts under
  ``<workspace>/graph`` (a volume every pod of the job mounts) and records what the trainers
  must find there (``facts.json``: nodes, edges, the sum of the feature ``x``);
- Launcher: reads the hostfile the operator writes (``DGL_OPERATOR_HOSTFILE_PATH``, one line
  ``<ip> <port> <pod> slots=<n>`` per worker), writes DGL's ip_config (``<ip> <port>`` per
  machine) into the workspace and, on every worker through the operator's ``kubexec.sh``
  (``DGL_OPERATOR_KUBEXEC_PATH``: ``kubectl exec`` on a cluster, the kubelet's exec locally),
  starts one DGL server and one trainer (``torch.distributed.run``) with DGL's environment
  (as DGL's ``tools/launch.py``: ``DGL_ROLE``, ``DGL_NUM_SERVER``, ``DGL_NUM_CLIENT``,
  ``DGL_CONF_PATH``, ``DGL_IP_CONFIG`` ...). It exits 0 when every trainer and server did.

Run from the repository root (locally) or the image's working directory (containers), where
``examples/dgl/train.py`` is.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where used: the launcher needs neither dgl nor torch
    import dgl

GRAPH = "toy"  # the graph's name in DGL's partition config
TRAIN = "examples/dgl/train.py"


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def make_graph(nodes: int) -> dgl.DGLGraph:
    """A ring with chords: node i links to i+1 and 7i+3 (mod n); feature ``x`` and a target
    ``y`` = 3 * (mean of the in-neighbours' x) + 1, which the trainers learn."""
    import dgl
    import dgl.function as fn
    import torch

    ids = torch.arange(nodes)
    src = torch.cat([ids, ids])
    dst = torch.cat([(ids + 1) % nodes, (ids * 7 + 3) % nodes])
    graph = dgl.graph((src, dst), num_nodes=nodes)
    graph.ndata["x"] = ((ids * 37) % 101).float() / 64  # sums of these are exact in float32
    graph.update_all(fn.copy_u("x", "m"), fn.mean("m", "h"))
    graph.ndata["y"] = 3 * graph.ndata.pop("h") + 1
    return graph


def partition(workspace: Path, parts: int, nodes: int) -> int:
    import dgl

    graph = make_graph(nodes)
    out = workspace / "graph"
    shutil.rmtree(out, ignore_errors=True)  # an earlier run's partitions
    method = "metis" if parts > 1 else "random"
    dgl.distributed.partition_graph(graph, GRAPH, parts, str(out), part_method=method)
    facts = {
        "nodes": graph.num_nodes(),
        "edges": graph.num_edges(),
        "x_sum": float(graph.ndata["x"].sum()),
    }
    (out / "facts.json").write_text(json.dumps(facts))
    say(f"partitioned graph {GRAPH}: {facts} into {parts} part(s) under {out}")
    return 0


def hosts(hostfile: Path) -> list[tuple[str, str, str]]:
    """(ip, port, pod) of each worker line of the operator's hostfile."""
    found = []
    for line in hostfile.read_text().splitlines():
        if line.strip():
            ip, port, pod = line.split()[:3]
            found.append((ip, port, pod))
    return found


def free_port(host: str, start: int = 1234) -> int:
    """The first port from ``start`` that refuses a connection on ``host`` (DGL's launch.py
    picks the trainers' rendezvous port so)."""
    for port in range(start, start + 1000):
        with socket.socket() as probe:
            probe.settimeout(1)
            if probe.connect_ex((host, port)) != 0:
                return port
    raise RuntimeError(f"no free port on {host}")


def launch(workspace: Path) -> int:
    machines = hosts(Path(os.environ["DGL_OPERATOR_HOSTFILE_PATH"]))
    config = json.loads((workspace / "graph" / f"{GRAPH}.json").read_text())
    if not machines or config["num_parts"] != len(machines):
        say(f"{len(machines)} worker(s) in the hostfile for {config['num_parts']} partition(s)")
        return 1
    ip_config = workspace / "ip_config.txt"
    ip_config.write_text("".join(f"{ip} {port}\n" for ip, port, _ in machines))
    count = len(machines)
    common = {
        "DGL_NUM_SAMPLER": "0",
        "DGL_NUM_CLIENT": str(count),  # trainers per machine x (1 + samplers) x machines
        "DGL_CONF_PATH": str(workspace / "graph" / f"{GRAPH}.json"),
        "DGL_IP_CONFIG": str(ip_config),
        "DGL_NUM_SERVER": "1",
        "DGL_GRAPH_FORMAT": "csc",
        "OMP_NUM_THREADS": "1",
    }
    master, port = machines[0][0], free_port(machines[0][0])
    script = [TRAIN, "--workspace", str(workspace)]
    commands = []
    for k, (_, _, pod) in enumerate(machines):
        env = {"DGL_ROLE": "server", **common, "DGL_SERVER_ID": str(k)}
        commands.append((pod, "server", env, ["python3", *script]))
    for k, (_, _, pod) in enumerate(machines):
        env = {"DGL_DIST_MODE": "distributed", "DGL_ROLE": "client", **common, "DGL_GROUP_ID": "0"}
        run = ["python3", "-m", "torch.distributed.run", "--nproc_per_node=1"]
        run += [f"--nnodes={count}", f"--node_rank={k}", f"--master_addr={master}"]
        commands.append((pod, "trainer", env, [*run, f"--master_port={port}", *script]))
    return run_all(commands)


def run_all(commands: list[tuple[str, str, dict[str, str], list[str]]]) -> int:
    """Each command in its worker through ``kubexec.sh``; 0 once all exited 0. A failure
    ends the others (a server whose trainer failed would wait for it forever)."""
    kubexec = os.environ["DGL_OPERATOR_KUBEXEC_PATH"]
    started = []
    for pod, role, env, argv in commands:
        line = " ".join([*(f"{k}={shlex.quote(v)}" for k, v in env.items()), shlex.join(argv)])
        say(f"{role} on {pod}: {line}")
        process = subprocess.Popen(["sh", kubexec, pod, line], start_new_session=True)
        started.append((f"{role} on {pod}", process))
    while True:
        codes = [(name, process.poll()) for name, process in started]
        failed = [(name, code) for name, code in codes if code not in (None, 0)]
        if failed or all(code == 0 for _, code in codes):
            break
        time.sleep(0.2)
    for name, code in failed:
        say(f"{name} exited with {code}")
    for _, process in started:
        if process.poll() is None:  # its exec client too: the kubelet then ends the command
            os.killpg(process.pid, signal.SIGKILL)
    return 1 if failed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workspace", type=Path, required=True)
    parser.add_argument("--num-parts", type=int, required=True)
    parser.add_argument("--nodes", type=int, default=2000)
    args = parser.parse_args()
    if os.environ.get("DGL_OPERATOR_PHASE_ENV") == "Partitioner":
        return partition(args.workspace, args.num_parts, args.nodes)
    return launch(args.workspace)


if __name__ == "__main__":
    sys.exit(main())
