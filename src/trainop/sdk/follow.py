"""Run one job on a cluster and follow it to the end: conditions, logs, and the outcome.

``run_job`` creates the job, then watches it and its pods from the create's resourceVersion
(nothing is missed between the create and the watches). Every new condition goes to the
reporter; every container instance that starts — including each in-place restart — gets a
log follower, so the replicas' output arrives multiplexed, labelled ``worker-1``, ``master-0``.
It returns when the job has ``Succeeded`` or ``Failed``, after the log followers have drained,
with an ``Outcome`` naming, on failure, the replica, its exit code and its reason.
``ensure_namespace`` creates a manifest's namespace on a local cluster (upstream's examples
say ``namespace: kubeflow``, which a fresh local cluster does not have).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Protocol

from trainop import errors
from trainop.api.kinds import info_of
from trainop.api.types import FAILED, SUCCEEDED, Job
from trainop.engine.naming import JOB_NAME_LABEL
from trainop.kube.client import Client, Obj
from trainop.kube.http import HttpClient
from trainop.kube.resources import NAMESPACES, PODS, Resource, job_resource

DRAIN_SECONDS = 5.0
# Container failures that no restart can fix on this machine (no image to pull, no retry
# makes a missing executable or ConfigMap key appear): the run ends at the first one.
FATAL_REASONS = frozenset(
    {
        "ContainerCannotRun",
        "StartError",
        "CreateContainerConfigError",
        "CreateContainerError",
        "RunContainerError",
        "ErrImagePull",  # an image that cannot be pulled now will not be pulled later offline
        "ErrImageNeverPull",
        "ImagePullBackOff",
    }
)


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a job ended; the replica fields name the first failed container, if any."""

    succeeded: bool
    message: str
    replica: str | None = None
    exit_code: int | None = None
    reason: str | None = None


class Reporter(Protocol):
    def condition(self, condition: dict[str, Any]) -> None:
        """A condition the job gained (or whose status changed)."""

    def log(self, replica: str, line: str) -> None:
        """One line of output of ``replica`` (``worker-1``; ``worker-1/sidecar`` for others)."""


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


