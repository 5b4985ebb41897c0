"""The local Node: registered with the machine's capacity, kept Ready, Unknown once stopped."""

from __future__ import annotations

import asyncio

from tests.polling import NotYet, until
from trainop.cluster.kubelet import node
from trainop.kube.clock import FakeClock
from trainop.kube.fake import FakeClient
from trainop.kube.resources import LEASES


async def _beaten(status: node.NodeStatus, clock: FakeClock, beats: int) -> None:
    """Until the node has beaten ``beats`` times and waits on the clock for the next beat."""

    def probe() -> bool | NotYet:
        seen = {"beats": status.beats, "timers": clock.pending}
        return seen == {"beats": beats, "timers": 1} or NotYet(seen)

    await until(probe, timeout=5, what=f"beat {beats} done", interval=0)


def _ready(obj: dict[str, object]) -> dict[str, str]:
    status = obj["status"]
    assert isinstance(status, dict)
    return next(c for c in status["conditions"] if c["type"] == "Ready")


def test_node_is_registered_beats_and_goes_unknown() -> None:
    asyncio.run(_registered_beats_and_goes_unknown())


async def _registered_beats_and_goes_unknown() -> None:
    client, clock = FakeClient(), FakeClock()
    status = node.NodeStatus(
        client,
        name="trainop-local",
        capacity=node.Capacity(cpus=8, memory_bytes=16 * 2**30, gpus=2),
        host_ip="127.0.0.1",
        clock=clock,
        interval=10,
    )
    task = asyncio.create_task(status.run())
    await _beaten(status, clock, 1)
    made = await client.get(node.NODES, name="trainop-local")
    assert made["status"]["capacity"] == {
        "cpu": "8",
        "memory": "16777216Ki",
        "pods": "110",
        "ephemeral-storage": "0",
        "nvidia.com/gpu": "2",
    }
    assert made["status"]["allocatable"] == made["status"]["capacity"]
    assert _ready(made)["status"] == "True"
    assert _ready(made)["lastHeartbeatTime"] == "2026-01-01T00:00:00Z"
    clock.advance(10)
    await _beaten(status, clock, 2)
    beat = await client.get(node.NODES, name="trainop-local")
    assert _ready(beat)["lastHeartbeatTime"] == "2026-01-01T00:00:10Z"
    assert _ready(beat)["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    assert status.beats == 2
    lease = await client.get(LEASES, name="trainop-local", namespace="kube-node-lease")
    assert lease["spec"]["holderIdentity"] == "trainop-local"
    assert lease["spec"]["renewTime"] == "2026-01-01T00:00:10.000000Z"
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    stopped = await client.get(node.NODES, name="trainop-local")
    assert _ready(stopped)["status"] == "Unknown"
    assert _ready(stopped)["reason"] == "NodeStatusUnknown"


def test_a_node_left_by_an_earlier_run_is_taken_over() -> None:
    asyncio.run(_taken_over())


async def _taken_over() -> None:
    client, clock = FakeClient(), FakeClock()
    old = node.node_object("n", node.Capacity(cpus=1, memory_bytes=2**30), clock.now(), "1.2.3.4")
    old["status"]["conditions"] = node.conditions(clock.now(), ready="Unknown", since="x")
    await client.create(node.NODES, old)
    status = node.NodeStatus(
        client, name="n", capacity=node.Capacity(cpus=4, memory_bytes=2**30), host_ip="127.0.0.1",
        clock=clock,
    )  # fmt: skip
    task = asyncio.create_task(status.run())
    await _beaten(status, clock, 1)
    taken = await client.get(node.NODES, name="n")
    assert _ready(taken)["status"] == "True"
    assert taken["status"]["capacity"]["cpu"] == "4"
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


def test_fractional_cpus_are_millicores() -> None:
    assert node.Capacity(cpus=2.5, memory_bytes=2048).resources()["cpu"] == "2500m"
    assert node.Capacity(cpus=4.0, memory_bytes=2048).resources()["cpu"] == "4"
    assert node.Capacity(cpus=4.0, memory_bytes=2048).resources()["memory"] == "2Ki"
    assert "nvidia.com/gpu" not in node.Capacity(cpus=1, memory_bytes=0).resources()
