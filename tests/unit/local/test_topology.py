"""Local topology: loopback ports allocated once per replica, recorded, and stable."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime

from tests.unit.api.builders import manifest
from trainop.api import manifest as wire
from trainop.api.kinds import kind_info
from trainop.controller.topologies import Pending
from trainop.engine.observed import Observed
from trainop.engine.plan import plan
from trainop.frameworks.registry import framework_for
from trainop.frameworks.topology import LoopbackTopology
from trainop.kube.fake import FakeClient
from trainop.kube.resources import job_resource
from trainop.local.ports import PortPool
from trainop.local.topology import PORTS_ANNOTATION, LocalTopologySource, recorded_ports

PYTORCH = job_resource(kind_info("PyTorchJob"))


def test_ports_are_allocated_recorded_and_then_reused() -> None:
    async def main() -> None:
        client = FakeClient()
        raw = await client.create(PYTORCH, manifest("PyTorchJob"), namespace="default")
        source = LocalTopologySource(client=client)
        job = wire.parse_job(raw)
        assert await source.for_job(job=job, raw=raw) is None, "first pass records, then stops"
        stored = await client.get(PYTORCH, name="job", namespace="default")
        ports = recorded_ports(stored)
        assert sorted(ports) == ["job-master-0", "job-worker-0", "job-worker-1"]
        assert len(set(ports.values())) == 3
        topology = await source.for_job(job=job, raw=stored)
        assert topology is not None
        restarted = LocalTopologySource(client=client)  # a new controller reads the same map
        again = await restarted.for_job(job=job, raw=stored)
        assert again == topology
        assert client.calls.count(("patch", "pytorchjobs")) == 1

    asyncio.run(main())


def test_env_names_loopback_and_the_recorded_port() -> None:
    async def main() -> None:
        client = FakeClient()
        raw = await client.create(PYTORCH, manifest("PyTorchJob"), namespace="default")
        source = LocalTopologySource(client=client)
        await source.for_job(job=wire.parse_job(raw), raw=raw)
        stored = await client.get(PYTORCH, name="job", namespace="default")
        job = wire.parse_job(stored)
        topology = await source.for_job(job=job, raw=stored)
        assert topology is not None
        result = plan(job, Observed(), framework_for("PyTorchJob"), topology, datetime.now(UTC))
        pods = [a.body for a in result.actions if getattr(a, "kind", "") == "Pod"]
        env = {e["name"]: e.get("value") for e in pods[0]["spec"]["containers"][0]["env"]}
        assert env["MASTER_ADDR"] == "127.0.0.1"
        assert int(env["MASTER_PORT"]) == recorded_ports(stored)["job-master-0"]

    asyncio.run(main())


def test_scale_up_keeps_existing_ports_and_adds_new_ones() -> None:
    async def main() -> None:
        client = FakeClient()
        raw = await client.create(PYTORCH, manifest("PyTorchJob"), namespace="default")
        source = LocalTopologySource(client=client)
        await source.for_job(job=wire.parse_job(raw), raw=raw)
        before = recorded_ports(await client.get(PYTORCH, name="job", namespace="default"))
        patch = {"spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 3}}}}
        scaled = await client.patch(PYTORCH, name="job", namespace="default", patch=patch)
        assert await source.for_job(job=wire.parse_job(scaled), raw=scaled) is None
        after = recorded_ports(await client.get(PYTORCH, name="job", namespace="default"))
        assert {k: after[k] for k in before} == before
        assert "job-worker-2" in after
        assert after["job-worker-2"] not in before.values()

    asyncio.run(main())


def test_an_unreadable_annotation_is_replaced() -> None:
    obj = manifest("JAXJob")
    obj["metadata"]["annotations"] = {PORTS_ANNOTATION: "not json"}
    assert recorded_ports(obj) == {}
    obj["metadata"]["annotations"] = {PORTS_ANNOTATION: json.dumps({"job-worker-0": 1234})}
    assert recorded_ports(obj) == {"job-worker-0": 1234}


def workers(count: int, *, name: str = "job", suspend: bool = False) -> dict[str, object]:
    body = manifest("PyTorchJob", name=name)
    body["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = count
    if suspend:
        body["spec"]["runPolicy"] = {"suspend": True}
    return body


def small_pool(size: int) -> PortPool:
    return PortPool(ports=range(41000, 41000 + size), is_free=lambda port: True)


def test_a_suspended_job_of_30000_workers_allocates_nothing() -> None:
    async def main() -> None:
        client = FakeClient()
        raw = await client.create(PYTORCH, workers(30_000, suspend=True), namespace="default")
        source = LocalTopologySource(client=client)
        async with asyncio.timeout(5):
            topology = await source.for_job(job=wire.parse_job(raw), raw=raw)
        assert topology == LoopbackTopology(ports={})
        assert source.pool.in_use == 0
        assert ("patch", "pytorchjobs") not in client.calls

    asyncio.run(main())


def test_exhaustion_waits_with_one_warning_then_proceeds_after_release() -> None:
    async def main() -> None:
        client = FakeClient()
        source = LocalTopologySource(client=client, pool=small_pool(4))
        first = await client.create(PYTORCH, workers(2, name="a"), namespace="default")
        assert await source.for_job(job=wire.parse_job(first), raw=first) is None
        second = await client.create(PYTORCH, workers(2, name="b"), namespace="default")
        waiting = await source.for_job(job=wire.parse_job(second), raw=second)
        assert isinstance(waiting, Pending)
        assert waiting.event is not None
        assert waiting.event.reason == "PortAllocationFailed"
        assert "PyTorchJob default/b" in waiting.event.message
        assert "41000-41003" in waiting.event.message
        again = await source.for_job(job=wire.parse_job(second), raw=second)
        assert isinstance(again, Pending)
        assert again.event is None, "one warning per wait"
        await source.forget(kind="PyTorchJob", namespace="default", name="a")
        assert await source.for_job(job=wire.parse_job(second), raw=second) is None
        stored = await client.get(PYTORCH, name="b", namespace="default")
        assert sorted(recorded_ports(stored)) == ["b-master-0", "b-worker-0", "b-worker-1"]

    asyncio.run(main())


def test_a_finished_job_gives_its_ports_back() -> None:
    async def main() -> None:
        client = FakeClient()
        source = LocalTopologySource(client=client, pool=small_pool(3))
        raw = await client.create(PYTORCH, workers(2), namespace="default")
        await source.for_job(job=wire.parse_job(raw), raw=raw)
        assert source.pool.in_use == 3
        stored = await client.get(PYTORCH, name="job", namespace="default")
        stored["status"] = {"conditions": [{"type": "Succeeded", "status": "True"}]}
        topology = await source.for_job(job=wire.parse_job(stored), raw=stored)
        assert isinstance(topology, LoopbackTopology)
        assert source.pool.in_use == 0

    asyncio.run(main())


def test_a_resumed_job_gets_new_ports_only_for_those_taken_meanwhile() -> None:
    async def main() -> None:
        client = FakeClient()
        source = LocalTopologySource(client=client, pool=small_pool(4))
        raw = await client.create(PYTORCH, workers(1, name="a"), namespace="default")
        await source.for_job(job=wire.parse_job(raw), raw=raw)
        before = recorded_ports(await client.get(PYTORCH, name="a", namespace="default"))
        suspended = await client.patch(
            PYTORCH, name="a", namespace="default", patch={"spec": {"runPolicy": {"suspend": True}}}
        )
        await source.for_job(job=wire.parse_job(suspended), raw=suspended)
        assert source.pool.in_use == 0, "a suspended job holds no ports"
        assert source.pool.claim("another-job", "b-0", before["a-master-0"])
        resumed = await client.patch(
            PYTORCH,
            name="a",
            namespace="default",
            patch={"spec": {"runPolicy": {"suspend": False}}},
        )
        assert await source.for_job(job=wire.parse_job(resumed), raw=resumed) is None
        after = recorded_ports(await client.get(PYTORCH, name="a", namespace="default"))
        assert after["a-worker-0"] == before["a-worker-0"]
        assert after["a-master-0"] != before["a-master-0"]
        assert sorted(after) == sorted(before)

    asyncio.run(main())


def test_14000_replicas_over_a_daemon_life_never_exhaust_the_pool() -> None:
    async def main() -> None:
        client = FakeClient()
        source = LocalTopologySource(client=client)  # the default range: 10,000 ports
        total = 0
        for turn in range(15):
            name = f"j{turn}"
            raw = await client.create(PYTORCH, workers(999, name=name), namespace="default")
            assert await source.for_job(job=wire.parse_job(raw), raw=raw) is None, turn
            total += len(recorded_ports(await client.get(PYTORCH, name=name, namespace="default")))
            await client.delete(PYTORCH, name=name, namespace="default")
            await source.forget(kind="PyTorchJob", namespace="default", name=name)
        assert total == 15_000
        assert source.pool.in_use == 0

    asyncio.run(main())


def test_an_invalid_job_allocates_nothing_and_waits_with_the_validation_warning() -> None:
    async def main() -> None:
        client = FakeClient()
        source = LocalTopologySource(client=client, pool=small_pool(8))
        body = workers(2)
        body["spec"]["pytorchReplicaSpecs"]["Master"]["replicas"] = 0
        raw = await client.create(PYTORCH, body, namespace="default")
        waiting = await source.for_job(job=wire.parse_job(raw), raw=raw)
        assert isinstance(waiting, Pending)
        assert waiting.retry_after is None, "only a change of the job can help"
        assert waiting.event is not None
        assert waiting.event.reason == "PyTorchJobFailedValidation"
        assert source.pool.in_use == 0
        assert ("patch", "pytorchjobs") not in client.calls

    asyncio.run(main())


def test_a_job_larger_than_the_whole_range_waits_without_listing_its_replicas() -> None:
    async def main() -> None:
        client = FakeClient()
        source = LocalTopologySource(client=client, pool=small_pool(4))
        raw = await client.create(PYTORCH, workers(1_000_000_000), namespace="default")
        async with asyncio.timeout(5):
            waiting = await source.for_job(job=wire.parse_job(raw), raw=raw)
        assert isinstance(waiting, Pending)
        assert waiting.retry_after is None, "only a smaller job (or range) can help"
        assert waiting.event is not None
        assert waiting.event.reason == "PortAllocationFailed"
        assert "1000000001 ports needed, the local port range has 4" in waiting.event.message
        assert source.pool.in_use == 0

    asyncio.run(main())


def test_a_restarted_source_never_hands_out_ports_a_running_job_recorded() -> None:
    async def main() -> None:
        client = FakeClient()
        before = LocalTopologySource(client=client, pool=small_pool(5))
        running = await client.create(PYTORCH, workers(2, name="a"), namespace="default")
        await before.for_job(job=wire.parse_job(running), raw=running)
        taken = set(
            recorded_ports(await client.get(PYTORCH, name="a", namespace="default")).values()
        )
        restarted = LocalTopologySource(client=client, pool=small_pool(5))
        new = await client.create(PYTORCH, workers(1, name="b"), namespace="default")
        assert await restarted.for_job(job=wire.parse_job(new), raw=new) is None
        got = set(recorded_ports(await client.get(PYTORCH, name="b", namespace="default")).values())
        assert not got & taken, "job a, not reconciled yet, keeps its ports"
        third = await client.create(PYTORCH, workers(1, name="c"), namespace="default")
        assert isinstance(await restarted.for_job(job=wire.parse_job(third), raw=third), Pending)

    asyncio.run(main())
