"""The informer converges on the server's state through lists, watches, drops and 410s."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from tests.polling import until
from trainop import errors
from trainop.kube.client import Obj
from trainop.kube.fake import FakeClient
from trainop.kube.informer import Handlers, Informer
from trainop.kube.resources import PODS


def pod(name: str, job: str = "j", **extra: Any) -> dict[str, Any]:
    meta = {"name": name, "labels": {"job-name": job}, "managedFields": [{"manager": "x"}]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, **extra}


class Recorder:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def on_change(self, old: Obj | None, new: Obj | None) -> None:
        kind = "add" if old is None else "delete" if new is None else "update"
        self.seen.append((kind, (new or old or {})["metadata"]["name"]))


def run_with_informer(
    body: Callable[[FakeClient, Informer, Recorder], Awaitable[None]],
    *,
    sleep: Callable[[float], Awaitable[None]] | None = None,
    prepare: Callable[[FakeClient], Awaitable[None]] | None = None,
) -> None:
    async def main() -> None:
        client = FakeClient()
        if prepare is not None:
            await prepare(client)
        recorder = Recorder()
        informer = Informer(
            client, PODS, handlers=[Handlers(recorder.on_change)], sleep=sleep or asyncio.sleep
        )
        informer.add_index("job", lambda o: [o["metadata"]["labels"]["job-name"]])
        task = asyncio.create_task(informer.run())
        try:
            await body(client, informer, recorder)
        finally:
            task.cancel()

    asyncio.run(main())


def test_initial_list_fills_the_store_strips_managed_fields_and_signals_synced() -> None:
    async def prepare(client: FakeClient) -> None:
        await client.create(PODS, pod("a"), namespace="ns")
        await client.create(PODS, pod("b", job="k"), namespace="ns")

    async def body(client: FakeClient, informer: Informer, recorder: Recorder) -> None:
        await asyncio.wait_for(informer.synced.wait(), 5)
        cached = informer.get("ns", "a")
        assert cached is not None
        assert "managedFields" not in cached["metadata"]
        assert [o["metadata"]["name"] for o in informer.by_index("job", "k")] == ["b"]
        assert sorted(recorder.seen) == [("add", "a"), ("add", "b")]

    run_with_informer(body, prepare=prepare)


def test_watch_events_update_store_and_indexes() -> None:
    async def body(client: FakeClient, informer: Informer, recorder: Recorder) -> None:
        await asyncio.wait_for(informer.synced.wait(), 5)
        await client.create(PODS, pod("a"), namespace="ns")
        await until(lambda: informer.get("ns", "a") is not None, timeout=5, interval=0)
        patch = {"metadata": {"labels": {"job-name": "k"}}}
        await client.patch(PODS, name="a", namespace="ns", patch=patch)
        await until(lambda: len(informer.by_index("job", "k")) == 1, timeout=5, interval=0)
        assert informer.by_index("job", "j") == []
        await client.delete(PODS, name="a", namespace="ns")
        await until(lambda: informer.get("ns", "a") is None, timeout=5, interval=0)
        assert recorder.seen == [("add", "a"), ("update", "a"), ("delete", "a")]

    run_with_informer(body)


def test_a_dropped_watch_resumes_without_relisting() -> None:
    async def body(client: FakeClient, informer: Informer, recorder: Recorder) -> None:
        await asyncio.wait_for(informer.synced.wait(), 5)
        client.disconnect()
        await client.create(PODS, pod("a"), namespace="ns")
        await until(lambda: informer.get("ns", "a") is not None, timeout=5, interval=0)
        assert informer.relists == 1
        assert recorder.seen == [("add", "a")]

    run_with_informer(body)


def test_gone_relists_and_delivers_what_happened_during_the_gap() -> None:
    async def prepare(client: FakeClient) -> None:
        for name in ("a", "b"):
            await client.create(PODS, pod(name), namespace="ns")

    async def body(client: FakeClient, informer: Informer, recorder: Recorder) -> None:
        await asyncio.wait_for(informer.synced.wait(), 5)
        await until(lambda: ("watch", "pods") in client.calls, timeout=5, interval=0)
        calls_before = client.calls.count(("watch", "pods"))
        client.disconnect()
        await client.delete(PODS, name="a", namespace="ns")
        await client.create(PODS, pod("c"), namespace="ns")
        client.compact()
        await until(lambda: informer.relists == 2, timeout=5, interval=0)
        assert sorted(o["metadata"]["name"] for o in informer.items()) == ["b", "c"]
        assert ("delete", "a") in recorder.seen
        assert ("add", "c") in recorder.seen
        assert client.calls.count(("watch", "pods")) > calls_before

    run_with_informer(body, prepare=prepare)


def test_api_errors_back_off_exponentially_and_recover() -> None:
    delays: list[float] = []

    async def fake_sleep(delay: float) -> None:
        delays.append(delay)

    async def body(client: FakeClient, informer: Informer, recorder: Recorder) -> None:
        await asyncio.wait_for(informer.synced.wait(), 5)
        assert delays == [0.2, 0.4, 0.8]

    async def prepare(client: FakeClient) -> None:
        client.inject("list", errors.ApiError("unavailable", status=503), resource=PODS, times=3)

    run_with_informer(body, sleep=fake_sleep, prepare=prepare)
