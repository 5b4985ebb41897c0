"""``trainop logs KIND NAME [-f] [--replica worker-1]``: the replicas' output, multiplexed.

Each line is prefixed with its replica (``[worker-1]``, the pod name without the job's). With
``-f`` lines arrive as written and the command ends when the job has ended. ``--replica`` takes
``TYPE-INDEX`` (``worker-1``), or a type alone (``worker``, ``launcher``).
"""

from __future__ import annotations

import itertools

import click
from rich.console import Console
from rich.text import Text

from trainop.cli import trainjobs
from trainop.cli.session import cluster_command, kind_of
from trainop.sdk import TrainingClient

_PALETTE = ("cyan", "magenta", "green", "yellow", "blue", "bright_red", "bright_cyan")


def parse_replica(replica: str | None) -> tuple[str | None, int | None]:
    """``worker-1`` → (``worker``, 1); ``launcher`` → (``launcher``, None)."""
    if not replica:
        return None, None
    kind, _, index = replica.lower().rpartition("-")
    if kind and index.isdigit():
        return kind, int(index)
    return replica.lower(), None


@click.command("logs")
@click.argument("kind")
@click.argument("name")
@click.option("-f", "--follow", is_flag=True, help="Stream until the job ends.")
@click.option("--replica", default=None, help="Only this replica: worker-1, master-0, launcher.")
@click.option("-c", "--container", default=None, help="Container (default: the kind's).")
@cluster_command
def logs(
    client: TrainingClient,
    kind: str,
    name: str,
    follow: bool,
    replica: str | None,
    container: str | None,
    namespace: str,
) -> None:
    """Print the logs of job NAME's replicas, each line prefixed with its replica."""
    if trainjobs.is_trainjob(kind):
        trainjobs.logs(client, name, follow=follow, replica=replica, container=container,
                       namespace=namespace)  # fmt: skip
        return
    info = kind_of(kind)
    replica_type, index = parse_replica(replica)
    colours: dict[str, str] = {}
    palette = itertools.cycle(_PALETTE)
    console = Console(highlight=False, soft_wrap=True)
    lines = client.iter_job_logs(
        name, namespace, info.kind, False, replica_type, index, follow, container
    )
    for pod, line in lines:
        label = pod.removeprefix(f"{name}-")
        colour = colours.setdefault(label, next(palette))
        console.print(Text(f"[{label}] ", style=colour) + Text(line))
