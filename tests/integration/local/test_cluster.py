"""A local cluster (server + controller + simulated kubelet) runs a job and keeps its state."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from tests import polling
from tests.unit.api.builders import manifest
from trainop.api.kinds import kind_info
from trainop.cluster.kubelet.sim import SimulatedKubelet
from trainop.controller.manager import Manager, ManagerOptions
from trainop.kube.client import Client
from trainop.kube.clock import Clock, LoopClock
from trainop.kube.resources import PODS, job_resource
from trainop.local.session import ClusterConfig, LocalCluster
from trainop.local.topology import recorded_ports

PYTORCH = job_resource(kind_info("PyTorchJob"))


def simulated(client: Client, clock: Clock) -> SimulatedKubelet:
    return SimulatedKubelet(client=client, clock=clock)


async def wait_for_condition(client: Client, name: str, condition: str) -> dict[str, object]:
    async def probe() -> dict[str, object] | polling.NotYet:
        job = await client.get(PYTORCH, name=name, namespace="default")
        conditions = (job.get("status") or {}).get("conditions") or []
        if any(c["type"] == condition and c["status"] == "True" for c in conditions):
            return job
        return polling.NotYet(conditions)

    found: dict[str, object] = await polling.until(probe, timeout=30, what=f"{name} {condition}")
    return found


def test_a_job_runs_with_loopback_addresses_and_survives_a_restart(tmp_path: Path) -> None:
    config = ClusterConfig(state_dir=tmp_path / "state")

    async def first() -> None:
        async with LocalCluster(config, kubelet=simulated) as cluster:
            await cluster.client.create(
                PYTORCH, manifest("PyTorchJob", name="p"), namespace="default"
            )
            job = await wait_for_condition(cluster.client, "p", "Succeeded")
            ports = recorded_ports(job)
            assert sorted(ports) == ["p-master-0", "p-worker-0", "p-worker-1"]
            pod = await cluster.client.get(PODS, name="p-worker-1", namespace="default")
            env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
            assert env["MASTER_ADDR"] == "127.0.0.1"
            assert int(env["MASTER_PORT"]) == ports["p-master-0"]
            assert cluster.kubeconfig.stat().st_mode & 0o777 == 0o600

    async def second() -> None:
        async with LocalCluster(config, kubelet=simulated) as cluster:
            listed = await cluster.client.list(PYTORCH, namespace="default")
            assert [j["metadata"]["name"] for j in listed.items] == ["p"]
            await wait_for_condition(cluster.client, "p", "Succeeded")

    asyncio.run(first())
    asyncio.run(second())


def test_without_its_operator_the_cluster_serves_an_operator_run_elsewhere(
    tmp_path: Path,
) -> None:
    """``operator=False`` (``local up --no-operator``): no embedded controller; a Manager run
    beside the cluster, as ``trainop operator`` would be, reconciles the job alone: its pods
    carry that operator's cluster topology (the master pod's name), never the loopback one."""
    config = ClusterConfig(state_dir=tmp_path / "state", operator=False)

    async def body() -> None:
        async with LocalCluster(config, kubelet=simulated) as cluster:
            assert cluster.manager is None
            await cluster.client.create(
                PYTORCH, manifest("PyTorchJob", name="p"), namespace="default"
            )
            outside = Manager(client=cluster.client, clock=LoopClock(), options=ManagerOptions())
            running = asyncio.create_task(outside.run())
            try:
                await wait_for_condition(cluster.client, "p", "Succeeded")
            finally:
                running.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await running
            pod = await cluster.client.get(PODS, name="p-worker-1", namespace="default")
            env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
            assert (env["MASTER_ADDR"], env["MASTER_PORT"]) == ("p-master-0", "23456")

    asyncio.run(body())
