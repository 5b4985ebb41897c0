"""The states of one job as they change: a watch, with a polling fallback.

``job_states`` yields the job's current state first, then every change. It follows a watch
from the last seen resourceVersion; when the watch ends (server timeout) or is too old (410)
it re-reads the job and watches again. When the watch cannot be used at all (an API error or an
unreachable server mid-stream) it sleeps ``polling_interval`` and re-reads, i.e. it polls until a
watch works again. A deleted job ends the stream with ``NotFoundError``. The consumer decides
when to stop (``TrainingClient.wait_for_job_conditions``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from trainop import errors
from trainop.kube.client import Obj
from trainop.kube.http import HttpClient
from trainop.kube.resources import Resource

WATCH_SECONDS = 300


async def job_states(
    client: HttpClient,
    resource: Resource,
    *,
    name: str,
    namespace: str,
    polling_interval: float,
) -> AsyncIterator[Obj]:
    """The job now, then each new state of it, until the consumer stops (or it is deleted)."""
    while True:
        current = await client.get(resource, name=name, namespace=namespace)
        yield current
        version = current["metadata"]["resourceVersion"]
        try:
            async for obj in _changes(client, resource, name, namespace, version):
                yield obj
        except errors.GoneError:
            continue  # too old to resume: re-read and watch from the new version
        except (errors.NotFoundError, errors.AlreadyExistsError):
            raise
        except errors.ApiError:
            await asyncio.sleep(polling_interval)  # no usable watch: poll


async def _changes(
    client: HttpClient, resource: Resource, name: str, namespace: str, version: str
) -> AsyncIterator[Obj]:
    events = client.watch(
        resource, namespace=namespace, resource_version=version, timeout_seconds=WATCH_SECONDS
    )
    async for event in events:
        meta = event.obj.get("metadata") or {}
        if meta.get("name") != name or event.type == "BOOKMARK":
            continue
        if event.type == "DELETED":
            raise errors.NotFoundError(
                f"{resource.kind} {namespace}/{name} was deleted", status=404, reason="NotFound"
            )
        yield event.obj
