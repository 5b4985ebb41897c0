"""The shared polling helper: returns the probe's truthy value; on the deadline, fails with
the probe's last value in the message (sync on an injected clock, async on the loop's)."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from tests.polling import NotYet, until, wait_for


class Ticking:
    """A clock that moves only when ``sleep`` is called: the sync deadline without waiting."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_wait_for_returns_the_first_truthy_value() -> None:
    answers = iter([None, 0, {"phase": "Running"}, "later"])
    time = Ticking()
    found = wait_for(lambda: next(answers), timeout=10, clock=time.clock, sleep=time.sleep)
    assert found == {"phase": "Running"}
    assert time.slept == [0.05, 0.05]


def test_wait_for_fails_at_the_deadline_with_the_last_value() -> None:
    counter = itertools.count()
    time = Ticking()
    with pytest.raises(AssertionError) as failed:
        wait_for(
            lambda: NotYet({"seen": next(counter)}),
            timeout=1,
            interval=0.25,
            what="three pods",
            clock=time.clock,
            sleep=time.sleep,
        )
    assert str(failed.value) == "three pods: not true within 1 s; last value: {'seen': 4}"
    assert time.now == 1.0


def test_wait_for_probes_once_even_with_no_time() -> None:
    time = Ticking()
    assert wait_for(lambda: "ready", timeout=0, clock=time.clock, sleep=time.sleep) == "ready"
    with pytest.raises(AssertionError, match=r"last value: False$"):
        wait_for(lambda: False, timeout=0, clock=time.clock, sleep=time.sleep)
    assert time.slept == []


def test_a_long_last_value_is_cut_in_the_message() -> None:
    time = Ticking()
    with pytest.raises(AssertionError) as failed:
        wait_for(lambda: NotYet("x" * 5000), timeout=0, clock=time.clock, sleep=time.sleep)
    assert str(failed.value).endswith("... (5002 characters)")
    assert len(str(failed.value)) < 2100


def test_until_awaits_an_async_probe_and_returns_its_value() -> None:
    answers = iter([[], [], ["a", "b"]])

    async def probe() -> list[str]:
        await asyncio.sleep(0)
        return next(answers)

    assert asyncio.run(until(probe, timeout=5, interval=0)) == ["a", "b"]


def test_until_takes_a_plain_probe_too() -> None:
    async def main() -> str:
        event = asyncio.Event()
        asyncio.get_running_loop().call_soon(event.set)
        return await until(lambda: event.is_set() and "set", timeout=5)

    assert asyncio.run(main()) == "set"


def test_until_fails_at_the_deadline_with_the_last_value() -> None:
    counter = itertools.count()

    async def probe() -> NotYet:
        return NotYet({"restartCount": next(counter) and 0})

    with pytest.raises(AssertionError) as failed:
        asyncio.run(until(probe, timeout=0.05, what="a restart"))
    assert str(failed.value) == (
        "a restart: not true within 0.05 s; last value: {'restartCount': 0}"
    )


def test_until_bounds_a_probe_that_never_answers() -> None:
    async def hangs() -> bool:
        await asyncio.Event().wait()
        return True

    with pytest.raises(AssertionError, match=r"^the condition: .*; last value: 'no answer yet'$"):
        asyncio.run(until(hangs, timeout=0.05))


def test_until_lets_a_probe_s_own_timeout_through() -> None:
    async def times_out() -> bool:
        raise TimeoutError("the probe's own")

    with pytest.raises(TimeoutError, match="the probe's own"):
        asyncio.run(until(times_out, timeout=5))
