"""The job follower: a job, its pods and its containers' output, followed until the job ends.

``JobFollower.updates`` watches the job and its selected pods from one resourceVersion (the
create's, or a first read's), so nothing between that point and the watches is missed, and
yields ``JobSeen`` and ``PodSeen`` for their states. Every container instance that starts gets
one log stream (``sdk.logstreams``: keyed by pod uid, container and restartCount, so an
in-place restart and a recreated pod are new streams); its lines come as ``logstreams.Line``,
labelled as the ``Target`` chooses. It ends once the job has ``Succeeded`` or ``Failed`` (or
the consumer called ``stop``): the pods are listed once more for instances the watch had not
reached, and the streams drain for at most ``drain`` seconds. A deleted job ends it with
``NotFoundError``; a watch the server ends is resumed, one too old (410) replaced by a list.

Its users: ``run_job`` (``trainop run``: creates the job, reports through
``sdk.reporting``), and ``sdk.logs.follow_logs`` (``TrainingClient.get_job_logs(follow=True)``,
``trainop logs -f``). ``ensure_namespace`` creates a manifest's namespace on a local cluster
(upstream's examples say ``namespace: kubeflow``, which a fresh local cluster does not have).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass

from trainop import errors
from trainop.api.kinds import info_of
from trainop.api.types import FAILED, SUCCEEDED, Job
from trainop.engine.naming import JOB_NAME_LABEL
from trainop.kube.client import Client, Obj, WatchEvent
from trainop.kube.http import HttpClient
from trainop.kube.resources import NAMESPACES, PODS, Resource, job_resource
from trainop.sdk import logstreams, reporting

DRAIN_SECONDS = 5.0


async def ensure_namespace(client: Client, name: str) -> bool:
    """Create namespace ``name`` unless it exists; True when this call created it."""
    try:
        await client.get(NAMESPACES, name=name)
        return False
    except errors.NotFoundError:
        pass
    try:
        await client.create(
            NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        )
    except errors.AlreadyExistsError:
        return False  # created meanwhile, by someone else
    return True


async def run_job(
    client: HttpClient, job: Job, raw: Obj, *, reporter: reporting.Reporter
) -> reporting.Outcome:
    """Create ``job`` (``raw`` is its manifest) and follow it until it finishes."""
    name = job.metadata.name or ""
    target = Target(
        resource=job_resource(info_of(job)),
        name=name,
        namespace=job.metadata.namespace or "default",
        pod_selector=f"{JOB_NAME_LABEL}={name}",
        choose=functools.partial(reporting.replica_labels, job=name),
    )
    created = await client.create(target.resource, raw, namespace=target.namespace)
    follower = JobFollower(client, target, drain=DRAIN_SECONDS)
    report = reporting.RunReport(created, reporter)
    since = created["metadata"]["resourceVersion"]
    async with contextlib.aclosing(follower.updates(since)) as updates:
        async for update in updates:
            if isinstance(update, logstreams.Line):
                reporter.log(update.source, update.text)
            elif isinstance(update, JobSeen):
                report.job_seen(update.job)
            else:
                report.pod_seen(update.pod)
                if report.fatal is not None:
                    follower.stop()  # no restart can fix it: drain what was written, then end
    return report.fatal or await reporting.outcome_of(client, report.job)


@dataclass(frozen=True, slots=True)
class Target:
    """What to follow: a job, the pods of it whose logs are read, and which containers."""

    resource: Resource
    name: str
    namespace: str
    pod_selector: str
    choose: logstreams.Choose


@dataclass(frozen=True, slots=True)
class JobSeen:
    """A state of the job (the first read, then every change)."""

    job: Obj


@dataclass(frozen=True, slots=True)
class PodSeen:
    """A state of one of the selected pods, while the job runs."""

    pod: Obj


Update = JobSeen | PodSeen | logstreams.Line
_Item = Update | logstreams.Ended | Exception


class JobFollower:
    """The job's states, its pods' states and its containers' lines, until the job ends."""

    def __init__(self, client: HttpClient, target: Target, *, drain: float) -> None:
        self._client = client
        self._target = target
        self._drain = drain
        self._stopping = False
        self._queue: asyncio.Queue[_Item] = asyncio.Queue()
        self._streams = logstreams.LogStreams(
            client, choose=target.choose, put=self._queue.put_nowait
        )

    def stop(self) -> None:
        """End as if the job had finished: the streams drain, then ``updates`` ends."""
        self._stopping = True

    async def updates(self, since: str = "") -> AsyncGenerator[Update]:
        """Everything from ``since`` (a resourceVersion; empty: from a first read of the job,
        ``NotFoundError`` if there is none) until the job has ended and its streams drained.
        A deleted job ends it with ``NotFoundError``. Run once per follower."""
        watches: list[asyncio.Task[None]] = []
        try:
            job_since, pods_since = (since, since) if since else await self._read()
            watches = [
                asyncio.create_task(self._pump(self._job_states(job_since))),
                asyncio.create_task(self._pump(self._pod_states(pods_since))),
            ]
            while not self._stopping:
                item = await self._queue.get()
                if isinstance(item, Exception):
                    raise item
                if isinstance(item, PodSeen):
                    self._streams.open_new(item.pod)
                if not isinstance(item, logstreams.Ended):
                    yield item
                if isinstance(item, JobSeen) and is_finished(item.job):
                    break
            for task in watches:
                task.cancel()
            async for line in self._drained():
                yield line
        finally:
            for task in watches:
                task.cancel()
            await asyncio.gather(*watches, return_exceptions=True)
            await self._streams.close()

    async def _read(self) -> tuple[str, str]:
        """Queue the job's and its pods' current states; the versions to watch them from."""
        t = self._target
        job = await self._client.get(t.resource, name=t.name, namespace=t.namespace)
        pods = await self._client.list(PODS, namespace=t.namespace, label_selector=t.pod_selector)
        for pod in pods.items:
            self._queue.put_nowait(PodSeen(pod))
        self._queue.put_nowait(JobSeen(job))
        return job["metadata"]["resourceVersion"], pods.resource_version

    async def _pump(self, source: AsyncIterator[Update]) -> None:
        try:
            async for item in source:
                self._queue.put_nowait(item)
        except Exception as exc:  # a worker's boundary: the consumer re-raises it
            self._queue.put_nowait(exc)

    async def _job_states(self, since: str) -> AsyncIterator[JobSeen]:
        t = self._target
        async for event in watch_from(self._client, t.resource, namespace=t.namespace, since=since):
            if event.obj["metadata"].get("name") != t.name:
                continue
            if event.type == "DELETED":
                raise errors.NotFoundError(
                    f"{t.resource.kind} {t.namespace}/{t.name} was deleted before it finished",
                    status=404,
                    reason="NotFound",
                )
            yield JobSeen(event.obj)

    async def _pod_states(self, since: str) -> AsyncIterator[PodSeen]:
        t = self._target
        events = watch_from(
            self._client, PODS, namespace=t.namespace, since=since, label_selector=t.pod_selector
        )
        async for event in events:
            if event.type != "DELETED":
                yield PodSeen(event.obj)

    async def _drained(self) -> AsyncIterator[logstreams.Line]:
        """Follow the instances the pod watch had not reached; the lines of every stream until
        all have ended or ``drain`` seconds have passed, whichever is first."""
        t = self._target
        pods = await self._client.list(PODS, namespace=t.namespace, label_selector=t.pod_selector)
        for pod in pods.items:
            self._streams.open_new(pod)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._drain
        while self._streams.reading or not self._queue.empty():
            try:
                item = await asyncio.wait_for(self._queue.get(), deadline - loop.time())
            except TimeoutError:
                break
            if isinstance(item, logstreams.Line):
                yield item
        await self._streams.close()
        while not self._queue.empty():
            if isinstance(item := self._queue.get_nowait(), logstreams.Line):
                yield item


