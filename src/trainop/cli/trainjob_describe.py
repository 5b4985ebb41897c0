"""``trainop describe trainjob NAME``: which runtime, which JobSet, and why it is not progressing.

Shown: the TrainJob's state and age; its runtime (``runtimeRef``), whether the runtime snapshot
pins it (``<tj>-runtime-snapshot``, spec 2.3) and whether the live runtime still exists; its
JobSet (absent, or suspended/running with its last condition) and pods; the conditions, the
jobs of ``status.jobsStatus`` and the TrainJob's Events. ``diagnose`` explains, from the same
reads, why a TrainJob is not progressing: finished (and why), managed by another controller,
suspended, a runtime that cannot be used, objects the operator cannot create (its
``TrainJobResourcesCreationFailed`` events), no JobSet yet (is the operator running TrainJobs?),
a JobSet with no pods (is a JobSet controller running?), pods pending.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.console import Console
from rich.table import Table

from trainop import errors
from trainop.api.trainer import constants as c
from trainop.cli import trainjobs
from trainop.cli.session import age
from trainop.controller.trainjob_caches import JOBSETS, RUNTIME_RESOURCES
from trainop.kube.client import Obj
from trainop.kube.resources import CONFIGMAPS, EVENTS, Resource
from trainop.sdk import TrainingClient

UNWRAPPED_WIDTH = 100_000  # as ``describe`` for v1 jobs: rows never wrapped when piped


@dataclass(frozen=True, slots=True)
class Seen:
    """Everything ``describe`` read about one TrainJob."""

    trainjob: Obj
    runtime: Obj | None = None
    snapshot: Obj | None = None
    jobset: Obj | None = None
    pods: list[Obj] = field(default_factory=list)
    events: list[Obj] = field(default_factory=list)


def describe(client: TrainingClient, name: str, namespace: str) -> None:
    seen = observe(client, name, namespace)
    console = Console(highlight=False, soft_wrap=True)
    if not console.is_terminal:
        console.width = UNWRAPPED_WIDTH
    meta = seen.trainjob["metadata"]
    console.print(f"[bold]Name:[/]      {name}\n[bold]Kind:[/]      {c.TRAINJOB}")
    console.print(
        f"[bold]Namespace:[/] {namespace}\n[bold]State:[/]     {trainjobs.state(seen.trainjob)}"
    )
    console.print(f"[bold]Age:[/]       {age(meta.get('creationTimestamp'))}")
    console.print(f"[bold]Runtime:[/]   {runtime_line(seen)}")
    console.print(f"[bold]JobSet:[/]    {jobset_line(seen)}")
    console.print("\n[bold]Conditions:[/]", conditions_table(seen.trainjob))
    console.print("\n[bold]Jobs:[/]", jobs_table(seen.trainjob))
    console.print("\n[bold]Events:[/]", events_table(seen.events[-15:]))
    console.print("\n[bold]Diagnosis:[/]")
    for line in diagnose(seen):
        console.print(f"  {line}", markup=False)


def observe(client: TrainingClient, name: str, namespace: str) -> Seen:
    trainjob = trainjobs.read(client, name, namespace)
    kind, runtime_name = trainjobs.runtime_of(trainjob).split("/", 1)
    resource = RUNTIME_RESOURCES.get(kind)
    runtime = None
    if resource is not None:
        scoped = namespace if resource.namespaced else None
        runtime = _get(client, resource, runtime_name, scoped)
    listing = client.call(client.http.list(EVENTS, namespace=namespace))
    events = [e for e in listing.items
              if (e.get("involvedObject") or {}).get("name") == name
              and (e.get("involvedObject") or {}).get("kind") == c.TRAINJOB]  # fmt: skip
    return Seen(
        trainjob=trainjob,
        runtime=runtime,
        snapshot=_get(client, CONFIGMAPS, f"{name}{c.SNAPSHOT_SUFFIX}", namespace),
        jobset=_get(client, JOBSETS, name, namespace),
        pods=trainjobs.pods(client, name, namespace),
        events=events,
    )


def _get(
    client: TrainingClient, resource: Resource, name: str, namespace: str | None
) -> Obj | None:
    try:
        found: Obj = client.call(client.http.get(resource, name=name, namespace=namespace))
    except errors.NotFoundError:
        return None
    return found


def runtime_line(seen: Seen) -> str:
    ref = trainjobs.runtime_of(seen.trainjob)
    pinned = "pinned by its snapshot" if seen.snapshot is not None else "no snapshot yet"
    live = "exists" if seen.runtime is not None else "does not exist (any more)"
    return f"{ref} ({pinned}; the live runtime {live})"


def jobset_line(seen: Seen) -> str:
    name = seen.trainjob["metadata"]["name"]
    if seen.jobset is None:
        return f"{name}: none"
    suspended = (seen.jobset.get("spec") or {}).get("suspend")
    found = (seen.jobset.get("status") or {}).get("conditions") or []
    last = f", {found[-1].get('type')}={found[-1].get('status')}" if found else ""
    state = "suspended" if suspended else "not suspended"
    return f"{name} ({state}{last}; {len(seen.pods)} pod(s))"


def conditions_table(trainjob: Obj) -> Table | str:
    found = trainjobs.conditions_of(trainjob)
    if not found:
        return "none yet"
    table = Table("Type", "Status", "Reason", "Message", box=None, pad_edge=False)
    table.columns[-1].overflow = "fold"
    for x in found:
        table.add_row(str(x.get("type")), str(x.get("status")), str(x.get("reason", "")),
                      str(x.get("message", "")))  # fmt: skip
    return table


def jobs_table(trainjob: Obj) -> Table | str:
    jobs = (trainjob.get("status") or {}).get("jobsStatus") or []
    if not jobs:
        return "none yet"
    counters = ("active", "ready", "succeeded", "failed", "suspended")
    table = Table("Job", *(name.capitalize() for name in counters), box=None, pad_edge=False)
    for job in jobs:
        table.add_row(str(job.get("name")), *(str(job.get(k, 0)) for k in counters))
    return table


def events_table(events: list[Obj]) -> Table | str:
    if not events:
        return "none"
    table = Table("Type", "Reason", "Message", box=None, pad_edge=False)
    table.columns[-1].overflow = "fold"
    for event in events:
        table.add_row(str(event.get("type", "")), str(event.get("reason", "")),
                      str(event.get("message", "")))  # fmt: skip
    return table


def diagnose(seen: Seen) -> list[str]:
    """Why the TrainJob is where it is (see the module docstring), one line per finding."""
    trainjob = seen.trainjob
    spec = trainjob.get("spec") or {}
    for condition in (c.CONDITION_COMPLETE, c.CONDITION_FAILED):
        if trainjobs.is_true(trainjob, condition):
            return [_finished(trainjob, condition)]
    managed_by = spec.get("managedBy")
    if managed_by not in (None, c.MANAGED_BY_TRAINER):
        return [f"managed by {managed_by}: this operator does not reconcile it"]
    if spec.get("suspend"):
        return ["suspended (spec.suspend: true): nothing runs until it is resumed"]
    failures = [e for e in seen.events if e.get("reason") == c.EVENT_REASON_CREATION_FAILED]
    if failures:
        return [f"the operator cannot create its objects: {failures[-1].get('message', '')}"]
    if seen.jobset is None:
        return [
            "no JobSet yet: is an operator running TrainJobs (trainop operator --enable-scheme "
            f"trainjob) and is the JobSet CRD {c.JOBSET_CRD_NAME} installed?"
        ]
    return _progress(seen)


def _finished(trainjob: Obj, condition: str) -> str:
    found = next(x for x in trainjobs.conditions_of(trainjob)
                 if x.get("type") == condition and x.get("status") == "True")  # fmt: skip
    line = f"{condition} ({found.get('reason', '')}): {found.get('message', '')}"
    if found.get("reason") == c.REASON_RUNTIME_NOT_SUPPORTED:
        line += " — create a TrainJob naming a runtime that exists (Failed is final)"
    return line


def _progress(seen: Seen) -> list[str]:
    if not seen.pods:
        return [
            f"JobSet {seen.trainjob['metadata']['name']} has no pods: is a JobSet controller "
            "running on this cluster?"
        ]
    phases = [str((p.get("status") or {}).get("phase") or "Pending") for p in seen.pods]
    pending = phases.count("Pending")
    if pending:
        return [f"{pending} of {len(phases)} pod(s) Pending (scheduling, images, volumes)"]
    return [f"running: {phases.count('Running')} of {len(phases)} pod(s) Running"]
