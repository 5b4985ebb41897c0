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
import sys
from collections.abc import Callable
from pathlib import Path

import click

from trainop.cli import eventloop, signals
from trainop.cli.limits import limit_options, serve_args
from trainop.cluster import apiserver, privacy
from trainop.controller.manager import ManagerOptions
from trainop.engine import quantities
from trainop.engine.plan import EngineOptions
from trainop.errors import TrainopError
from trainop.local import daemon, runtimes
from trainop.local.session import ClusterConfig, NodeResources, machine_cluster


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
@click.option(
    "--insecure-http",
    is_flag=True,
    help="Serve plain HTTP instead of HTTPS (loopback only; clients that need TLS to send the "
    "token, kubectl among them, then get 401).",
)
@click.option(
    "--event-ttl",
    default="1h",
    show_default=True,
    help="How long an Event is kept after its last write (kube-apiserver's flag; e.g. 30m, "
    "90s). Events are not fsynced: a crash may lose them.",
)
@limit_options
def apiserver_command(
    state_dir: Path,
    port: int,
    kubeconfig: Path | None,
    insecure_http: bool,
    event_ttl: str,
    limits: apiserver.Limits,
) -> None:
    """Serve the embedded Kubernetes API on 127.0.0.1 until interrupted."""
    config = apiserver.ServerConfig(
        state_dir=state_dir,
        port=port,
        kubeconfig=kubeconfig,
        limits=limits,
        insecure_http=insecure_http,
        event_ttl=_duration(event_ttl, "--event-ttl"),
    )
    eventloop.run(_serve(config))


def _duration(text: str, flag: str) -> float:
    """Seconds from a Go-style duration (``1h``, ``30m``, ``90s``, ``1h30m``; a bare number
    is seconds)."""
    units = {"h": 3600.0, "m": 60.0, "s": 1.0}
    total, number = 0.0, ""
    try:
        for char in text.strip():
            if char in units:
                total, number = total + float(number) * units[char], ""
            else:
                number += char
        total += float(number) if number else 0.0
    except ValueError:
        total = -1.0
    if total <= 0:
        raise click.BadParameter(f"not a positive duration: {text!r}", param_hint=flag)
    return total


async def _serve(config: apiserver.ServerConfig) -> None:
    server = apiserver.ApiServer(config)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in signals.HANDLED:
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


