"""TrainJobs' local addresses (note 133): loopback and a port per addressed endpoint, recorded
on the TrainJob, never shared between two TrainJobs (or a v1 job), released when it ends."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.unit.engine.trainer.builders import NOW, env_by_name, keys, main_container
from trainop.api.trainer import constants as c
from trainop.controller.topologies import Pending
from trainop.controller.trainjob_caches import TRAINJOBS
from trainop.engine.trainer.network import PodNetwork
from trainop.engine.trainer.plan import Observed, plan
from trainop.kube.fake import FakeClient
from trainop.local import trainer_runtimes
from trainop.local.ports import PortPool
from trainop.local.topology import PORTS_ANNOTATION, LocalTopologySource, recorded_ports
from trainop.local.trainjob_topology import LocalTrainJobNetworks

RUNTIMES = {d["metadata"]["name"]: d for d in trainer_runtimes.documents()}


def trainjob(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": c.API_VERSION,
        "kind": c.TRAINJOB,
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"numNodes": 2}, **spec},
    }


def test_two_trainjobs_get_distinct_recorded_ports_that_stay_the_same() -> None:
    async def main() -> None:
        client = FakeClient()
        source = LocalTrainJobNetworks(client=client, pool=PortPool(ports=range(21000, 21010)))
        runtime = RUNTIMES["torch-distributed"]
        a = await client.create(TRAINJOBS, trainjob("a"), namespace="default")
        b = await client.create(TRAINJOBS, trainjob("b"), namespace="default")
        assert await source.for_trainjob(raw=a, runtime=runtime) is None, "records, then stops"
        assert await source.for_trainjob(raw=b, runtime=runtime) is None
        a = await client.get(TRAINJOBS, name="a", namespace="default")
        b = await client.get(TRAINJOBS, name="b", namespace="default")
        ports_a, ports_b = recorded_ports(a), recorded_ports(b)
        assert list(ports_a) == ["a-node-0-0"]
        assert list(ports_b) == ["b-node-0-0"]
        assert ports_a["a-node-0-0"] != ports_b["b-node-0-0"]
        network = await source.for_trainjob(raw=a, runtime=runtime)
        assert network == PodNetwork(address="127.0.0.1", ports=ports_a)
        restarted = LocalTrainJobNetworks(client=client, pool=PortPool(ports=range(21000, 21010)))
        assert await restarted.for_trainjob(raw=a, runtime=runtime) == network
        assert client.calls.count(("patch", "trainjobs")) == 2

    asyncio.run(main())


def test_the_plan_names_loopback_and_the_recorded_port() -> None:
    async def main() -> None:
        client = FakeClient()
        source = LocalTrainJobNetworks(client=client, pool=PortPool(ports=range(21000, 21010)))
        runtime = RUNTIMES["torch-distributed"]
        raw = await client.create(TRAINJOBS, trainjob("a"), namespace="default")
        await source.for_trainjob(raw=raw, runtime=runtime)
        raw = await client.get(TRAINJOBS, name="a", namespace="default")
        network = await source.for_trainjob(raw=raw, runtime=runtime)
        assert isinstance(network, PodNetwork)
        result = plan(
            raw, runtime, observed=Observed(), now=NOW, new_ssh_keys=keys, network=network
        )
        jobset = next(o for o in result.apply if o["kind"] == "JobSet")
        env = env_by_name(main_container(jobset, "node"))
        assert env["PET_MASTER_ADDR"] == "127.0.0.1"
        assert int(env["PET_MASTER_PORT"]) == recorded_ports(raw)["a-node-0-0"]

    asyncio.run(main())


def test_ports_are_shared_with_v1_jobs_and_released_when_the_trainjob_ends() -> None:
    async def main() -> None:
        client = FakeClient()
        pool = PortPool(ports=range(21000, 21001))  # one port
        source = LocalTrainJobNetworks(client=client, pool=pool)
        LocalTopologySource(client=client, pool=pool)  # the v1 source shares the pool
        runtime = RUNTIMES["torch-distributed"]
        a = await client.create(TRAINJOBS, trainjob("a"), namespace="default")
        b = await client.create(TRAINJOBS, trainjob("b"), namespace="default")
        assert await source.for_trainjob(raw=a, runtime=runtime) is None
        waiting = await source.for_trainjob(raw=b, runtime=runtime)
        assert isinstance(waiting, Pending)
        assert waiting.event is not None
        assert waiting.event.reason == "PortAllocationFailed"
        again = await source.for_trainjob(raw=b, runtime=runtime)
        assert isinstance(again, Pending)
        assert again.event is None, "one event per wait"
        a = await client.get(TRAINJOBS, name="a", namespace="default")
        a["status"] = {"conditions": [{"type": "Complete", "status": "True"}]}
        finished = await source.for_trainjob(raw=a, runtime=runtime)
        assert isinstance(finished, PodNetwork)
        assert pool.in_use == 0
        assert await source.for_trainjob(raw=b, runtime=runtime) is None, "b gets the port"
        await source.forget_trainjob(namespace="default", name="b")
        assert pool.in_use == 0

    asyncio.run(main())


def test_a_suspended_trainjob_holds_no_port() -> None:
    async def main() -> None:
        client = FakeClient()
        pool = PortPool(ports=range(21000, 21010))
        source = LocalTrainJobNetworks(client=client, pool=pool)
        raw = await client.create(TRAINJOBS, trainjob("a", suspend=True), namespace="default")
        found = await source.for_trainjob(raw=raw, runtime=RUNTIMES["torch-distributed"])
        assert isinstance(found, PodNetwork)
        assert pool.in_use == 0
        assert PORTS_ANNOTATION not in (raw["metadata"].get("annotations") or {})

    asyncio.run(main())
