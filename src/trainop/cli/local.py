"""``trainop local ...``: single-machine commands.

``up``/``down``/``status`` manage a persistent local cluster in the background (see
``local.daemon``); ``serve`` is what ``up`` runs; ``apiserver`` runs the embedded API server
alone.

``trainop local apiserver --state-dir DIR`` serves until interrupted (SIGINT/SIGTERM), keeping
its objects in ``DIR/store.db`` and writing a kubeconfig (``DIR/kubeconfig`` unless
``--kubeconfig``) that any Kubernetes client can use. The kubeconfig is written only once the
server accepts connections, so its appearance means "ready".
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from pathlib import Path

import click

from trainop.errors import TrainopError
from trainop.local import apiserver, daemon
from trainop.local.cluster import ClusterConfig, process_cluster


@click.group("local")
def local() -> None:
    """Run trainop's local (single-machine) components."""


@local.command("apiserver")
@click.option(
    "--state-dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory for the store, the token and the default kubeconfig.",
)
@click.option("--port", default=6443, show_default=True, help="TCP port on 127.0.0.1 (0: any).")
@click.option(
    "--kubeconfig",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Where to write the kubeconfig (default: STATE_DIR/kubeconfig).",
)
def apiserver_command(state_dir: Path, port: int, kubeconfig: Path | None) -> None:
    """Serve the embedded Kubernetes API on 127.0.0.1 until interrupted."""
    config = apiserver.ServerConfig(state_dir=state_dir, port=port, kubeconfig=kubeconfig)
    asyncio.run(_serve(config))


async def _serve(config: apiserver.ServerConfig) -> None:
    server = apiserver.ApiServer(config)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    await server.start()
    click.echo(f"serving {server.url}; kubeconfig {server.kubeconfig_path}")
    await stop.wait()
    await server.stop()


_STATE_DIR = click.option(
    "--state-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Cluster state (default: $TRAINOP_HOME or ~/.local/share/trainop/local).",
)


@local.command("up")
@_STATE_DIR
@click.option("--port", default=0, show_default=True, help="API server port on 127.0.0.1 (0: any).")
def up_command(state_dir: Path | None, port: int) -> None:
    """Start a persistent local cluster in the background."""
    directory = state_dir or daemon.default_state_dir()
    try:
        current = daemon.up(directory, port=port)
    except TrainopError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"local cluster running (pid {current.pid})")
    click.echo(f"export KUBECONFIG={current.kubeconfig}")


@local.command("down")
@_STATE_DIR
def down_command(state_dir: Path | None) -> None:
    """Stop the background local cluster (its state is kept)."""
    directory = state_dir or daemon.default_state_dir()
    click.echo("local cluster stopped" if daemon.down(directory) else "no local cluster running")


@local.command("status")
@_STATE_DIR
def status_command(state_dir: Path | None) -> None:
    """Whether the local cluster runs, and where its kubeconfig is."""
    current = daemon.status(state_dir or daemon.default_state_dir())
    if not current.running:
        click.echo(f"stopped (state in {current.state_dir})")
        sys.exit(3)
    click.echo(f"running (pid {current.pid}); KUBECONFIG={current.kubeconfig}")


@local.command("serve", hidden=True)
@_STATE_DIR
@click.option("--port", default=0)
def serve_command(state_dir: Path | None, port: int) -> None:
    """Run the local cluster in the foreground (what ``up`` starts)."""
    directory = state_dir or daemon.default_state_dir()
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    asyncio.run(_serve_cluster(directory, port))


async def _serve_cluster(state_dir: Path, port: int) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    config = ClusterConfig(state_dir=state_dir, port=port)
    async with process_cluster(config, working_dir=state_dir):
        daemon.mark_ready(state_dir)
        try:
            await stop.wait()
        finally:
            daemon.clear_ready(state_dir)
