"""The bounded port pool: one range, one owner per port, all-or-nothing, never looping."""

from __future__ import annotations

import asyncio
import socket

import pytest

from trainop.errors import TrainopError
from trainop.local import ports


def pool_of(size: int, *, start: int = 40000) -> ports.PortPool:
    return ports.PortPool(ports=range(start, start + size), is_free=lambda port: True)


def test_the_range_comes_from_the_environment() -> None:
    assert ports.range_from_env({}) == range(20000, 30000)
    assert ports.range_from_env({ports.ENV_RANGE: "31000-31009"}) == range(31000, 31010)
    for bad in ("31000", "b-c", "9-1", "0-10", "1-70000"):
        with pytest.raises(TrainopError, match=ports.ENV_RANGE):
            ports.range_from_env({ports.ENV_RANGE: bad})


def test_owners_get_distinct_ports_and_keep_them() -> None:
    pool = pool_of(10)
    first = asyncio.run(pool.allocate("a", ["a-0", "a-1"]))
    second = asyncio.run(pool.allocate("b", ["b-0"]))
    assert len({*first.values(), *second.values()}) == 3
    again = asyncio.run(pool.allocate("a", ["a-0", "a-1", "a-2"]))
    assert {n: again[n] for n in first} == first, "held names keep their ports"
    assert pool.in_use == 4


def test_exhaustion_allocates_nothing_and_release_makes_room() -> None:
    pool = pool_of(4)
    asyncio.run(pool.allocate("a", ["a-0", "a-1", "a-2"]))
    with pytest.raises(ports.PortsExhaustedError, match=r"2 ports needed, 1 free .*40000-40003"):
        asyncio.run(pool.allocate("b", ["b-0", "b-1"]))
    assert pool.held("b") == {}
    assert pool.in_use == 3
    assert pool.release("a") == 3
    assert sorted(asyncio.run(pool.allocate("b", ["b-0", "b-1"]))) == ["b-0", "b-1"]


def test_a_port_in_use_by_another_program_is_skipped_not_looped_on() -> None:
    busy = socket.socket()
    busy.bind((ports.LOOPBACK, 0))
    busy.listen()
    port = busy.getsockname()[1]
    try:
        pool = ports.PortPool(ports=range(port, port + 1))
        with pytest.raises(ports.PortsExhaustedError):
            asyncio.run(pool.allocate("a", ["a-0"]))
        assert pool.in_use == 0
    finally:
        busy.close()
    assert asyncio.run(pool.allocate("a", ["a-0"])) == {"a-0": port}, "probed again later"


def test_claims_are_refused_for_ports_another_owner_holds() -> None:
    pool = pool_of(10)
    assert pool.claim("a", "a-0", 40001)
    assert not pool.claim("b", "b-0", 40001)
    assert pool.claim("b", "b-0", 12345), "a recorded port outside the range is kept"
    assert asyncio.run(pool.allocate("c", [f"c-{i}" for i in range(9)]))
    assert 40001 not in pool.held("c").values()


def test_a_large_request_yields_to_the_event_loop() -> None:
    async def main() -> int:
        pool = pool_of(10 * ports.CHUNK)
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0)

        task = asyncio.create_task(ticker())
        await asyncio.sleep(0)
        await pool.allocate("a", [f"a-{i}" for i in range(8 * ports.CHUNK)])
        task.cancel()
        return ticks

    assert asyncio.run(main()) >= 7


def test_every_reader_runs_once_before_the_first_allocation() -> None:
    async def main() -> None:
        pool = pool_of(4)
        reads: list[str] = []
        failures = [OSError("the API server is not answering")]

        async def v1_jobs() -> ports.RecordedPorts:
            reads.append("v1")
            if failures:
                raise failures.pop()
            return {"uid-a": {"a-master-0": 40000, "a-worker-0": 40001}}

        async def trainjobs() -> ports.RecordedPorts:
            reads.append("trainjobs")
            return {"uid-t": {"t-node-0-0": 40002}, "uid-stale": {"s-node-0-0": 40001}}

        pool.read_recorded_with(v1_jobs)
        pool.read_recorded_with(trainjobs)
        with pytest.raises(OSError, match="not answering"):
            await pool.allocate("new", ["n-0"])
        assert pool.in_use == 0, "nothing handed out without every kind's record"
        assert await pool.allocate("new", ["n-0"]) == {"n-0": 40003}
        assert pool.held("uid-stale") == {}, "a port already claimed stays its first owner's"
        await pool.allocate("other", [])
        assert reads == ["v1", "v1", "trainjobs"], "a failed reader runs again, then none"
        assert pool.release("uid-a") == 2, "a recorded port goes back when its owner ends"
        assert sorted((await pool.allocate("next", ["x-0", "x-1"])).values()) == [40000, 40001]

    asyncio.run(main())
