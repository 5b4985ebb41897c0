"""``trainop local ...``: single-machine commands; ``apiserver`` runs the embedded API server.

``trainop local apiserver --state-dir DIR`` serves until interrupted (SIGINT/SIGTERM), keeping
its objects in ``DIR/store.db`` and writing a kubeconfig (``DIR/kubeconfig`` unless
``--kubeconfig``) that any Kubernetes client can use. The kubeconfig is written only once the
server accepts connections, so its appearance means "ready".
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from pathlib import Path

import click

from trainop.local import apiserver


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
