"""One pool, two kinds, one restart: the v1 source and the TrainJob source register a
recorded-ports reader each with the pool they share, and the pool runs both before it hands
out or re-claims a port. So a restarted daemon never gives a new job of either kind a port that
a running job of the other kind recorded, whichever kind allocates first (notes 006 and 133);
ports of a job that ended or was deleted still come back."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.unit.api.builders import manifest
from trainop.api import manifest as wire
from trainop.api.kinds import kind_info
from trainop.api.trainer import constants as c
from trainop.controller.topologies import Pending
from trainop.controller.trainjob_caches import TRAINJOBS
from trainop.engine.trainer.network import PodNetwork
from trainop.kube.fake import FakeClient
from trainop.kube.resources import job_resource
from trainop.local import trainer_runtimes
from trainop.local.ports import PortPool
from trainop.local.topology import LocalTopologySource, recorded_ports
from trainop.local.trainjob_topology import LocalTrainJobNetworks

PYTORCH = job_resource(kind_info("PyTorchJob"))
RUNTIME = next(
    d for d in trainer_runtimes.documents() if d["metadata"]["name"] == "torch-distributed"
)
RECORDED = 4  # before the restart: a PyTorchJob of 3 replicas, a TrainJob of 1 endpoint


def pytorchjob(name: str, *, workers: int = 2) -> dict[str, Any]:
    body = manifest("PyTorchJob", name=name)  # a master and `workers` workers: 1 + n ports
    body["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = workers
    if not workers:  # a master alone (zero Worker replicas is invalid)
        del body["spec"]["pytorchReplicaSpecs"]["Worker"]
    return body


def trainjob(name: str) -> dict[str, Any]:
    return {  # the Torch plugin addresses one endpoint, the rank-0 node: one port
        "apiVersion": c.API_VERSION,
        "kind": c.TRAINJOB,
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"numNodes": 2}},
    }


class Daemon:
    """What a local session wires: both sources on one pool (``local.session``)."""

    def __init__(self, client: FakeClient, size: int) -> None:
        self.pool = PortPool(ports=range(21000, 21000 + size), is_free=lambda port: True)
        self.v1 = LocalTopologySource(client=client, pool=self.pool)
        self.trainjobs = LocalTrainJobNetworks(client=client, pool=self.pool)
        self._client = client

    async def run_v1(self, name: str, *, workers: int = 2) -> Any:
        """Create a PyTorchJob and plan it once; its recorded ports (or the Pending answer)."""
        raw = await self._client.create(
            PYTORCH, pytorchjob(name, workers=workers), namespace="default"
        )
        answer = await self.v1.for_job(job=wire.parse_job(raw), raw=raw)
        if answer is not None:
            return answer
        return recorded_ports(await self._client.get(PYTORCH, name=name, namespace="default"))

    async def run_trainjob(self, name: str) -> Any:
        await self._client.create(TRAINJOBS, trainjob(name), namespace="default")
        return await self.plan_trainjob(name)

    async def run_new(self, kind: str) -> Any:
        """A new job of ``kind``: a PyTorchJob of 2 replicas or a TrainJob of 1 endpoint."""
        if kind == "v1":
            return await self.run_v1("new-v1", workers=1)
        return await self.run_trainjob("new-tj")

    async def plan_trainjob(self, name: str) -> Any:
        raw = await self._client.get(TRAINJOBS, name=name, namespace="default")
        answer = await self.trainjobs.for_trainjob(raw=raw, runtime=RUNTIME)
        if answer is not None:
            return answer
        raw = await self._client.get(TRAINJOBS, name=name, namespace="default")
        return recorded_ports(raw)


async def before_restart(client: FakeClient, size: int) -> set[int]:
    """A PyTorchJob and a TrainJob run and record their ports; the daemon stops."""
    first = Daemon(client, size)
    v1 = await first.run_v1("old-v1")
    tj = await first.run_trainjob("old-tj")
    recorded = set(v1.values()) | set(tj.values())
    assert len(recorded) == RECORDED
    return recorded


@pytest.mark.parametrize("first", ["v1", "trainjob"])
def test_new_jobs_of_either_kind_avoid_every_recorded_port(first: str) -> None:
    async def main() -> None:
        client = FakeClient()
        recorded = await before_restart(client, RECORDED + 3)
        daemon = Daemon(client, RECORDED + 3)  # restarted: an empty pool, nothing reconciled
        order = [first, "trainjob" if first == "v1" else "v1"]
        got = [await daemon.run_new(kind) for kind in order]
        new = [port for ports in got for port in ports.values()]
        assert len(set(new)) == 3, new
        assert not set(new) & recorded, f"{new} reuses a port of {sorted(recorded)}"
        assert daemon.pool.in_use == RECORDED + 3
        full = await daemon.run_v1("third", workers=0)
        assert isinstance(full, Pending), "the pool is full"
        assert full.event is not None
        assert full.event.reason == "PortAllocationFailed"

    asyncio.run(main())


def test_a_full_pool_after_a_restart_makes_a_trainjob_wait_until_the_v1_job_is_deleted() -> None:
    async def main() -> None:
        client = FakeClient()
        recorded = await before_restart(client, RECORDED)
        daemon = Daemon(client, RECORDED)
        waiting = await daemon.run_trainjob("new-tj")
        assert isinstance(waiting, Pending), "no free port: the v1 job's are not free"
        assert waiting.event is not None
        assert waiting.event.reason == "PortAllocationFailed"
        await client.delete(PYTORCH, name="old-v1", namespace="default")
        await daemon.v1.forget(kind="PyTorchJob", namespace="default", name="old-v1")
        got = await daemon.plan_trainjob("new-tj")
        assert isinstance(got, dict)
        old_tj = await client.get(TRAINJOBS, name="old-tj", namespace="default")
        assert set(got.values()) <= recorded - set(recorded_ports(old_tj).values()), "old-v1's"

    asyncio.run(main())


def test_a_full_pool_after_a_restart_makes_a_v1_job_wait_until_the_trainjob_ends() -> None:
    async def main() -> None:
        client = FakeClient()
        await before_restart(client, RECORDED)
        daemon = Daemon(client, RECORDED)
        waiting = await daemon.run_v1("new-v1", workers=0)
        assert isinstance(waiting, Pending), "no free port: the TrainJob's is not free"
        assert waiting.event is not None
        assert waiting.event.reason == "PortAllocationFailed"
        old = await client.get(TRAINJOBS, name="old-tj", namespace="default")
        old["status"] = {"conditions": [{"type": "Complete", "status": "True"}]}
        assert isinstance(await daemon.trainjobs.for_trainjob(raw=old, runtime=RUNTIME), PodNetwork)
        raw = await client.get(PYTORCH, name="new-v1", namespace="default")
        assert await daemon.v1.for_job(job=wire.parse_job(raw), raw=raw) is None
        got = recorded_ports(await client.get(PYTORCH, name="new-v1", namespace="default"))
        assert list(got.values()) == list(recorded_ports(old).values()), "the ended one's port"

    asyncio.run(main())
