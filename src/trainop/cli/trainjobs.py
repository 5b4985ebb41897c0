"""The job verbs for Trainer v2's TrainJob: ``trainop get|wait|delete|logs trainjob`` and
``trainop submit`` of TrainJobs and runtimes (``describe``: ``cli/trainjob_describe.py``).

The v1 verbs (``cli/jobs.py``, ``cli/logs.py``) hand a ``trainjob`` kind here. TrainJobs are
read and written as plain objects through the SDK client's HTTP client (``TrainingClient.http``
driven by ``call``): the SDK models kubeflow.org/v1 jobs only. What is shown:

- ``get``: Name, State (the last condition's type, the CRD's ``State`` column; ``Pending``
  before any), Age, Runtime (``<Kind>/<name>``); ``-o wide`` adds the JobSet's jobs
  (``jobsStatus``: ``name=active/succeeded/failed``) and the last condition's message;
  ``-o yaml|json`` the objects;
- ``wait``: polls until one of the wanted conditions is true (default ``Complete``); exit 1 when
  the TrainJob Failed instead, 124 on timeout, as ``wait`` for v1 jobs;
- ``logs``: the pods of the TrainJob's JobSet (label ``jobset.sigs.k8s.io/jobset-name``), their
  lines as they arrive, each prefixed with the pod's step (``node-0-0``); ``--replica node``
  keeps one job's pods, ``node-0-1`` one pod; ``-f`` follows until every container ended;
- ``delete``: foreground, so the JobSet and its pods go first.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import click
import yaml
from rich.console import Console
from rich.table import Table

from trainop import errors
from trainop.api.trainer import constants as c
from trainop.cli.session import age
from trainop.controller.trainjob_caches import (
    CLUSTER_TRAINING_RUNTIMES,
    TRAINING_RUNTIMES,
    TRAINJOBS,
)
from trainop.kube.client import Obj
from trainop.kube.resources import PODS
from trainop.sdk import TrainingClient, WaitTimeoutError

NAMES = ("trainjob", "trainjobs")
WAIT_CONDITIONS = (c.CONDITION_COMPLETE, c.CONDITION_FAILED, c.CONDITION_SUSPENDED)
POLL_SECONDS = 2.0
KINDS = {
    c.TRAINJOB: TRAINJOBS,
    c.TRAINING_RUNTIME: TRAINING_RUNTIMES,
    c.CLUSTER_TRAINING_RUNTIME: CLUSTER_TRAINING_RUNTIMES,
}


def is_trainjob(kind: str | None) -> bool:
    """Whether the kind named on the command line is TrainJob (any case, plural too)."""
    return kind is not None and kind.lower() in NAMES


def is_trainer(document: Obj) -> bool:
    return document.get("apiVersion") == c.API_VERSION and document.get("kind") in KINDS


def submit(client: TrainingClient, document: Obj, namespace: str) -> str:
    """Create one TrainJob or runtime; its ``kind/name`` as ``submit`` prints it."""
    resource = KINDS[str(document["kind"])]
    meta = document.setdefault("metadata", {})
    scoped = namespace if resource.namespaced else None
    if resource.namespaced:
        meta.setdefault("namespace", namespace)
        scoped = str(meta["namespace"])
    created = client.call(client.http.create(resource, document, namespace=scoped))
    return f"{resource.kind.lower()}/{created['metadata']['name']} created"


def read(client: TrainingClient, name: str, namespace: str) -> Obj:
    found: Obj = client.call(client.http.get(TRAINJOBS, name=name, namespace=namespace))
    return found


def conditions_of(trainjob: Obj) -> list[dict[str, Any]]:
    return list((trainjob.get("status") or {}).get("conditions") or [])


def state(trainjob: Obj) -> str:
    found = conditions_of(trainjob)
    return str(found[-1].get("type")) if found else "Pending"


def runtime_of(trainjob: Obj) -> str:
    ref = (trainjob.get("spec") or {}).get("runtimeRef") or {}
    return f"{ref.get('kind') or c.CLUSTER_TRAINING_RUNTIME}/{ref.get('name', '?')}"


def get(client: TrainingClient, name: str | None, output: str | None, namespace: str) -> None:
    if name:
        found = [read(client, name, namespace)]
    else:
        found = client.call(client.http.list(TRAINJOBS, namespace=namespace)).items
    if output in ("yaml", "json"):
        body: Any = found[0] if name else {"apiVersion": "v1", "kind": "List", "items": found}
        text = (
            yaml.safe_dump(body, sort_keys=False)
            if output == "yaml"
            else json.dumps(body, indent=2)
        )
        click.echo(text.rstrip("\n"))
        return
    Console(highlight=False).print(table(found, wide=output == "wide"))


def table(trainjobs: list[Obj], *, wide: bool) -> Table | str:
    if not trainjobs:
        return "No TrainJobs found."
    out = Table(box=None, header_style="bold", pad_edge=False)
    for column in ["Name", "State", "Age", "Runtime"] + (["Jobs", "Message"] if wide else []):
        out.add_column(column)
    for trainjob in trainjobs:
        meta = trainjob["metadata"]
        row = [meta["name"], state(trainjob), age(meta.get("creationTimestamp")),
               runtime_of(trainjob)]  # fmt: skip
        if wide:
            found = conditions_of(trainjob)
            row += [jobs_summary(trainjob), str(found[-1].get("message", "")) if found else ""]
        out.add_row(*row)
    return out


def jobs_summary(trainjob: Obj) -> str:
    """``name=active/succeeded/failed`` per job of ``status.jobsStatus``."""
    jobs = (trainjob.get("status") or {}).get("jobsStatus") or []
    return ",".join(
        f"{j.get('name')}={j.get('active', 0)}/{j.get('succeeded', 0)}/{j.get('failed', 0)}"
        for j in jobs
    )


def is_true(trainjob: Obj, condition: str) -> bool:
    return any(x.get("type") == condition and x.get("status") == "True"
               for x in conditions_of(trainjob))  # fmt: skip


def wait(
    client: TrainingClient, name: str, wanted: tuple[str, ...], timeout: float, namespace: str
) -> None:
    """Poll until one of ``wanted`` is true; see the module docstring for the exits."""
    deadline = time.monotonic() + timeout
    while True:
        trainjob = read(client, name, namespace)
        if any(is_true(trainjob, condition) for condition in wanted):
            click.echo(f"trainjob/{name} {state(trainjob)}")
            return
        if is_true(trainjob, c.CONDITION_FAILED):
            message = next(x.get("message", "") for x in conditions_of(trainjob)
                           if x.get("type") == c.CONDITION_FAILED)  # fmt: skip
            raise click.ClickException(f"TrainJob {namespace}/{name} Failed: {message}")
        if time.monotonic() >= deadline:
            raise WaitTimeoutError(
                f"Timeout waiting for TrainJob {namespace}/{name} to reach conditions "
                f"{sorted(wanted)} ({timeout:g}s)"
            )
        time.sleep(min(POLL_SECONDS, max(0.0, deadline - time.monotonic())))


def delete(client: TrainingClient, name: str, namespace: str) -> None:
    client.call(
        client.http.delete(
            TRAINJOBS, name=name, namespace=namespace, propagation_policy="Foreground"
        )
    )
    click.echo(f"trainjob/{name} deleted")


def pods(client: TrainingClient, name: str, namespace: str) -> list[Obj]:
    """The pods of the TrainJob's JobSet, by name."""
    selector = f"{c.JOBSET_NAME_LABEL}={name}"
    listing = client.call(client.http.list(PODS, namespace=namespace, label_selector=selector))
    return sorted(listing.items, key=lambda p: str(p["metadata"]["name"]))


