"""The token bucket allows a burst, then paces requests at qps (on a fake clock)."""

from __future__ import annotations

import asyncio

from trainop.kube.fake import FakeClient
from trainop.kube.ratelimit import RateLimitedClient, TokenBucket
from trainop.kube.resources import PODS


class ManualTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(round(seconds, 6))
        self.now += seconds


def test_burst_then_paced_at_qps() -> None:
    clock = ManualTime()
    bucket = TokenBucket(qps=10, burst=3, monotonic=clock.monotonic, sleep=clock.sleep)

    async def main() -> None:
        for _ in range(5):
            await bucket.take()

    asyncio.run(main())
    assert clock.slept == [0.1, 0.1]
    assert clock.now == 0.2


def test_requests_are_limited_but_watches_are_not() -> None:
    clock = ManualTime()
    fake = FakeClient()
    client = RateLimitedClient(
        fake, TokenBucket(qps=1, burst=1, monotonic=clock.monotonic, sleep=clock.sleep)
    )

    async def main() -> None:
        await client.create(PODS, {"metadata": {"name": "a"}}, namespace="d")
        await client.get(PODS, name="a", namespace="d")
        stream = client.watch(PODS, resource_version="0")
        assert (await anext(stream)).type == "ADDED"

    asyncio.run(main())
    assert clock.slept == [1.0]
    assert fake.calls == [("create", "pods"), ("get", "pods"), ("watch", "pods")]
