"""The controller's use of the event recorder: Events about jobs, written at once by default,
or queued and sent in the background."""

from __future__ import annotations

import asyncio

from tests.unit.api.builders import manifest
from trainop.engine.actions import Event
from trainop.kube.clock import FakeClock
from trainop.kube.events import EventRecorder, ObjectRef, Source
from trainop.kube.fake import FakeClient
from trainop.kube.resources import EVENTS

JOB = manifest("PyTorchJob", name="pt") | {"metadata": {"name": "pt", "namespace": "default"}}
CREATED = Event("Normal", "SuccessfulCreatePod", "Created pod: pt-master-0")


async def record(recorder: EventRecorder, *, component: str) -> None:
    """What the reconcilers do: an engine ``Event`` about the job, from the kind's controller."""
    about, source = ObjectRef.of(JOB), Source(component)
    await recorder.record(about, CREATED.type, CREATED.reason, CREATED.message, source=source)


async def reasons(client: FakeClient) -> list[str]:
    return [e["reason"] for e in (await client.list(EVENTS, namespace="default")).items]


def test_by_default_record_writes_the_event_before_returning() -> None:
    async def main() -> None:
        client = FakeClient()
        recorder = EventRecorder(client=client, clock=FakeClock())
        await record(recorder, component="pytorchjob-controller")
        assert await reasons(client) == ["SuccessfulCreatePod"]
        assert recorder.recorded == 1

    asyncio.run(main())


def test_in_the_background_record_returns_at_once_and_run_sends() -> None:
    async def main() -> None:
        client = FakeClient()
        recorder = EventRecorder(client=client, clock=FakeClock(), background=True)
        await record(recorder, component="pytorchjob-controller")
        assert await reasons(client) == [], "queued, not sent, while run() is not running"
        sender = asyncio.create_task(recorder.run())
        await recorder.drained()
        assert await reasons(client) == ["SuccessfulCreatePod"]
        event = (await client.list(EVENTS, namespace="default")).items[0]
        assert event["involvedObject"]["name"] == "pt"
        assert event["source"] == {"component": "pytorchjob-controller"}
        sender.cancel()
        await asyncio.gather(sender, return_exceptions=True)

    asyncio.run(main())


def test_a_full_queue_makes_record_wait_instead_of_dropping() -> None:
    async def main() -> None:
        client = FakeClient()
        recorder = EventRecorder(client=client, clock=FakeClock(), background=True, max_queued=1)
        await record(recorder, component="c")
        second = asyncio.create_task(record(recorder, component="c"))
        for _ in range(5):
            await asyncio.sleep(0)
        assert not second.done(), "one Event is already queued"
        sender = asyncio.create_task(recorder.run())
        await second
        await recorder.drained()
        assert len(await reasons(client)) == 2
        sender.cancel()
        await asyncio.gather(sender, return_exceptions=True)

    asyncio.run(main())
