"""The work queue: de-duplication, one reconcile per key at a time, delays and backoff."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from trainop.controller.metrics import Metrics
from trainop.controller.queue import ShutDownError, WorkQueue
from trainop.kube.clock import FakeClock


def run(body: Callable[[WorkQueue, FakeClock], Awaitable[None]]) -> None:
    async def main() -> None:
        clock = FakeClock()
        await body(WorkQueue(clock=clock, base_delay=1.0, max_delay=10.0), clock)

    asyncio.run(main())


def test_a_key_added_many_times_is_queued_once() -> None:
    async def body(queue: WorkQueue, clock: FakeClock) -> None:
        for _ in range(5):
            queue.add("ns/a")
        queue.add("ns/b")
        assert queue.depth == 2
        assert [await queue.get(), await queue.get()] == ["ns/a", "ns/b"]

    run(body)


def test_a_key_in_progress_is_not_handed_out_again_until_done() -> None:
    async def body(queue: WorkQueue, clock: FakeClock) -> None:
        queue.add("ns/a")
        key = await queue.get()
        assert queue.in_flight == 1
        queue.add("ns/a")  # an event arrives while reconciling
        assert queue.depth == 0
        queue.done(key)
        assert (queue.depth, queue.in_flight) == (1, 0)
        assert await queue.get() == "ns/a"

    run(body)


def test_add_after_waits_for_the_clock_and_the_earliest_deadline_wins() -> None:
    async def body(queue: WorkQueue, clock: FakeClock) -> None:
        queue.add_after("ns/a", 30)
        queue.add_after("ns/a", 10)
        queue.add_after("ns/a", 20)
        clock.advance(9.9)
        assert queue.depth == 0
        clock.advance(0.1)
        assert queue.depth == 1
        assert clock.pending == 0  # the 20 s timer was never set; the 30 s one was cancelled
        clock.advance(100)
        assert queue.depth == 1

    run(body)


def test_rate_limited_adds_back_off_exponentially_up_to_the_cap_and_forget_resets() -> None:
    async def body(queue: WorkQueue, clock: FakeClock) -> None:
        delays = []
        for _ in range(6):
            delays.append(queue.add_rate_limited("ns/a"))
            clock.advance(delays[-1])
            queue.done(await queue.get())
        assert delays == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]
        queue.forget("ns/a")
        assert queue.add_rate_limited("ns/a") == 1.0

    run(body)


def test_shut_down_wakes_waiting_workers() -> None:
    async def body(queue: WorkQueue, clock: FakeClock) -> None:
        waiter = asyncio.ensure_future(queue.get())
        await asyncio.sleep(0)
        queue.shut_down()
        with pytest.raises(ShutDownError):
            await asyncio.wait_for(waiter, 5)

    run(body)


def test_client_go_workqueue_metrics_count_adds_waits_work_and_retries() -> None:
    """client-go's counting: an add of a waiting key is not an add; a key added while in
    progress is (it waits again from then)."""
    metrics = Metrics()
    now = [0.0]

    def value(sample: str) -> float | None:
        return metrics.registry.get_sample_value(sample, {"name": "tfjob-controller"})

    async def main() -> None:
        queue = WorkQueue(
            clock=FakeClock(),
            metrics=metrics.for_queue("tfjob-controller"),
            monotonic=lambda: now[0],
        )
        queue.add("ns/a")
        queue.add("ns/a")
        assert (value("workqueue_adds_total"), value("workqueue_depth")) == (1.0, 1.0)
        now[0] = 2.0
        assert await queue.get() == "ns/a"
        assert value("workqueue_depth") == 0.0
        assert value("workqueue_queue_duration_seconds_sum") == 2.0
        queue.add("ns/a")  # while in progress: counted, waits from now
        now[0] = 5.0
        queue.done("ns/a")
        assert value("workqueue_work_duration_seconds_sum") == 3.0
        assert value("workqueue_adds_total") == 2.0
        assert await queue.get() == "ns/a"
        assert value("workqueue_queue_duration_seconds_sum") == 2.0 + 3.0
        queue.add_rate_limited("ns/a")
        assert value("workqueue_retries_total") == 1.0

    asyncio.run(main())


def test_unfinished_work_is_read_from_the_keys_in_progress_when_scraped() -> None:
    metrics = Metrics()
    now = [10.0]

    def value(sample: str) -> float | None:
        return metrics.registry.get_sample_value(sample, {"name": "jaxjob-controller"})

    async def main() -> None:
        queue = WorkQueue(
            clock=FakeClock(),
            metrics=metrics.for_queue("jaxjob-controller"),
            monotonic=lambda: now[0],
        )
        metrics.watch_progress("jaxjob-controller", queue.progress)
        queue.add("ns/a")
        queue.add("ns/b")
        await queue.get()
        now[0] = 12.0
        await queue.get()
        now[0] = 15.0
        assert value("workqueue_unfinished_work_seconds") == 5.0 + 3.0
        assert value("workqueue_longest_running_processor_seconds") == 5.0
        queue.done("ns/a")
        queue.done("ns/b")
        assert value("workqueue_unfinished_work_seconds") == 0.0
        assert value("workqueue_longest_running_processor_seconds") == 0.0

    asyncio.run(main())
