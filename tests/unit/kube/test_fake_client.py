"""The in-memory client behaves like an API server where unit tests rely on it."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from trainop import errors
from trainop.kube.client import WatchEvent
from trainop.kube.fake import FakeClient
from trainop.kube.resources import PODS, SERVICES


def run(body: Callable[[FakeClient], Awaitable[Any]]) -> Any:
    return asyncio.run(body(FakeClient()))


def pod(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels}}


def test_create_get_list_with_selectors() -> None:
    async def body(client: FakeClient) -> None:
        await client.create(PODS, pod("a", role="worker"), namespace="ns")
        await client.create(PODS, pod("b", role="ps"), namespace="ns")
        await client.create(PODS, pod("c", role="worker"), namespace="other")
        got = await client.get(PODS, name="a", namespace="ns")
        assert got["metadata"]["uid"]
        assert got["metadata"]["resourceVersion"] == "1"
        workers = await client.list(PODS, label_selector="role=worker")
        assert [p["metadata"]["name"] for p in workers.items] == ["a", "c"]
        in_ns = await client.list(PODS, namespace="ns")
        assert len(in_ns.items) == 2
        assert in_ns.resource_version == "3"

    run(body)


def test_errors_are_the_trainop_error_tree() -> None:
    async def body(client: FakeClient) -> None:
        await client.create(PODS, pod("a"), namespace="ns")
        with pytest.raises(errors.AlreadyExistsError):
            await client.create(PODS, pod("a"), namespace="ns")
        with pytest.raises(errors.NotFoundError):
            await client.get(PODS, name="zz", namespace="ns")
        stale = await client.get(PODS, name="a", namespace="ns")
        await client.patch(
            PODS, name="a", namespace="ns", patch={"metadata": {"labels": {"x": "1"}}}
        )
        with pytest.raises(errors.ConflictError):
            await client.replace(PODS, stale, namespace="ns")

    run(body)


def test_status_patch_touches_only_status() -> None:
    async def body(client: FakeClient) -> None:
        await client.create(PODS, pod("a"), namespace="ns")
        patch = {"status": {"phase": "Running"}, "metadata": {"labels": {"sneaky": "1"}}}
        out = await client.patch(PODS, name="a", namespace="ns", patch=patch, subresource="status")
        assert out["status"] == {"phase": "Running"}
        assert out["metadata"]["labels"] == {}

    run(body)


def test_injected_faults_fire_the_requested_number_of_times_for_that_resource() -> None:
    async def body(client: FakeClient) -> None:
        boom = errors.ApiError("boom", status=500)
        client.inject("create", boom, resource=PODS, times=2)
        for _ in range(2):
            with pytest.raises(errors.ApiError, match="boom"):
                await client.create(PODS, pod("a"), namespace="ns")
        await client.create(SERVICES, {"metadata": {"name": "s"}}, namespace="ns")
        await client.create(PODS, pod("a"), namespace="ns")
        assert client.calls.count(("create", "pods")) == 3

    run(body)


async def _collect(client: FakeClient, count: int, **kwargs: Any) -> list[WatchEvent]:
    events: list[WatchEvent] = []
    async for event in client.watch(PODS, **kwargs):
        events.append(event)
        if len(events) == count:
            break
    return events


def test_watch_replays_from_a_resource_version_then_streams_live_events() -> None:
    async def body(client: FakeClient) -> None:
        await client.create(PODS, pod("a"), namespace="ns")
        start = client.resource_version
        await client.create(PODS, pod("b"), namespace="ns")
        watching = asyncio.ensure_future(_collect(client, 3, resource_version=start))
        await client.patch(PODS, name="a", namespace="ns", patch={"spec": {"x": 1}})
        await client.delete(PODS, name="b", namespace="ns")
        events = await asyncio.wait_for(watching, timeout=5)
        assert [(e.type, e.obj["metadata"]["name"]) for e in events] == [
            ("ADDED", "b"),
            ("MODIFIED", "a"),
            ("DELETED", "b"),
        ]

    run(body)


def test_watch_from_a_compacted_version_is_gone() -> None:
    async def body(client: FakeClient) -> None:
        await client.create(PODS, pod("a"), namespace="ns")
        await client.create(PODS, pod("b"), namespace="ns")
        client.compact()
        with pytest.raises(errors.GoneError):
            await _collect(client, 1, resource_version="1")

    run(body)