def _node_options(command: Callable[..., None]) -> Callable[..., None]:
    """``--workdir``, ``--cpus``, ``--memory``, ``--gpus`` and ``--gang-scheduler-name``."""
    options = [
        click.option(
            "--workdir",
            type=click.Path(file_okay=False, exists=True, path_type=Path),
            default=None,
            help="Where pods without workingDir start (default: the current directory).",
        ),
        click.option("--cpus", type=float, default=None, help="CPUs the node offers pods."),
        click.option("--memory", default=None, help="Memory the node offers pods, e.g. 16Gi."),
        click.option("--gpus", type=int, default=None, help="nvidia.com/gpu the node offers."),
        click.option(
            "--gang-scheduler-name",
            default="",
            help="volcano or scheduler-plugins: gang-schedule jobs with PodGroups (default: off).",
        ),
        click.option(
            "--runtime",
            type=click.Choice(runtimes.CHOICES),
            default="process",
            show_default=True,
            help=(
                "Containers as host processes, Podman or Docker containers (auto: podman if "
                "it works, else docker)."
            ),
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


_NO_OPERATOR = click.option(
    "--no-operator",
    is_flag=True,
    help="Run no embedded operator: jobs wait for one started elsewhere against this cluster's "
    "kubeconfig (`trainop operator`, the operator image).",
)


def _memory_bytes(text: str | None) -> int | None:
    if text is None:
        return None
    amount = quantities.parse(text).amount
    if amount <= 0:
        raise click.BadParameter(f"not a memory quantity: {text!r}", param_hint="--memory")
    return int(amount)


@local.command("up")
@_STATE_DIR
@click.option("--port", default=0, show_default=True, help="API server port on 127.0.0.1 (0: any).")
@_node_options
@_NO_OPERATOR
@limit_options
def up_command(
    state_dir: Path | None,
    port: int,
    workdir: Path | None,
    cpus: float | None,
    memory: str | None,
    gpus: int | None,
    gang_scheduler_name: str,
    runtime: str,
    no_operator: bool,
    limits: apiserver.Limits,
) -> None:
    """Start a persistent local cluster in the background.

    Pods without a workingDir start in the directory ``up`` runs in (or ``--workdir``), as
    under ``trainop run``; pods bind only when the node's CPUs, memory and GPUs (the
    machine's, or these flags') cover their requests. With ``--no-operator`` the cluster
    runs no operator of its own, for one run elsewhere (``trainop operator``, its image)."""
    directory = state_dir or daemon.default_state_dir()
    _memory_bytes(memory)
    args = ["--workdir", str((workdir or Path.cwd()).resolve())]
    for flag, value in (("--cpus", cpus), ("--memory", memory), ("--gpus", gpus)):
        if value is not None:
            args += [flag, str(value)]
    if gang_scheduler_name:
        args += ["--gang-scheduler-name", gang_scheduler_name]
    if runtime != "process":
        args += ["--runtime", runtime]
    if no_operator:
        args += ["--no-operator"]
    args += serve_args(limits)
    try:
        with signals.terminating():
            current = daemon.up(directory, port=port, serve_args=args)
    except TrainopError as exc:
        raise click.ClickException(str(exc)) from exc
    except KeyboardInterrupt:
        click.echo("interrupted: the local cluster was not started", err=True)
        sys.exit(signals.EXIT_INTERRUPTED)
    except signals.Terminated:
        click.echo("terminated: the local cluster was not started", err=True)
        sys.exit(signals.EXIT_TERMINATED)
    click.echo(f"local cluster running (pid {current.pid})")
    if no_operator:
        click.echo("no embedded operator: jobs wait for an operator run against this KUBECONFIG")
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
@_node_options
@_NO_OPERATOR
@limit_options
def serve_command(
    state_dir: Path | None,
    port: int,
    workdir: Path | None,
    cpus: float | None,
    memory: str | None,
    gpus: int | None,
    gang_scheduler_name: str,
    runtime: str,
    no_operator: bool,
    limits: apiserver.Limits,
) -> None:
    """Run the local cluster in the foreground (what ``up`` starts)."""
    directory = state_dir or daemon.default_state_dir()
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    node = NodeResources(cpus=cpus, memory=_memory_bytes(memory), gpus=gpus)
    working_dir = (workdir or Path.cwd()).resolve()
    manager = ManagerOptions(engine=EngineOptions(gang_scheduler_name=gang_scheduler_name))
    config = ClusterConfig(
        state_dir=directory, port=port, manager=manager, limits=limits, operator=not no_operator
    )
    try:
        privacy.private_state_dir(directory)
        daemon.hold_lock(directory)  # the descriptor stays open, and locked, until we exit
    except (TrainopError, OSError) as exc:
        raise click.ClickException(f"the local cluster did not start: {exc}") from exc
    try:
        code = asyncio.run(_serve_cluster(config, working_dir, node, runtime))
    except (TrainopError, OSError) as exc:
        raise click.ClickException(f"the local cluster stopped: {exc}") from exc
    sys.exit(code)


async def _serve_cluster(
    config: ClusterConfig, working_dir: Path, node: NodeResources, runtime: str = "process"
) -> int:
    """Serve until SIGINT/SIGTERM; the exit code says which one (130/143)."""
    stop = signals.StopSignals()
    stop.install()
    state_dir = config.state_dir
    logging.getLogger(__name__).info("pods without workingDir start in %s", working_dir)
    choice = await runtimes.choose(runtime, state_dir=state_dir, keep=True)  # note 120
    logging.getLogger(__name__).info("%s", choice.line)
    if not config.operator:
        logging.getLogger(__name__).info("no embedded operator (--no-operator)")
    cluster = machine_cluster(
        config,
        working_dir=working_dir,
        resources=node,
        container_runtime=choice.runtime,
        keep_containers=True,  # a crash of the daemon spares its pods (note 120)
    )
    try:
        async with cluster:
            daemon.mark_ready(state_dir)
            await asyncio.Event().wait()
    except asyncio.CancelledError:
        if stop.exit_code is None:
            raise
    finally:
        daemon.clear_ready(state_dir)
    logging.getLogger(__name__).info("stopped by signal %s", stop.received)
    return stop.exit_code or 0
