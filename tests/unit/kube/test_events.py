"""The one Event recorder: the bodies each component writes, aggregation, queueing without waiting.

The controller's use (job Events, background senders, back-pressure) is in
``tests/unit/controller/test_events.py``; here the kubelet's and the scheduler's: pod Events
from a component on a node, recorded from synchronous code, repeats aggregated.
"""

from __future__ import annotations

import asyncio

from trainop import errors
from trainop.kube.client import Obj
from trainop.kube.clock import FakeClock
from trainop.kube.events import EventRecorder, ObjectRef, Source
from trainop.kube.fake import FakeClient
from trainop.kube.resources import EVENTS

POD = ObjectRef.pod("default", "p", "uid-1")
KUBELET = Source("kubelet", host="node-a")


def recorder_for(client: FakeClient, clock: FakeClock, **options: int) -> EventRecorder:
    """A recorder as the kubelet makes one."""
    return EventRecorder(client=client, clock=clock, source=KUBELET, aggregate=True, **options)


async def stored(client: FakeClient) -> list[Obj]:
    """The Events written, oldest first (their names end in random hex)."""
    events = (await client.list(EVENTS, namespace="default")).items
    return sorted(events, key=lambda e: int(e["metadata"]["resourceVersion"]))


def test_a_kubelet_event_names_the_container_its_node_and_itself() -> None:
    async def main() -> None:
        client = FakeClient()
        recorder = recorder_for(client, FakeClock())
        recorder.record_nowait(POD.container("main"), "Normal", "Started", "Started container main")
        recorder.record_nowait(POD.container("setup", init=True), "Normal", "Pulled", "m")
        await recorder.drained()
        started, pulled = await stored(client)
        assert started["involvedObject"] == {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": "p",
            "namespace": "default",
            "uid": "uid-1",
            "fieldPath": "spec.containers{main}",
        }
        assert pulled["involvedObject"]["fieldPath"] == "spec.initContainers{setup}"
        assert started["source"] == {"component": "kubelet", "host": "node-a"}
        assert (started["reportingComponent"], started["reportingInstance"]) == (
            "kubelet",
            "node-a",
        )
        assert (started["type"], started["reason"], started["count"]) == ("Normal", "Started", 1)
        assert started["firstTimestamp"] == started["lastTimestamp"] == "2026-01-01T00:00:00Z"
        assert recorder.sent == 2

    asyncio.run(main())


def test_a_job_event_refers_to_the_version_read_and_has_no_reporting_instance() -> None:
    async def main() -> None:
        client = FakeClient()
        job = {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "metadata": {"name": "pt", "namespace": "ns", "uid": "u", "resourceVersion": "7"},
        }
        recorder = EventRecorder(client=client, clock=FakeClock())
        await recorder.record(ObjectRef.of(job), "Warning", "Bad", "m", source=Source("c"))
        (event,) = (await client.list(EVENTS, namespace="ns")).items
        assert event["involvedObject"] == {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "name": "pt",
            "namespace": "ns",
            "uid": "u",
            "resourceVersion": "7",
        }
        assert event["source"] == {"component": "c"}
        assert "reportingComponent" not in event

    asyncio.run(main())


def test_a_repeat_patches_count_and_last_timestamp_of_the_stored_event() -> None:
    async def main() -> None:
        client, clock = FakeClient(), FakeClock()
        recorder = recorder_for(client, clock)
        for _ in range(3):
            recorder.record_nowait(POD.container("main"), "Warning", "BackOff", "back-off")
            await recorder.drained()
            clock.advance(10)
        recorder.record_nowait(POD.container("main"), "Warning", "BackOff", "other message")
        await recorder.drained()
        backoff, other = await stored(client)
        assert (backoff["count"], backoff["lastTimestamp"]) == (3, "2026-01-01T00:00:20Z")
        assert backoff["firstTimestamp"] == "2026-01-01T00:00:00Z"
        assert other["count"] == 1
        assert recorder.sent == 4

    asyncio.run(main())


def test_after_forget_or_a_deleted_event_a_repeat_is_a_new_event() -> None:
    async def main() -> None:
        client = FakeClient()
        recorder = recorder_for(client, FakeClock())
        recorder.record_nowait(POD, "Normal", "Scheduled", "m")
        await recorder.drained()
        recorder.forget("uid-1")
        recorder.record_nowait(POD, "Normal", "Scheduled", "m")
        await recorder.drained()
        assert [e["count"] for e in await stored(client)] == [1, 1]
        for event in await stored(client):
            await client.delete(EVENTS, name=event["metadata"]["name"], namespace="default")
        recorder.record_nowait(POD, "Normal", "Scheduled", "m")
        await recorder.drained()
        assert [e["count"] for e in await stored(client)] == [1]

    asyncio.run(main())


def test_record_nowait_drops_beyond_max_queued_and_a_failed_write_is_not_retried() -> None:
    async def main() -> None:
        client = FakeClient()
        recorder = recorder_for(client, FakeClock(), max_queued=2)
        client.inject("create", errors.ApiError("boom", status=500), resource=EVENTS)
        for reason in ("A", "B", "C"):
            recorder.record_nowait(POD, "Normal", reason, "m")
        await recorder.drained()
        assert [e["reason"] for e in await stored(client)] == ["B"]
        assert recorder.sent == 1

    asyncio.run(main())


def test_cancel_loses_what_is_queued_and_drained_returns() -> None:
    async def main() -> None:
        client = FakeClient()
        recorder = recorder_for(client, FakeClock())
        recorder.record_nowait(POD, "Normal", "A", "m")
        recorder.record_nowait(POD, "Normal", "B", "m")
        recorder.cancel()
        await recorder.drained()
        assert await stored(client) == []
        recorder.record_nowait(POD, "Normal", "C", "m")  # a later Event is sent again
        await recorder.drained()
        assert [e["reason"] for e in await stored(client)] == ["C"]

    asyncio.run(main())
