"""``trainop submit | get | wait | delete | suspend | resume``: jobs on a cluster, via the SDK.

Trainer v2's ``trainjob`` kind (and TrainJob/runtime documents given to ``submit``) is handed
to ``cli/trainjobs.py``; ``get`` without a kind lists the TrainJobs too, in their own table
after the v1 jobs' (or in the same List with ``-o yaml|json``).

``get`` prints a ``rich`` table (Name, State, Age, Replicas as active/total; ``-o wide`` adds
the kind's replica types and the last condition's message) or the jobs as YAML/JSON.
``wait`` exits 0 when a condition is reached, 1 when the job Failed instead, 124 on timeout.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import yaml
from rich.console import Console
from rich.table import Table

from trainop import errors
from trainop.api import manifest
from trainop.api.kinds import KINDS
from trainop.api.types import Job
from trainop.cli import trainjobs
from trainop.cli.session import age, cluster_command, kind_of
from trainop.controller.trainjob_caches import TRAINJOBS
from trainop.sdk import JobFailedError, TrainingClient, constants

EXIT_INVALID = 2


@click.command("submit")
@click.option(
    "-f",
    "--filename",
    "path",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Job manifest (YAML; several documents allowed).",
)
@cluster_command
def submit(client: TrainingClient, path: Path, namespace: str) -> None:
    """Create the job(s) of a manifest file on the cluster.

    On a ``trainop local`` cluster a namespace the manifest names is created when missing.
    """
    try:
        documents = manifest.parse_documents(path.read_text(encoding="utf-8"), source=str(path))
    except OSError as exc:
        raise click.ClickException(f"{path}: {exc.strerror}") from exc
    for document in documents:
        if trainjobs.is_trainer(document):  # Trainer v2: a TrainJob or a runtime
            click.echo(trainjobs.submit(client, document, namespace))
            continue
        document.setdefault("metadata", {}).setdefault("namespace", namespace)
        wanted = str(document["metadata"]["namespace"])
        if client.is_local and client.ensure_namespace(wanted):
            click.echo(f"namespace/{wanted} created")
        try:
            job = client.create_job(document)
        except errors.InvalidJobError as exc:
            for problem in exc.errors:
                click.echo(f"{path}: {problem}", err=True)
            raise SystemExit(EXIT_INVALID) from exc
        click.echo(f"{job.kind.lower()}/{job.metadata.name} created")


@click.command("get")
@click.argument("kind", required=False)
@click.argument("name", required=False)
@click.option("-o", "--output", type=click.Choice(["wide", "yaml", "json"]), default=None)
@cluster_command
def get(
    client: TrainingClient, kind: str | None, name: str | None, output: str | None, namespace: str
) -> None:
    """List jobs (of KIND, or of every kubeflow.org/v1 kind and TrainJobs), or show job NAME."""
    if trainjobs.is_trainjob(kind):
        trainjobs.get(client, name, output, namespace)
        return
    infos = [kind_of(kind)] if kind else list(KINDS)
    if name:
        jobs = [client.get_job(name, namespace, infos[0].kind)]
    else:
        jobs = [job for info in infos for job in client.list_jobs(namespace, info.kind)]
    v2 = every_trainjob(client, namespace) if not kind and not name else []
    if output in ("yaml", "json"):
        dumped = [manifest.dump_job(job) for job in jobs] + v2
        body: Any = dumped[0] if name else {"apiVersion": "v1", "kind": "List", "items": dumped}
        text = (
            yaml.safe_dump(body, sort_keys=False)
            if output == "yaml"
            else json.dumps(body, indent=2)
        )
        click.echo(text.rstrip("\n"))
        return
    console = Console(highlight=False)
    if jobs or not v2:
        console.print(job_table(jobs, wide=output == "wide", kinds=not kind))
    if v2:  # Trainer v2's own table after the v1 kinds', as kubectl prints one per kind
        if jobs:
            console.print()
        console.print(trainjobs.table(v2, wide=output == "wide"))


def every_trainjob(client: TrainingClient, namespace: str) -> list[dict[str, Any]]:
    """The namespace's TrainJobs; none where the cluster does not serve the kind."""
    try:
        return list(client.call(client.http.list(TRAINJOBS, namespace=namespace)).items)
    except errors.NotFoundError:
        return []


