"""Local topology: loopback ports allocated once per replica, recorded, and stable."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime

from tests.unit.api.builders import manifest
from trainop.api import manifest as wire
from trainop.api.kinds import kind_info
from trainop.engine.observed import Observed
from trainop.engine.plan import plan
from trainop.frameworks.registry import framework_for
from trainop.kube.fake import FakeClient
from trainop.kube.resources import job_resource
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
