"""The GPU pool: devices held per container; a machine without GPUs ignores GPU requests."""

from __future__ import annotations

import asyncio

from trainop.cluster.kubelet import gpus


def test_devices_are_taken_exclusively_and_given_back() -> None:
    async def scenario() -> None:
        pool = gpus.GpuPool(("0", "1"))
        assert pool.take(1) == ["0"]
        assert pool.take(2) is None  # one free
        assert pool.take(0) == []
        pool.give_back(["0"])
        assert pool.take(2) == ["1", "0"]
        assert pool.variables(["1", "0"]) == {"CUDA_VISIBLE_DEVICES": "1,0"}
        assert pool.variables([]) == {"CUDA_VISIBLE_DEVICES": ""}

    asyncio.run(scenario())


def test_without_gpus_a_request_holds_nothing_instead_of_waiting_forever() -> None:
    async def scenario() -> None:
        pool = gpus.GpuPool(())
        assert pool.take(2) == []
        assert pool.variables([]) == {}

    asyncio.run(scenario())


def test_only_the_devices_the_machine_has_go_to_a_container_runtime() -> None:
    """``--gpus 2`` on a machine with one GPU: two slots to hold, one device to hand over."""
    pool = gpus.GpuPool(("0", "1"), present=("0",))
    assert pool.present_of(["1", "0"]) == ("0",)
    assert pool.variables(["1", "0"]) == {"CUDA_VISIBLE_DEVICES": "1,0"}  # host processes
    assert gpus.GpuPool(("0", "1")).present_of(["1"]) == ("1",)  # present by default