def job_table(jobs: list[Job], *, wide: bool, kinds: bool) -> Table | str:
    if not jobs:
        return "No jobs found."
    table = Table(box=None, header_style="bold", pad_edge=False)
    columns = (["Kind"] if kinds else []) + ["Name", "State", "Age", "Replicas"]
    for column in columns + (["Types", "Message"] if wide else []):
        table.add_column(column)
    for job in jobs:
        row = ([job.kind] if kinds else []) + [
            job.metadata.name or "",
            state(job),
            age(job.metadata.creation_timestamp),
            replicas(job),
        ]
        if wide:
            types = ",".join(f"{t}={s.replicas}" for t, s in job.spec.replica_specs.items())
            conditions = job.status.conditions if job.status and job.status.conditions else []
            row += [types, conditions[-1].message or "" if conditions else ""]
        table.add_row(*row)
    return table


def state(job: Job) -> str:
    """The last condition's type (the CRD's State column); ``Pending`` before any."""
    conditions = job.status.conditions if job.status and job.status.conditions else []
    return conditions[-1].type if conditions else "Pending"


def replicas(job: Job) -> str:
    """``active/total`` pods over every replica type."""
    total = sum(spec.replicas or 0 for spec in job.spec.replica_specs.values())
    statuses = (job.status.replica_statuses if job.status else None) or {}
    active = sum(status.active or 0 for status in statuses.values())
    return f"{active}/{total}"


@click.command("wait")
@click.argument("kind")
@click.argument("name")
@click.option(
    "--for",
    "conditions",
    multiple=True,
    default=[constants.JOB_CONDITION_SUCCEEDED],
    show_default=True,
    type=click.Choice(sorted(constants.JOB_CONDITIONS | set(trainjobs.WAIT_CONDITIONS))),
    help="Condition to wait for (repeat: any of them). TrainJob: Complete (Succeeded means "
    "it too), Failed, Suspended.",
)
@click.option("--timeout", type=float, default=600, show_default=True, help="Seconds (exit 124).")
@cluster_command
def wait(
    client: TrainingClient,
    kind: str,
    name: str,
    conditions: tuple[str, ...],
    timeout: float,
    namespace: str,
) -> None:
    """Wait until job NAME has one of the conditions (exit 1 if it Fails instead)."""
    if trainjobs.is_trainjob(kind):
        complete = {constants.JOB_CONDITION_SUCCEEDED: "Complete"}
        wanted = tuple(dict.fromkeys(complete.get(x, x) for x in conditions))
        trainjobs.wait(client, name, wanted, timeout, namespace)
        return
    info = kind_of(kind)
    try:
        job = client.wait_for_job_conditions(
            name, namespace, info.kind, set(conditions), wait_timeout=timeout, polling_interval=5
        )
    except JobFailedError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"{info.singular}/{name} {state(job)}")


@click.command("delete")
@click.argument("kind")
@click.argument("name")
@cluster_command
def delete(client: TrainingClient, kind: str, name: str, namespace: str) -> None:
    """Delete job NAME (its pods and services go with it)."""
    if trainjobs.is_trainjob(kind):
        trainjobs.delete(client, name, namespace)
        return
    info = kind_of(kind)
    client.delete_job(name, namespace, info.kind, {"propagationPolicy": "Foreground"})
    click.echo(f"{info.singular}/{name} deleted")


@click.command("suspend")
@click.argument("kind")
@click.argument("name")
@cluster_command
def suspend(client: TrainingClient, kind: str, name: str, namespace: str) -> None:
    """Suspend job NAME: its pods are deleted, the job kept (runPolicy.suspend)."""
    info = kind_of(kind)
    client.suspend_job(name, namespace, info.kind)
    click.echo(f"{info.singular}/{name} suspended")


@click.command("resume")
@click.argument("kind")
@click.argument("name")
@cluster_command
def resume(client: TrainingClient, kind: str, name: str, namespace: str) -> None:
    """Resume suspended job NAME: its pods are created again."""
    info = kind_of(kind)
    client.resume_job(name, namespace, info.kind)
    click.echo(f"{info.singular}/{name} resumed")