async def watch_from(
    client: HttpClient, resource: Resource, *, namespace: str, since: str, label_selector: str = ""
) -> AsyncIterator[WatchEvent]:
    """Every change from ``since`` on: a watch resumed from the last version seen when the
    server ends it; after a 410 a fresh list stands in for the changes missed (an object that
    is no longer listed comes as DELETED)."""
    version, known = since, set[str]()
    while True:
        try:
            async for event in client.watch(
                resource,
                namespace=namespace,
                label_selector=label_selector,
                resource_version=version,
            ):
                meta = event.obj.get("metadata") or {}
                version = meta.get("resourceVersion") or version
                if event.type != "BOOKMARK":
                    (known.discard if event.type == "DELETED" else known.add)(meta.get("name", ""))
                    yield event
        except errors.GoneError:
            listed = await client.list(resource, namespace=namespace, label_selector=label_selector)
            version = listed.resource_version
            names = {item["metadata"]["name"] for item in listed.items}
            for name in known - names:
                yield WatchEvent("DELETED", {"metadata": {"name": name, "namespace": namespace}})
            for item in listed.items:
                yield WatchEvent("MODIFIED", item)
            known = names


def is_finished(job: Obj) -> bool:
    """Whether a raw job has ``Succeeded`` or ``Failed`` true (a TrainJob: ``Complete``)."""
    conditions = (job.get("status") or {}).get("conditions") or []
    ended = (SUCCEEDED, FAILED, "Complete")
    return any(c["type"] in ended and c["status"] == "True" for c in conditions)
