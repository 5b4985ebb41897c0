"""``trainop describe KIND NAME``: a job's conditions, replicas, events, and what holds it up.

Replica rows come from the pods: phase, restarts, and the exit code and reason of the last
container that ended (this instance's, else the previous one's). ``diagnose`` explains a job
that is not progressing from the same data: suspended, waiting for its pod group, pods pending,
a replica restarting (with the backoff count against ``runPolicy.backoffLimit``), or, for a
Failed job, the replica, exit code and reason that failed it.
"""

from __future__ import annotations

from typing import Any

import click
from rich.console import Console
from rich.table import Table

from trainop.api.types import Job
from trainop.cli import trainjob_describe, trainjobs
from trainop.cli.jobs import replicas, state
from trainop.cli.session import age, cluster_command, kind_of
from trainop.kube.client import Obj
from trainop.sdk import TrainingClient, constants

# The width of describe's output when it is not a terminal: rows are never wrapped (a
# message cut to a terminal's width would lose the runtime's words a script greps for).
UNWRAPPED_WIDTH = 100_000


@click.command("describe")
@click.argument("kind")
@click.argument("name")
@cluster_command
def describe(client: TrainingClient, kind: str, name: str, namespace: str) -> None:
    """Show job NAME in detail and why it is not progressing."""
    if trainjobs.is_trainjob(kind):
        trainjob_describe.describe(client, name, namespace)
        return
    info = kind_of(kind)
    job = client.get_job(name, namespace, info.kind)
    pods = client.get_job_pods(name, namespace)
    events = client.get_job_events(name, namespace, info.kind)
    podgroup = client.get_job_podgroup(name, namespace)
    console = Console(highlight=False, soft_wrap=True)
    if not console.is_terminal:  # piped (grep, a file): one line per row, as kubectl prints
        console.width = UNWRAPPED_WIDTH
    console.print(f"[bold]Name:[/]      {name}\n[bold]Kind:[/]      {info.kind}")
    console.print(f"[bold]Namespace:[/] {namespace}\n[bold]State:[/]     {state(job)}")
    console.print(f"[bold]Age:[/]       {age(job.metadata.creation_timestamp)}")
    console.print(f"[bold]Replicas:[/]  {replicas(job)} active")
    console.print("\n[bold]Conditions:[/]", conditions_table(job))
    console.print("\n[bold]Replicas:[/]", replica_table(name, pods))
    console.print("\n[bold]Events:[/]", events_table(events[-15:]))
    console.print("\n[bold]Diagnosis:[/]")
    for line in diagnose(job, pods, podgroup):
        console.print(f"  {line}")


def conditions_table(job: Job) -> Table | str:
    conditions = job.status.conditions if job.status and job.status.conditions else []
    if not conditions:
        return "none yet"
    table = Table("Type", "Status", "Reason", "Message", box=None, pad_edge=False)
    table.columns[-1].overflow = "fold"  # on a terminal: wrapped, never cut to an ellipsis
    for condition in conditions:
        table.add_row(condition.type, condition.status, condition.reason or "", condition.message)
    return table


def replica_table(name: str, pods: list[Obj]) -> Table | str:
    if not pods:
        return "no pods"
    table = Table("Replica", "Phase", "Restarts", "Exit code", "Reason", box=None, pad_edge=False)
    for pod in pods:
        status = pod.get("status") or {}
        ended = last_termination(pod) or {}
        code = ended.get("exitCode")
        table.add_row(
            pod["metadata"]["name"].removeprefix(f"{name}-"),
            status.get("phase", "?"),
            str(restart_count(pod)),
            "" if code is None else str(code),
            ended.get("reason") or waiting_reason(pod) or "",
        )
    return table


