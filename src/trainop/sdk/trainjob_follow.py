"""``trainop run`` of a TrainJob: create it (and its runtimes), follow it until it ends (note 133).

A TrainJob's pods belong to its JobSet (``jobset.sigs.k8s.io/jobset-name=<tj>``), so the
follower of v1 jobs (``sdk.follow.JobFollower``) runs it with that selector. Each line is
labelled with the pod's hostname less the TrainJob's name, i.e. the replicated job, the Job's
index and the pod's index (``node-0-1``; a pod's other containers as ``node-0-1/<name>``):
stable across JobSet restarts, which recreate the pods under new names. It ends when the
TrainJob is ``Complete`` or ``Failed`` (terminal, note 112); the outcome names the first
container that ended non-zero, if any.
"""

from __future__ import annotations

import contextlib
from typing import Any

from trainop import errors
from trainop.api.trainer import constants as c
from trainop.controller.trainjob_caches import RUNTIME_RESOURCES, TRAINJOBS
from trainop.kube.client import Obj
from trainop.kube.http import HttpClient
from trainop.kube.resources import PODS
from trainop.sdk import logstreams, reporting
from trainop.sdk.follow import DRAIN_SECONDS, JobFollower, JobSeen, Target


def pod_labels(pod: Obj, *, trainjob: str) -> dict[str, str]:
    """Each container of a TrainJob's pod → its label (``node-0-1``, ``node-0-1/<name>``)."""
    spec = pod.get("spec") or {}
    host = str(spec.get("hostname") or pod["metadata"]["name"])
    replica = host.removeprefix(f"{trainjob}-")
    names = [x.get("name", "") for x in spec.get("containers") or []]
    return {name: replica if i == 0 else f"{replica}/{name}" for i, name in enumerate(names)}


def target(name: str, namespace: str) -> Target:
    return Target(
        resource=TRAINJOBS,
        name=name,
        namespace=namespace,
        pod_selector=f"{c.JOBSET_NAME_LABEL}={name}",
        choose=lambda pod: pod_labels(pod, trainjob=name),
    )


async def create_runtimes(client: HttpClient, runtimes: list[Obj], namespace: str) -> None:
    """Create the runtimes that came with the TrainJob (an existing one is replaced)."""
    for runtime in runtimes:
        resource = RUNTIME_RESOURCES[str(runtime["kind"])]
        where = namespace if resource.namespaced else None
        if resource.namespaced:
            runtime.setdefault("metadata", {}).setdefault("namespace", namespace)
        try:
            await client.create(resource, runtime, namespace=where)
        except errors.AlreadyExistsError:
            meta = runtime["metadata"]
            current = await client.get(resource, name=meta["name"], namespace=where)
            meta["resourceVersion"] = current["metadata"]["resourceVersion"]
            await client.replace(resource, runtime, namespace=where)


async def run_trainjob(
    client: HttpClient, raw: Obj, *, reporter: reporting.Reporter
) -> reporting.Outcome:
    """Create the TrainJob ``raw`` and follow it until it is Complete or Failed."""
    meta = raw["metadata"]
    namespace = str(meta.get("namespace") or "default")
    followed = target(str(meta["name"]), namespace)
    created = await client.create(TRAINJOBS, raw, namespace=namespace)
    follower = JobFollower(client, followed, drain=DRAIN_SECONDS)
    report = reporting.RunReport(created, reporter)
    async with contextlib.aclosing(follower.updates(created["metadata"]["resourceVersion"])) as ups:
        async for update in ups:
            if isinstance(update, logstreams.Line):
                reporter.log(update.source, update.text)
            elif isinstance(update, JobSeen):
                report.job_seen(update.job)
            else:
                report.pod_seen(update.pod)
    return await outcome(client, report.job)


async def outcome(client: HttpClient, trainjob: Obj) -> reporting.Outcome:
    """Complete → succeeded; Failed → its message and the first container that failed."""
    conditions: list[dict[str, Any]] = (trainjob.get("status") or {}).get("conditions") or []
    for condition in conditions:
        if condition.get("type") == c.CONDITION_COMPLETE and condition.get("status") == "True":
            return reporting.Outcome(True, str(condition.get("message", "")))
    failed = next((x for x in conditions if x.get("type") == c.CONDITION_FAILED), {})
    message = str(failed.get("message") or "the TrainJob failed")
    meta = trainjob["metadata"]
    selector = f"{c.JOBSET_NAME_LABEL}={meta['name']}"
    with contextlib.suppress(errors.ApiError):
        pods = await client.list(PODS, namespace=meta.get("namespace"), label_selector=selector)
        first = _first_failure(pods.items, str(meta["name"]))
        if first is not None:
            return reporting.Outcome(False, message, *first)
    return reporting.Outcome(False, message)


def _first_failure(pods: list[Obj], trainjob: str) -> tuple[str, int, str] | None:
    found: list[tuple[str, str, int, str]] = []
    for pod in pods:
        labels = pod_labels(pod, trainjob=trainjob)
        for status in (pod.get("status") or {}).get("containerStatuses") or []:
            for state in (status.get("state") or {}, status.get("lastState") or {}):
                ended = state.get("terminated")
                if ended and ended.get("exitCode", 0) != 0:
                    label = labels.get(status.get("name", ""), pod["metadata"]["name"])
                    when = str(ended.get("finishedAt") or "")
                    found.append((when, label, int(ended["exitCode"]), str(ended.get("reason"))))
    if not found:
        return None
    _, label, code, reason = min(found)
    return label, code, reason