async def run_job(client: HttpClient, job: Job, raw: Obj, *, reporter: Reporter) -> Outcome:
    """Create ``job`` (``raw`` is its manifest) and follow it until it finishes."""
    namespace = job.metadata.namespace or "default"
    name = job.metadata.name or ""
    resource = job_resource(info_of(job))
    created = await client.create(resource, raw, namespace=namespace)
    since = created["metadata"]["resourceVersion"]
    followers = _Followers(client, name=name, reporter=reporter)
    pods = asyncio.create_task(followers.watch(namespace, since))
    ending = asyncio.create_task(_until_finished(client, resource, created, reporter=reporter))
    try:
        await asyncio.wait([ending, pods], return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (ending, pods):
            task.cancel()
        await asyncio.gather(ending, pods, return_exceptions=True)
    await followers.catch_up(namespace)
    await followers.drain(DRAIN_SECONDS)
    if followers.fatal is not None:
        return followers.fatal
    return await _outcome(client, ending.result())


async def _until_finished(
    client: HttpClient, resource: Resource, job: Obj, *, reporter: Reporter
) -> Obj:
    meta = job["metadata"]
    seen: set[tuple[str, str, str]] = set()
    version = meta["resourceVersion"]
    while True:
        try:
            async for event in _job_events(client, resource, meta, version):
                if event.get("metadata", {}).get("name") != meta["name"]:
                    continue
                version = event["metadata"]["resourceVersion"]
                for condition in (event.get("status") or {}).get("conditions") or []:
                    key = (condition["type"], condition["status"], condition.get("reason", ""))
                    if key not in seen:
                        seen.add(key)
                        reporter.condition(condition)
                if is_finished(event):
                    return event
        except errors.GoneError:
            version = ""  # resume from now; conditions already reported are remembered


async def _job_events(
    client: HttpClient, resource: Resource, meta: dict[str, Any], version: str
) -> AsyncIterator[Obj]:
    """The job's states from ``version`` on (from a fresh read when ``version`` is empty)."""
    namespace = meta.get("namespace")
    if not version:
        current = await client.get(resource, name=meta["name"], namespace=namespace)
        yield current
        version = current["metadata"]["resourceVersion"]
    async for event in client.watch(resource, namespace=namespace, resource_version=version):
        if event.type in ("ADDED", "MODIFIED"):
            yield event.obj
        elif event.type == "DELETED" and event.obj["metadata"]["name"] == meta["name"]:
            raise errors.TrainopError(f"job {meta['name']} was deleted before it finished")


def is_finished(job: Obj) -> bool:
    """Whether a raw job has ``Succeeded`` or ``Failed`` true."""
    conditions = (job.get("status") or {}).get("conditions") or []
    return any(c["type"] in (SUCCEEDED, FAILED) and c["status"] == "True" for c in conditions)


class _Followers:
    """One log follower per container instance of the job's pods."""

    def __init__(self, client: HttpClient, *, name: str, reporter: Reporter) -> None:
        self._client = client
        self._job = name
        self._reporter = reporter
        self._started: set[tuple[str, str, int]] = set()
        self._tasks: list[asyncio.Task[None]] = []
        self.fatal: Outcome | None = None
        self._unschedulable: set[str] = set()

    async def watch(self, namespace: str, since: str) -> None:
        async for event in self._client.watch(
            PODS, namespace=namespace, label_selector=self._selector, resource_version=since
        ):
            if event.type in ("ADDED", "MODIFIED"):
                self._follow_new_instances(event.obj)
                self._report_unschedulable(event.obj)
                self.fatal = self.fatal or self._fatal(event.obj)
                if self.fatal is not None:
                    return

    def _report_unschedulable(self, pod: Obj) -> None:
        """Say once per message why a replica waits for the local scheduler (a job whose
        replicas never fit would otherwise wait in silence)."""
        for condition in (pod.get("status") or {}).get("conditions") or []:
            if condition.get("type") != "PodScheduled" or condition.get("status") != "False":
                continue
            replica = pod["metadata"]["name"].removeprefix(f"{self._job}-")
            message = f"{replica}: {condition.get('message') or condition.get('reason')}"
            if message not in self._unschedulable:
                self._unschedulable.add(message)
                self._reporter.condition(
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": condition.get("reason", ""),
                        "message": message,
                    }
                )

    def _fatal(self, pod: Obj) -> Outcome | None:
        status = pod.get("status") or {}
        for container in [
            *status.get("initContainerStatuses", []),
            *status.get("containerStatuses", []),
        ]:
            states = [  # a start failure is lastState while its container backs off
                *(container.get("lastState") or {}).values(),  # the runtime's own reason first
                *(container.get("state") or {}).values(),
            ]
            for state in states:
                if isinstance(state, dict) and state.get("reason") in FATAL_REASONS:
                    replica = self._label(pod, container["name"])
                    message = f"{replica}: {state.get('message') or state['reason']}"
                    return Outcome(False, message, replica, state.get("exitCode"), state["reason"])
        return None

    async def catch_up(self, namespace: str) -> None:
        """Follow container instances the watch had not reached when the job finished."""
        pods = await self._client.list(PODS, namespace=namespace, label_selector=self._selector)
        for pod in pods.items:
            self._follow_new_instances(pod)

    @property
    def _selector(self) -> str:
        return f"{JOB_NAME_LABEL}={self._job}"

    def _follow_new_instances(self, pod: Obj) -> None:
        meta = pod["metadata"]
        for status in (pod.get("status") or {}).get("containerStatuses") or []:
            state = status.get("state") or {}
            if "running" not in state and "terminated" not in state:
                continue
            instance = (meta["uid"], status["name"], int(status.get("restartCount") or 0))
            if instance not in self._started:
                self._started.add(instance)
                label = self._label(pod, status["name"])
                task = self._stream(meta["name"], meta.get("namespace", "default"), status, label)
                self._tasks.append(asyncio.create_task(task))

    def _label(self, pod: Obj, container: str) -> str:
        replica = pod["metadata"]["name"].removeprefix(f"{self._job}-")
        containers = (pod.get("spec") or {}).get("containers") or []
        first = containers[0].get("name") if containers else container
        return replica if container == first else f"{replica}/{container}"

    async def _stream(self, pod: str, namespace: str, status: Obj, label: str) -> None:
        with contextlib.suppress(errors.ApiError):
            async for line in self._client.stream_log(
                name=pod, namespace=namespace, container=status["name"], follow=True
            ):
                self._reporter.log(label, line)

    async def drain(self, seconds: float) -> None:
        """Let followers finish the output of containers that ended; stop the rest."""
        if self._tasks:
            _, pending = await asyncio.wait(self._tasks, timeout=seconds)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)


async def _outcome(client: HttpClient, job: Obj) -> Outcome:
    conditions = (job.get("status") or {}).get("conditions") or []
    last = conditions[-1] if conditions else {}
    if any(c["type"] == SUCCEEDED and c["status"] == "True" for c in conditions):
        return Outcome(True, str(last.get("message", "")))
    meta = job["metadata"]
    selector = f"{JOB_NAME_LABEL}={meta['name']}"
    pods = await client.list(PODS, namespace=meta.get("namespace"), label_selector=selector)
    failed = _first_failure(pods.items)
    message = str(last.get("message", "the job failed"))
    if failed is None:
        return Outcome(False, message)
    replica, code, reason = failed
    return Outcome(False, message, replica.removeprefix(f"{meta['name']}-"), code, reason)


def _first_failure(pods: list[Obj]) -> tuple[str, int, str] | None:
    """The earliest container that ended non-zero (current or previous instance)."""
    found: list[tuple[str, str, int, str]] = []
    for pod in pods:
        for status in (pod.get("status") or {}).get("containerStatuses") or []:
            for state in (status.get("state") or {}, status.get("lastState") or {}):
                ended = state.get("terminated")
                if ended and ended.get("exitCode", 0) != 0:
                    when = str(ended.get("finishedAt") or "")
                    found.append(
                        (
                            when,
                            pod["metadata"]["name"],
                            ended["exitCode"],
                            ended.get("reason", "Error"),
                        )
                    )
    if not found:
        return None
    _, name, code, reason = min(found)
    return name, int(code), str(reason)
