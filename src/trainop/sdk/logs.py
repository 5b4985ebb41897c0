"""Reading the logs of a job's pods: all at once, or followed until the job ends.

``read_logs`` returns each selected pod's log as text (upstream ``get_job_logs`` without
``follow``): pods still ``Pending`` are skipped. ``follow_logs`` yields ``(pod, line)`` pairs of
every selected pod as they are written, through the one job follower (``sdk.follow``: watches,
one stream per container instance, so an in-place restart's lines come too, once each), and
ends once the job has ``Succeeded`` or ``Failed`` and the streams of its ended containers are
drained (at most ``drain`` seconds more). A missing or deleted job ends it with
``NotFoundError``.

The container read is ``container`` when the pod has it, else the pod's first container
(MPIJob's pods need not name theirs after the kind's default).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

from trainop.kube.client import Obj
from trainop.kube.http import HttpClient
from trainop.kube.resources import PODS, Resource
from trainop.sdk import constants, follow, logstreams


@dataclass(frozen=True, slots=True)
class Selection:
    """Which pods of which job, and which container of theirs."""

    job: str
    namespace: str
    label_selector: str
    container: str


def container_of(pod: Obj, preferred: str) -> str:
    """``preferred`` if the pod runs a container of that name, else its first container."""
    names = [c.get("name", "") for c in (pod.get("spec") or {}).get("containers") or []]
    return preferred if preferred in names or not names else names[0]


async def read_logs(client: HttpClient, selection: Selection) -> dict[str, str]:
    """Pod name → the whole log of its container, for every selected pod not ``Pending``."""
    pods = await client.list(
        PODS, namespace=selection.namespace, label_selector=selection.label_selector
    )
    logs: dict[str, str] = {}
    for pod in pods.items:
        if (pod.get("status") or {}).get("phase") == constants.POD_PHASE_PENDING:
            continue
        name = pod["metadata"]["name"]
        lines = client.stream_log(
            name=name,
            namespace=selection.namespace,
            container=container_of(pod, selection.container),
        )
        logs[name] = "\n".join([line async for line in lines])
    return logs


async def follow_logs(
    client: HttpClient, resource: Resource, selection: Selection, *, drain: float = 10.0
) -> AsyncIterator[tuple[str, str]]:
    """``(pod, line)`` of the selected pods as written, until the job ends and output drains."""

    def choose(pod: Obj) -> dict[str, str]:
        return {container_of(pod, selection.container): pod["metadata"]["name"]}

    target = follow.Target(
        resource=resource,
        name=selection.job,
        namespace=selection.namespace,
        pod_selector=selection.label_selector,
        choose=choose,
    )
    updates = follow.JobFollower(client, target, drain=drain).updates()
    async with contextlib.aclosing(updates):
        async for update in updates:
            if isinstance(update, logstreams.Line):
                yield update.source, update.text