def logs(
    client: TrainingClient,
    name: str,
    *,
    follow: bool,
    replica: str | None,
    container: str | None,
    namespace: str,
) -> None:
    """Print the logs of the TrainJob's pods as they arrive, each line prefixed with the pod's
    step; with ``follow``, until every pod's container has ended."""
    found = [str(p["metadata"]["name"]) for p in pods(client, name, namespace)
             if _is_replica(p, name, replica)]  # fmt: skip
    if not found:
        raise errors.NotFoundError(f"TrainJob {namespace}/{name} has no pods (yet)", status=404)
    console = Console(highlight=False, soft_wrap=True)
    streams = [
        (pod.removeprefix(f"{name}-"),
         client.http.stream_log(name=pod, namespace=namespace, follow=follow,
                                container=container or c.NODE))
        for pod in found
    ]  # fmt: skip
    for label, line in client.iterate(_merged(streams)):
        console.print(f"[{label}] {line}", markup=False)


async def _merged(streams: list[tuple[str, AsyncIterator[str]]]) -> AsyncIterator[tuple[str, str]]:
    """The lines of every stream, labelled, in the order they arrive."""
    lines: asyncio.Queue[tuple[str, str] | None] = asyncio.Queue()

    async def pump(label: str, stream: AsyncIterator[str]) -> None:
        try:
            async for line in stream:
                await lines.put((label, line))
        finally:
            await lines.put(None)

    tasks = [asyncio.create_task(pump(label, stream)) for label, stream in streams]
    try:
        ended = 0
        while ended < len(tasks):
            item = await lines.get()
            if item is None:
                ended += 1
                continue
            yield item
        for task in tasks:
            task.result()  # a stream's error, if one failed
    finally:
        for task in tasks:
            task.cancel()


def _is_replica(pod: Obj, name: str, replica: str | None) -> bool:
    """``--replica node`` (a job of the JobSet) or ``node-0-1`` (one pod's step)."""
    if not replica:
        return True
    step = str(pod["metadata"]["name"]).removeprefix(f"{name}-")
    return step == replica or step.startswith(f"{replica}-")
