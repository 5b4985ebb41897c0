"""``trainop run JOB.yaml``: run one job on this machine and follow it like docker compose.

Starts a local cluster (embedded API server + the controller + a kubelet) in this
process, submits the job, prints condition changes and the replicas' logs with coloured
``[worker-1]`` prefixes, and exits 0 when the job Succeeded, 1 when it Failed (naming the
replica, exit code and reason), 2 for an invalid manifest, 124 on ``--timeout``. Ctrl-C or
SIGTERM (also to the whole process group) deletes the job and stops every process before
exiting 130 or 143 (``cli.signals``; docs/cli.md). A TrainJob manifest (with its runtimes, or
naming a shipped one) runs the same way (``cli.run_trainjob``, note 133); ``-`` reads stdin.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import sys
import tempfile
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.text import Text

from trainop import errors
from trainop.api import manifest, mpi_v2beta1, validation
from trainop.api.kinds import info_of
from trainop.api.types import Job
from trainop.cli import run_trainjob, signals
from trainop.cli.limits import limit_options
from trainop.cli.run_trainjob import TrainJobManifest, trainjob_manifest
from trainop.cluster.apiserver import Limits
from trainop.cluster.apiserver.admission.limits import replica_errors
from trainop.kube.resources import job_resource
from trainop.local import runtimes
from trainop.local.session import ClusterConfig, machine_cluster
from trainop.sdk.follow import ensure_namespace, run_job
from trainop.sdk.reporting import Outcome

_PALETTE = ("cyan", "magenta", "green", "yellow", "blue", "bright_red", "bright_cyan")
EXIT_FAILED, EXIT_INVALID, EXIT_TIMEOUT = 1, 2, 124


class ConsoleReporter:
    """Prints conditions and multiplexed, colour-prefixed log lines."""

    def __init__(self, console: Console, title: str) -> None:
        self._console = console
        self._title = title
        self._colours: dict[str, str] = {}
        self._palette = itertools.cycle(_PALETTE)
        self._width = 8

    def condition(self, condition: dict[str, Any]) -> None:
        mark = "✔" if condition["status"] == "True" else "·"
        line = Text(f"{mark} {self._title} {condition['type']}", style="bold")
        if condition.get("message"):
            line.append(f"  {condition['message']}", style="dim")
        self._console.print(line)

    def log(self, replica: str, line: str) -> None:
        colour = self._colours.setdefault(replica, next(self._palette))
        self._width = max(self._width, len(replica))
        prefix = Text(f"[{replica}]".ljust(self._width + 3), style=colour)
        self._console.print(prefix + Text(line), soft_wrap=True)


@click.command("run")
@click.argument(
    "path", metavar="JOB.yaml", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path)
)
@click.option("--timeout", type=float, default=None, help="Give up after SECONDS (exit 124).")
@click.option(
    "--state-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Keep the session's state here (default: a temporary directory).",
)
@click.option("--keep", is_flag=True, help="Keep the session up after the job ends (Ctrl-C).")
@click.option("-n", "--namespace", default=None, help="Namespace (default: the manifest's).")
@click.option(
    "--runtime",
    type=click.Choice(runtimes.CHOICES),
    default="process",
    show_default=True,
    help="Run containers as host processes, Podman or Docker containers, or pick (auto).",
)
@limit_options
def run(
    path: Path,
    timeout: float | None,
    state_dir: Path | None,
    keep: bool,
    namespace: str | None,
    runtime: str,
    limits: Limits,
) -> None:
    """Run JOB.yaml on this machine with the same controller as a cluster, and follow it."""
    console = Console(highlight=False, soft_wrap=True)
    job, raw = _load(path, namespace=namespace, console=console, limits=limits)
    job_kind = run_kind(job, shared=keep or state_dir is not None)
    with contextlib.ExitStack() as stack:
        if state_dir is None:
            state_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="trainop-")))
        code = asyncio.run(
            _session(
                job,
                raw,
                state_dir,
                timeout=timeout,
                keep=keep,
                console=console,
                limits=limits,
                runtime=runtime,
                job_kind=job_kind,
            )
        )
    sys.exit(code)


def _load(
    path: Path, *, namespace: str | None, console: Console, limits: Limits
) -> tuple[Job | TrainJobManifest, dict[str, Any]]:
    try:
        text = sys.stdin.read() if str(path) == "-" else path.read_text(encoding="utf-8")
        documents = manifest.parse_documents(text, source=str(path))
        trainjob = trainjob_manifest(documents, source=str(path), namespace=namespace)
        if trainjob is not None:
            return trainjob, trainjob.trainjob
        if len(documents) != 1:
            raise errors.ManifestError(
                f"{path}: expected one job, found {len(documents)} documents"
            )
        raw = mpi_v2beta1.as_v1_manifest(documents[0])  # design 100: one CRD, two versions
        if namespace:
            raw.setdefault("metadata", {})["namespace"] = namespace
        job = manifest.load_job(raw, source=str(path))
        ceiling = replica_errors(info_of(job), raw, limits.max_replicas_per_job)
        if ceiling:
            raise errors.InvalidJobError(ceiling, source=str(path))
    except OSError as exc:
        raise click.ClickException(f"{path}: {exc.strerror}") from exc
    except errors.InvalidJobError as exc:
        for error in exc.errors:
            console.print(f"{path}: {error}", style="red", highlight=False)
        sys.exit(EXIT_INVALID)
    except errors.TrainopError as exc:
        console.print(str(exc), style="red")
        sys.exit(EXIT_INVALID)
    for warning in validation.validate(job).warnings:
        console.print(f"warning: {warning}", style="yellow")
    return job, raw


async def _session(
    job: Job | TrainJobManifest,
    raw: dict[str, Any],
    state_dir: Path,
    *,
    timeout: float | None,
    keep: bool,
    console: Console,
    limits: Limits,
    runtime: str = "process",
    job_kind: str = "",
) -> int:
    stop = signals.StopSignals()
    stop.install()
    config = ClusterConfig(state_dir=state_dir, limits=limits, job_kind=job_kind)
    try:
        choice = await runtimes.choose(runtime, state_dir=state_dir, job=raw)
        if runtime != "process":
            console.print(choice.line, style="dim")
        shared = (
            os.environ if choice.runtime is None else getattr(choice.runtime, "default_env", None)
        )
        threads = share_cores(raw, shared) if shared is not None else ""
        cluster_of = machine_cluster(
            config, working_dir=Path.cwd(), container_runtime=choice.runtime
        )
        async with cluster_of as cluster:
            if threads:  # said once the cluster is up: a failed start stays one line
                console.print(threads, style="dim")
            namespace = _namespace(job)
            if await ensure_namespace(cluster.client, namespace):
                console.print(f"namespace/{namespace} created", style="dim")
            reporter = ConsoleReporter(console, _title(job))
            try:
                if isinstance(job, TrainJobManifest):
                    following = run_trainjob.follow(cluster.client, job, reporter=reporter)
                else:
                    following = run_job(cluster.client, job, raw, reporter=reporter)
                outcome = await asyncio.wait_for(following, timeout)
            except TimeoutError:
                console.print(f"✗ {_title(job)}: timed out after {timeout}s", style="bold red")
                await _delete(cluster.client, job)
                return EXIT_TIMEOUT
            except errors.ApiError as exc:
                if not (isinstance(job, TrainJobManifest) and run_trainjob.refused(exc)):
                    raise
                console.print(f"error: {exc}", style="bold red")
                return EXIT_INVALID
            except asyncio.CancelledError:
                if stop.exit_code is None:
                    raise
                console.print(
                    "interrupted: deleting the job and stopping its processes", style="yellow"
                )
                await _delete(cluster.client, job)
                return stop.exit_code
            code = _report(console, _title(job), outcome)
            if keep:
                console.print(f"session kept; KUBECONFIG={cluster.kubeconfig} (Ctrl-C to stop)")
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.Event().wait()
            return code
    except asyncio.CancelledError:  # a signal during start-up or shutdown: nothing to delete
        if stop.exit_code is None:
            raise
        console.print("interrupted: the local cluster stopped", style="yellow")
        return stop.exit_code
    except errors.TrainopError as exc:
        console.print(f"error: {exc}", style="bold red")
        return EXIT_FAILED
    except OSError as exc:  # e.g. no space left for the store: one line, not a traceback
        reason = exc.strerror or str(exc)
        console.print(f"error: the local cluster in {state_dir}: {reason}", style="bold red")
        return EXIT_FAILED


def share_cores(raw: dict[str, Any], environ: MutableMapping[str, str]) -> str:
    """Give the replicas of a multi-replica job that run as host processes the machine's CPUs
    in equal shares of OpenMP threads, as ``torchrun`` does for its workers: each replica's
    ``OMP_NUM_THREADS`` (in ``environ``: the kubelet's base environment, or a container
    runtime's ``default_env``) is the CPU count over the replicas, at least 1 (3 replicas on
    2 CPUs: 1), unless it is set already; a container's own ``env`` still wins. Without it
    every replica's OpenMP pool spans every CPU and three DDP ranks on two CPUs spin against
    each other (~1.8 s of a 6 s run, docs/benchmarks.md). The line to print, "" where
    nothing was set."""
    if "OMP_NUM_THREADS" in environ:
        return ""
    specs = raw.get("spec", {}).get(_replica_specs_field(raw)) or {}
    replicas = sum(_replicas(spec) for spec in specs.values() if isinstance(spec, dict))
    if replicas < 2:
        return ""
    cpus = os.cpu_count() or 1
    environ["OMP_NUM_THREADS"] = str(max(1, cpus // replicas))
    return (
        f"OMP_NUM_THREADS={environ['OMP_NUM_THREADS']} for each of the {replicas} replicas "
        f"({cpus} CPUs; set OMP_NUM_THREADS to choose)"
    )


def run_kind(job: Job | TrainJobManifest, *, shared: bool) -> str:
    """The one kind a session needs (``ClusterConfig.job_kind``): a kubeflow.org/v1 job's
    where nobody else reaches the session (its kubeconfig is in a temporary directory and
    printed only with ``--keep``); "" for every kind where it is ``shared`` (``--keep``, or a
    ``--state-dir`` whose kubeconfig ``kubectl`` may use to create any kind) and for
    TrainJobs (Trainer's CRDs, its runtimes, JobSet)."""
    return "" if shared or isinstance(job, TrainJobManifest) else job.kind


def _replica_specs_field(raw: dict[str, Any]) -> str:
    spec = raw.get("spec")
    if not isinstance(spec, dict):
        return ""
    return next((k for k in spec if k.endswith("ReplicaSpecs")), "")


def _replicas(spec: dict[str, Any]) -> int:
    count = spec.get("replicas", 1)
    return count if isinstance(count, int) and not isinstance(count, bool) else 1


def _title(job: Job | TrainJobManifest) -> str:
    return job.title if isinstance(job, TrainJobManifest) else f"{job.kind}/{job.metadata.name}"


def _namespace(job: Job | TrainJobManifest) -> str:
    return (
        job.namespace if isinstance(job, TrainJobManifest) else job.metadata.namespace or "default"
    )


async def _delete(client: Any, job: Job | TrainJobManifest) -> None:
    if isinstance(job, TrainJobManifest):
        await run_trainjob.delete(client, job)
        return
    with contextlib.suppress(errors.ApiError):
        await client.delete(
            job_resource(info_of(job)),
            name=job.metadata.name or "",
            namespace=job.metadata.namespace or "default",
            propagation_policy="Foreground",
        )


def _report(console: Console, title: str, outcome: Outcome) -> int:
    if outcome.succeeded:
        console.print(f"✔ {title} Succeeded", style="bold green")
        return 0
    detail = ""
    if outcome.replica is not None and outcome.exit_code is not None:
        detail = f": {outcome.replica} exited with code {outcome.exit_code} ({outcome.reason})"
    elif outcome.replica is not None:
        detail = f": {outcome.replica} could not start ({outcome.reason})"
    console.print(f"✗ {title} Failed{detail}", style="bold red")
    if outcome.message:
        console.print(f"  {outcome.message}", style="red")
    return EXIT_FAILED