def events_table(events: list[Obj]) -> Table | str:
    if not events:
        return "none"
    table = Table("Type", "Reason", "Object", "Message", box=None, pad_edge=False)
    table.columns[-1].overflow = "fold"  # on a terminal: wrapped, never cut to an ellipsis
    for event in events:
        involved = event.get("involvedObject") or {}
        table.add_row(
            event.get("type", ""),
            event.get("reason", ""),
            f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}",
            event.get("message", ""),
        )
    return table


def diagnose(job: Job, pods: list[Obj], podgroup: Obj | None) -> list[str]:
    """Sentences on why the job is where it is."""
    name = job.metadata.name or ""
    true = {
        c.type for c in (job.status.conditions if job.status else None) or [] if c.status == "True"
    }
    if constants.JOB_CONDITION_SUCCEEDED in true:
        return ["the job succeeded"]
    if constants.JOB_CONDITION_FAILED in true:
        return [failure(name, pods)]
    if job.run_policy.suspend:
        return ["the job is suspended (runPolicy.suspend); `trainop resume` restarts it"]
    found = _waiting_for_group(podgroup) + _pending(name, pods) + _restarting(job, name, pods)
    return found or ["nothing holds the job up: its pods are running"]


def failure(name: str, pods: list[Obj]) -> str:
    failed = [(pod, last_termination(pod)) for pod in pods]
    ended = [(pod, t) for pod, t in failed if t and t.get("exitCode", 0) != 0]
    if not ended:
        return "the job failed; no failed container is left to inspect"
    pod, termination = min(ended, key=lambda item: str(item[1].get("finishedAt") or ""))
    replica = pod["metadata"]["name"].removeprefix(f"{name}-")
    return (
        f"the job failed: replica {replica} exited with code {termination['exitCode']} "
        f"({termination.get('reason') or 'Error'})"
    )


def _waiting_for_group(podgroup: Obj | None) -> list[str]:
    if podgroup is None:
        return []
    phase = (podgroup.get("status") or {}).get("phase", "")
    if phase in ("Running", "Completed"):
        return []
    spec = podgroup.get("spec") or {}
    return [
        f"waiting for pod group {podgroup['metadata']['name']} to be scheduled "
        f"(minMember {spec.get('minMember', '?')}, phase {phase or 'Pending'})"
    ]


def _pending(name: str, pods: list[Obj]) -> list[str]:
    found = []
    for pod in pods:
        if (pod.get("status") or {}).get("phase") == constants.POD_PHASE_PENDING:
            why = waiting_reason(pod) or "not started yet"
            found.append(
                f"replica {pod['metadata']['name'].removeprefix(name + '-')} pending: {why}"
            )
    return found


def _restarting(job: Job, name: str, pods: list[Obj]) -> list[str]:
    conditions = (job.status.conditions if job.status else None) or []
    if not any(
        c.type == constants.JOB_CONDITION_RESTARTING and c.status == "True" for c in conditions
    ):
        return []
    restarted = [p for p in pods if restart_count(p) > 0] or pods
    names = ", ".join(p["metadata"]["name"].removeprefix(f"{name}-") for p in restarted)
    done = (job.status.restarts if job.status else None) or sum(map(restart_count, pods))
    limit = job.run_policy.backoff_limit
    budget = f"{done}/{limit}" if limit is not None else f"{done} (no backoffLimit)"
    return [f"restarting replica(s) {names}; restarts so far {budget}"]


def restart_count(pod: Obj) -> int:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return sum(int(s.get("restartCount") or 0) for s in statuses)


def last_termination(pod: Obj) -> dict[str, Any] | None:
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        for state_of in (status.get("state") or {}, status.get("lastState") or {}):
            if state_of.get("terminated"):
                ended: dict[str, Any] = state_of["terminated"]
                return ended
    return None


def waiting_reason(pod: Obj) -> str:
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        waiting = (status.get("state") or {}).get("waiting") or {}
        if waiting.get("reason"):
            return str(waiting["reason"])
    conditions = (pod.get("status") or {}).get("conditions") or []
    return next((str(c.get("reason")) for c in conditions if c.get("reason")), "")
