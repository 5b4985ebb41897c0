"""Leader election on a Lease: one leader, takeover after expiry, never two at once."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from trainop import errors
from trainop.controller.leader import LeaderElector, LostLeadershipError
from trainop.kube.clock import FakeClock
from trainop.kube.fake import FakeClient
from trainop.kube.resources import LEASES


def elector(client: FakeClient, clock: FakeClock, identity: str) -> LeaderElector:
    return LeaderElector(
        client=client,
        clock=clock,
        namespace="kubeflow",
        name="lock",
        identity=identity,
        lease_duration=15,
        renew_deadline=10,
        retry_period=2,
    )


def run(body: Callable[[FakeClient, FakeClock], Awaitable[None]]) -> None:
    asyncio.run(body(FakeClient(), FakeClock()))


def test_first_candidate_wins_and_the_second_waits() -> None:
    async def body(client: FakeClient, clock: FakeClock) -> None:
        a, b = elector(client, clock, "a"), elector(client, clock, "b")
        assert await a.try_acquire_or_renew()
        assert not await b.try_acquire_or_renew()
        lease = await client.get(LEASES, name="lock", namespace="kubeflow")
        assert lease["spec"]["holderIdentity"] == "a"
        clock.advance(14)
        assert not await b.try_acquire_or_renew(), "the lease has not expired yet"

    run(body)


def test_a_renewing_leader_keeps_the_lease() -> None:
    async def body(client: FakeClient, clock: FakeClock) -> None:
        a, b = elector(client, clock, "a"), elector(client, clock, "b")
        assert await a.try_acquire_or_renew()
        for _ in range(10):
            clock.advance(5)
            assert await a.try_acquire_or_renew()
            assert not await b.try_acquire_or_renew()

    run(body)


def test_a_standby_takes_over_once_the_lease_expires() -> None:
    async def body(client: FakeClient, clock: FakeClock) -> None:
        a, b = elector(client, clock, "a"), elector(client, clock, "b")
        assert await a.try_acquire_or_renew()
        clock.advance(15)
        assert await b.try_acquire_or_renew()
        lease = await client.get(LEASES, name="lock", namespace="kubeflow")
        assert lease["spec"]["holderIdentity"] == "b"
        assert lease["spec"]["leaseTransitions"] == 1
        assert not await a.try_acquire_or_renew(), "the old leader has lost it"

    run(body)


def test_a_leader_that_cannot_renew_gives_up_after_the_deadline() -> None:
    async def body(client: FakeClient, clock: FakeClock) -> None:
        a = elector(client, clock, "a")
        await a.acquire()
        client.inject("get", errors.ApiError("apiserver down", status=503), times=100)
        holding = asyncio.ensure_future(a.hold())
        for _ in range(8):
            await asyncio.sleep(0)
            clock.advance(2)
        with pytest.raises(LostLeadershipError):
            await asyncio.wait_for(holding, 5)
        assert not a.is_leader

    run(body)


def test_release_lets_a_standby_take_over_without_waiting() -> None:
    async def body(client: FakeClient, clock: FakeClock) -> None:
        a, b = elector(client, clock, "a"), elector(client, clock, "b")
        await a.acquire()
        await a.release()
        clock.advance(1)
        assert await b.try_acquire_or_renew()

    run(body)
