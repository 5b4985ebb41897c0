"""Reading the logs of a job's pods: all at once, or followed until the job ends.

``read_logs`` returns each selected pod's log as text (upstream ``get_job_logs`` without
``follow``): pods still ``Pending`` are skipped. ``follow_logs`` yields ``(pod, line)`` pairs of
every selected pod as they are written: it discovers pods and container instances by re-listing
every ``poll`` seconds (an in-place restart is a new instance with its own stream), and ends
once the job has ``Succeeded`` or ``Failed`` and the streams of its ended containers are
drained (at most ``drain`` seconds more). A deleted job ends it with ``NotFoundError``.

The container read is ``container`` when the pod has it, else the pod's first container
(MPIJob's pods need not name theirs after the kind's default).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

from trainop import errors
from trainop.kube.client import Obj
from trainop.kube.http import HttpClient
from trainop.kube.resources import PODS, Resource
from trainop.sdk import constants
from trainop.sdk.follow import is_finished


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
    client: HttpClient,
    resource: Resource,
    selection: Selection,
    *,
    poll: float = 0.5,
    drain: float = 10.0,
) -> AsyncIterator[tuple[str, str]]:
    """``(pod, line)`` of the selected pods as written, until the job ends and output drains."""
    followers = _Followers(client, selection)
    try:
        while True:
            job = await client.get(resource, name=selection.job, namespace=selection.namespace)
            await (
                followers.discover()
            )  # after reading the job: no instance before its end is missed
            if is_finished(job):
                break
            async for item in followers.lines_for(poll):
                yield item
        await followers.finish(drain)
        while not followers.lines.empty():
            yield followers.lines.get_nowait()
    finally:
        followers.cancel()


class _Followers:
    """One log stream per container instance (pod uid, restart count) of the selected pods."""

    def __init__(self, client: HttpClient, selection: Selection) -> None:
        self._client = client
        self._selection = selection
        self._started: set[tuple[str, int]] = set()
        self._tasks: list[asyncio.Task[None]] = []
        self.lines: asyncio.Queue[tuple[str, str]] = asyncio.Queue()

    async def discover(self) -> None:
        selection = self._selection
        pods = await self._client.list(
            PODS, namespace=selection.namespace, label_selector=selection.label_selector
        )
        for pod in pods.items:
            container = container_of(pod, selection.container)
            for status in (pod.get("status") or {}).get("containerStatuses") or []:
                state = status.get("state") or {}
                if status.get("name") != container or not ({"running", "terminated"} & set(state)):
                    continue
                instance = (pod["metadata"]["uid"], int(status.get("restartCount") or 0))
                if instance not in self._started:
                    self._started.add(instance)
                    stream = self._stream(pod["metadata"]["name"], container)
                    self._tasks.append(asyncio.create_task(stream))

    async def _stream(self, pod: str, container: str) -> None:
        with contextlib.suppress(errors.ApiError):  # the pod went away: its stream just ends
            async for line in self._client.stream_log(
                name=pod, namespace=self._selection.namespace, container=container, follow=True
            ):
                self.lines.put_nowait((pod, line))

    async def lines_for(self, seconds: float) -> AsyncIterator[tuple[str, str]]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        while (remaining := deadline - loop.time()) > 0:
            try:
                yield await asyncio.wait_for(self.lines.get(), remaining)
            except TimeoutError:
                return

    async def finish(self, seconds: float) -> None:
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=seconds)

    def cancel(self) -> None:
        for task in self._tasks:
            task.cancel()
