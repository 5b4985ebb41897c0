"""Local ports through a running cluster: huge suspended jobs, exhaustion, release and reuse."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from tests import polling
from tests.unit.api.builders import manifest
from trainop.api.kinds import kind_info
from trainop.cluster.apiserver import Limits
from trainop.cluster.kubelet.sim import SimulatedKubelet
from trainop.kube.client import Client
from trainop.kube.clock import Clock
from trainop.kube.resources import EVENTS, PODS, job_resource
from trainop.local.session import ClusterConfig, LocalCluster
from trainop.local.topology import recorded_ports

PYTORCH = job_resource(kind_info("PyTorchJob"))
POOL = range(31711, 31714)  # three ports: below Linux's ephemeral range


def simulated(client: Client, clock: Clock) -> SimulatedKubelet:
    return SimulatedKubelet(client=client, clock=clock)


def job(name: str, *, workers: int = 2, run_seconds: float = 0.0, suspend: bool = False) -> Any:
    body = manifest("PyTorchJob", name=name)
    for spec in body["spec"]["pytorchReplicaSpecs"].values():
        spec["template"]["metadata"] = {
            "annotations": {"sim.trainop.dev/run-seconds": str(run_seconds)}
        }
    body["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = workers
    if suspend:
        body["spec"]["runPolicy"] = {"suspend": True}
    return body


async def until(client: Client, name: str, condition: str, *, timeout: float = 30) -> Any:
    """The job once its ``condition`` is True."""

    async def probe() -> Any:
        found = await client.get(PYTORCH, name=name, namespace="default")
        conditions = (found.get("status") or {}).get("conditions") or []
        if any(c["type"] == condition and c["status"] == "True" for c in conditions):
            return found
        return polling.NotYet(conditions)

    return await polling.until(probe, timeout=timeout, what=f"{name} {condition}")


async def warnings_about(client: Client, name: str) -> list[Any]:
    listed = await client.list(EVENTS, namespace="default")
    return [
        e
        for e in listed.items
        if e["involvedObject"]["name"] == name and e.get("type") == "Warning"
    ]


def test_a_suspended_job_of_30000_workers_leaves_the_server_answering(tmp_path: Path) -> None:
    async def main() -> None:
        unlimited = Limits(max_replicas_per_job=None, max_pods=None)  # admission's ceiling off
        config = ClusterConfig(state_dir=tmp_path / "state", limits=unlimited)
        async with LocalCluster(config, kubelet=simulated) as cluster:
            client = cluster.client
            await client.create(
                PYTORCH, job("huge", workers=30_000, suspend=True), namespace="default"
            )
            slowest = 0.0
            for _ in range(20):
                started = time.monotonic()
                async with asyncio.timeout(5):
                    await client.get(PYTORCH, name="huge", namespace="default")
                slowest = max(slowest, time.monotonic() - started)
            stored = await until(client, "huge", "Suspended")
            assert recorded_ports(stored) == {}, "a suspended job allocates nothing"
            assert (await client.list(PODS, namespace="default")).items == []
            assert slowest < 2.0

    asyncio.run(main())


def test_exhausted_ports_make_a_job_wait_with_a_warning_until_released(tmp_path: Path) -> None:
    async def main() -> None:
        config = ClusterConfig(state_dir=tmp_path / "state", ports=POOL)
        async with LocalCluster(config, kubelet=simulated) as cluster:
            client = cluster.client
            await client.create(PYTORCH, job("first", run_seconds=3600), namespace="default")
            await until(client, "first", "Running")
            await client.create(PYTORCH, job("second"), namespace="default")
            found = await polling.until(
                lambda: warnings_about(client, "second"), timeout=30, what="a warning about second"
            )
            assert found[0]["reason"] == "PortAllocationFailed"
            assert "31711-31713" in found[0]["message"]
            waiting = await until(client, "second", "Created")
            assert [c["type"] for c in waiting["status"]["conditions"]] == ["Created"]
            assert recorded_ports(waiting) == {}
            await client.delete(PYTORCH, name="first", namespace="default")
            done = await until(client, "second", "Succeeded")
            assert set(recorded_ports(done).values()) == set(POOL)
            for turn in range(4):  # 18 replicas through a pool of 3, one job at a time
                await client.create(PYTORCH, job(f"turn-{turn}"), namespace="default")
                await until(client, f"turn-{turn}", "Succeeded")
                await client.delete(PYTORCH, name=f"turn-{turn}", namespace="default")

    asyncio.run(main())
