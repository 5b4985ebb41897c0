"""One port pool for both kinds across a daemon restart, through the embedded API server.

A PyTorchJob and a TrainJob record every port of a small pool, then the session stops; the
state directory is started again (as ``trainop local up`` adopts its state) with the operator
of one kind only, so the other kind's running job is never reconciled there and a new job of
the first kind is the first to allocate. It must wait (``PortAllocationFailed``): every free
looking port is the other kind's. It gets a port once a job of its own kind is deleted, never
one that the other kind's job recorded. Then the same the other way round (notes 006, 133).
"""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

from tests import polling
from tests.unit.api.builders import manifest
from trainop.api.kinds import kind_info
from trainop.api.trainer import constants as c
from trainop.cluster.kubelet.sim import SimulatedKubelet
from trainop.controller.manager import ManagerOptions
from trainop.controller.trainjob_caches import CLUSTER_TRAINING_RUNTIMES, TRAINJOBS
from trainop.kube.client import Client, Obj
from trainop.kube.clock import Clock
from trainop.kube.resources import EVENTS, Resource, job_resource
from trainop.local import trainer_runtimes
from trainop.local.session import ClusterConfig, LocalCluster
from trainop.local.topology import recorded_ports

PYTORCH = job_resource(kind_info("PyTorchJob"))
POOL = range(31721, 31725)  # four ports, below Linux's ephemeral range: all recorded at first
HOUR = {"sim.trainop.dev/run-seconds": "3600"}  # the simulated pods run until the test ends


def simulated(client: Client, clock: Clock) -> SimulatedKubelet:
    return SimulatedKubelet(client=client, clock=clock)


def session(state: Path, *kinds: str) -> LocalCluster:
    """A local cluster on ``state`` whose operator runs ``kinds`` only."""
    options = ManagerOptions(kinds=kinds)
    config = ClusterConfig(state_dir=state, ports=POOL, manager=options, trainer_runtimes=True)
    return LocalCluster(config, kubelet=simulated)


def pytorchjob(name: str, *, workers: int) -> Obj:
    body = manifest("PyTorchJob", name=name)
    specs = body["spec"]["pytorchReplicaSpecs"]
    for spec in specs.values():
        spec["template"]["metadata"] = {"annotations": dict(HOUR)}
    if workers:
        specs["Worker"]["replicas"] = workers
    else:
        del specs["Worker"]  # a master alone: one port
    return body


def long_torch_runtime() -> Obj:
    """The shipped ``torch-distributed`` runtime whose pods run an hour (simulated)."""
    shipped = next(
        d for d in trainer_runtimes.documents() if d["metadata"]["name"] == "torch-distributed"
    )
    runtime = copy.deepcopy(shipped)
    runtime["metadata"] = {"name": "torch-for-an-hour", "labels": shipped["metadata"]["labels"]}
    node = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]
    node["template"]["metadata"] = {"annotations": dict(HOUR)}
    return runtime


def trainjob(name: str) -> Obj:
    return {  # Torch addresses one endpoint, the rank-0 node: one port
        "apiVersion": c.API_VERSION,
        "kind": c.TRAINJOB,
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"runtimeRef": {"name": "torch-for-an-hour"}, "trainer": {"numNodes": 1}},
    }


async def ports_of(client: Client, resource: Resource, name: str) -> dict[str, int]:
    """The job's recorded ports once it has recorded some."""

    async def probe() -> Any:
        found = recorded_ports(await client.get(resource, name=name, namespace="default"))
        return found or polling.NotYet(found)

    ports: dict[str, int] = await polling.until(probe, timeout=30, what=f"{name}'s ports")
    return ports


async def waits_for_ports(client: Client, resource: Resource, name: str) -> None:
    """``name`` was told it waits for ports, and has recorded none."""

    async def probe() -> Any:
        listed = await client.list(EVENTS, namespace="default")
        told = [
            e["reason"]
            for e in listed.items
            if e["involvedObject"]["name"] == name and e.get("type") == "Warning"
        ]
        return told or polling.NotYet(told)

    told: list[str] = await polling.until(probe, timeout=30, what=f"a warning about {name}")
    assert told == ["PortAllocationFailed"]
    assert recorded_ports(await client.get(resource, name=name, namespace="default")) == {}


def test_after_a_restart_neither_kind_takes_the_other_kinds_recorded_ports(tmp_path: Path) -> None:
    state = tmp_path / "state"

    async def before() -> tuple[set[int], set[int]]:
        async with session(state, "PyTorchJob", c.TRAINJOB) as cluster:
            client = cluster.client
            await client.create(CLUSTER_TRAINING_RUNTIMES, long_torch_runtime())
            await client.create(PYTORCH, pytorchjob("old-v1", workers=2), namespace="default")
            await client.create(TRAINJOBS, trainjob("old-tj"), namespace="default")
            v1 = set((await ports_of(client, PYTORCH, "old-v1")).values())
            tj = set((await ports_of(client, TRAINJOBS, "old-tj")).values())
            assert v1 | tj == set(POOL), "the pool is full"
            return v1, tj

    async def trainjob_first(old_v1: set[int], old_tj: set[int]) -> set[int]:
        async with session(state, c.TRAINJOB) as cluster:  # old-v1 is never reconciled here
            client = cluster.client
            await client.create(TRAINJOBS, trainjob("new-tj"), namespace="default")
            await waits_for_ports(client, TRAINJOBS, "new-tj")
            await client.delete(TRAINJOBS, name="old-tj", namespace="default")
            got = set((await ports_of(client, TRAINJOBS, "new-tj")).values())
            assert got == old_tj, f"{got}: old-tj's released port, none of old-v1's {old_v1}"
            return got

    async def v1_first(old_v1: set[int], new_tj: set[int]) -> None:
        async with session(state, "PyTorchJob") as cluster:  # new-tj is never reconciled here
            client = cluster.client
            await client.create(PYTORCH, pytorchjob("new-v1", workers=0), namespace="default")
            await waits_for_ports(client, PYTORCH, "new-v1")
            await client.delete(PYTORCH, name="old-v1", namespace="default")
            got = set((await ports_of(client, PYTORCH, "new-v1")).values())
            assert len(got) == 1
            assert got <= old_v1, f"{got}: one of old-v1's released ports, not new-tj's {new_tj}"

    old_v1, old_tj = asyncio.run(before())
    new_tj = asyncio.run(trainjob_first(old_v1, old_tj))
    asyncio.run(v1_first(old_v1, new_tj))
