"""``sdk.logstreams``: one log stream per container instance (pod uid, container, restartCount)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, cast

from trainop.kube.http import HttpClient
from trainop.sdk import logstreams


class Logs:
    """A client whose ``stream_log`` answers one line naming the read, then ends."""

    def __init__(self) -> None:
        self.reads: list[tuple[str, str]] = []

    async def stream_log(
        self, *, name: str, namespace: str, container: str, follow: bool
    ) -> AsyncIterator[str]:
        assert follow
        self.reads.append((name, container))
        yield f"{namespace}/{name}/{container}"


def pod(uid: str, *, restarts: int = 0, state: str = "running", **more: str) -> dict[str, Any]:
    containers = ["main", *more]
    return {
        "metadata": {"name": "job-worker-0", "namespace": "ns", "uid": uid},
        "spec": {"containers": [{"name": name} for name in containers]},
        "status": {
            "containerStatuses": [
                {"name": name, "restartCount": restarts, "state": {more.get(name, state): {}}}
                for name in containers
            ]
        },
    }


def read(states: list[dict[str, Any]], *, streams: int) -> tuple[Logs, list[logstreams.Line]]:
    """Show ``states`` to a ``LogStreams``; its lines once ``streams`` streams have ended."""

    async def scenario() -> tuple[Logs, list[logstreams.Line]]:
        client, lines, ended, done = Logs(), [], [], asyncio.Event()

        def put(item: logstreams.Line | logstreams.Ended) -> None:
            if isinstance(item, logstreams.Line):
                lines.append(item)
            else:
                ended.append(item)
                if len(ended) == streams:
                    done.set()

        reader = logstreams.LogStreams(
            cast(HttpClient, client),
            choose=lambda p: {"main": p["metadata"]["name"].removeprefix("job-")},
            put=put,
        )
        for state in states:
            reader.open_new(state)
        await asyncio.wait_for(done.wait(), timeout=5)
        assert reader.reading == 0
        await reader.close()
        return client, lines

    return asyncio.run(scenario())


def test_each_started_instance_is_read_once() -> None:
    client, lines = read(
        [
            pod("a", state="waiting"),  # not started: nothing to read yet
            pod("a"),
            pod("a"),  # the same instance again
            pod("a", state="terminated"),
            pod("a", restarts=1),  # restarted in place: a new instance
            pod("b"),  # recreated under the same name: a new instance
        ],
        streams=3,
    )
    assert client.reads == [("job-worker-0", "main")] * 3
    assert [line.source for line in lines] == ["worker-0"] * 3


def test_only_the_chosen_containers_are_read() -> None:
    client, _ = read([pod("a", sidecar="running")], streams=1)
    assert client.reads == [("job-worker-0", "main")]
