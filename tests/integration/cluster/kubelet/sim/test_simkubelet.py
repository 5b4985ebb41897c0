"""The simulated kubelet against the embedded API server, through ``HttpClient``.

Here the server validates every status the kubelet writes against the Kubernetes schema,
applies graceful pod deletion as kube-apiserver does, and every request is counted.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest

from tests.integration.cluster.apiserver.conftest import RunningServer, start_server
from tests.polling import until
from tests.unit.cluster.kubelet.sim.harness import DEADLINE, Sim, sim_pod, simulated
from trainop.cluster.kubelet.sim import Rules
from trainop.kube.http import HttpClient
from trainop.kube.resources import NAMESPACES, PODS

Body = Callable[[Sim, Counter[str]], Awaitable[None]]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    yield from start_server(tmp_path_factory.mktemp("simkubelet"), bookmark_interval=0.2)


def run(server: RunningServer, body: Body, **options: Any) -> None:
    """Run ``body`` with a kubelet watching a fresh namespace; count requests by verb."""
    calls: Counter[str] = Counter()

    async def main() -> None:
        client = HttpClient.from_kubeconfig(
            path=str(server.kubeconfig), on_request=lambda verb, _: calls.update([verb])
        )
        namespace = f"sim-{uuid.uuid4().hex[:8]}"
        try:
            await client.create(NAMESPACES, {"metadata": {"name": namespace}})
            async with simulated(client, namespace=namespace, **options) as sim:
                await body(sim, calls)
        finally:
            await client.close()

    asyncio.run(main())


def terminated(status: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = status["containerStatuses"][0]["state"]["terminated"]
    return found


def test_every_phase_path_is_accepted_by_the_server(server: RunningServer) -> None:
    async def body(sim: Sim, calls: Counter[str]) -> None:
        await sim.create(sim_pod("ok", run_seconds=5, init_containers=("init",)))
        await sim.create(sim_pod("bad", run_seconds=5, exit_code=2))
        await sim.create(sim_pod("oom", run_seconds=5, oom_killed=True))
        await sim.create(sim_pod("flaky", run_seconds=5, restart_policy="OnFailure", fail_times=1))
        await sim.create(sim_pod("late", pending_seconds=3, run_seconds=5))
        patches_before = calls["patch"]
        await sim.advance(5)
        ok, bad, oom = [await sim.status(n) for n in ("ok", "bad", "oom")]
        assert (ok["phase"], terminated(ok)["reason"]) == ("Succeeded", "Completed")
        assert (bad["phase"], terminated(bad)["exitCode"]) == ("Failed", 2)
        assert (oom["phase"], terminated(oom)["reason"]) == ("Failed", "OOMKilled")
        assert (await sim.status("late"))["phase"] == "Running"
        await sim.advance(30)
        flaky = await sim.status("flaky")
        assert flaky["phase"] == "Succeeded"
        assert flaky["containerStatuses"][0]["restartCount"] == 1
        assert flaky["containerStatuses"][0]["lastState"]["terminated"]["exitCode"] == 1
        assert (await sim.status("late"))["phase"] == "Succeeded"
        assert flaky["qosClass"] == "BestEffort", "a merge patch keeps the server's fields"
        # ok, bad, oom: 1 each; flaky: exit, restart, exit; late: start, exit.
        assert calls["patch"] - patches_before == 3 + 3 + 2
        assert calls["patch"] == sim.patches

    run(server, body)


def test_status_is_written_once_per_transition(server: RunningServer) -> None:
    async def body(sim: Sim, calls: Counter[str]) -> None:
        await sim.create(sim_pod("p", pending_seconds=1, run_seconds=1))
        await sim.advance(1)
        await sim.advance(1)
        await sim.advance(100)
        assert (await sim.status("p"))["phase"] == "Succeeded"
        assert calls["patch"] == 3, "Pending (scheduled), Running, Succeeded"

    run(server, body)


def test_a_deleted_pod_is_not_resurrected(server: RunningServer) -> None:
    async def body(sim: Sim, calls: Counter[str]) -> None:
        await sim.create(sim_pod("p", run_seconds=10))
        await sim.client.delete(PODS, name="p", namespace=sim.namespace)
        await until(
            lambda: sim.kubelet.pod(sim.namespace, "p") is None,
            timeout=DEADLINE,
            what="the kubelet let p go",
        )
        await sim.advance(60)
        assert await sim.gone("p")
        assert calls["patch"] == 1

    run(server, body)


def test_a_gracefully_deleted_pod_is_finished_by_the_kubelet(server: RunningServer) -> None:
    async def body(sim: Sim, calls: Counter[str]) -> None:
        await sim.create(sim_pod("p", run_seconds=100, node_name="trainop-sim"))
        await sim.client.delete(PODS, name="p", namespace=sim.namespace)
        marked = await sim.get("p")
        assert marked["metadata"]["deletionTimestamp"], "the server waits for the kubelet"
        await until(lambda: sim.gone("p"), timeout=DEADLINE, what="p gone")
        await sim.kubelet.drained()
        assert calls["delete"] == 2, "the user's delete, then the kubelet's"
        assert calls["patch"] == 2, "Running, then the final Failed status"
        await sim.advance(200)
        assert await sim.gone("p")

    run(server, body)


def test_two_hundred_pods_converge(server: RunningServer) -> None:
    async def body(sim: Sim, calls: Counter[str]) -> None:
        pods = [sim_pod(f"p{i}", restart_policy="OnFailure") for i in range(200)]
        started = time.perf_counter()
        await asyncio.gather(*(sim.client.create(PODS, p, namespace=sim.namespace) for p in pods))
        await until(
            lambda: all(sim.kubelet.pod(sim.namespace, f"p{i}") is not None for i in range(200)),
            timeout=DEADLINE,
            what="the kubelet saw all 200 pods",
        )
        await sim.advance(10)
        listed = await sim.client.list(PODS, namespace=sim.namespace)
        elapsed = time.perf_counter() - started
        phases = Counter(p["status"]["phase"] for p in listed.items)
        assert phases == {"Succeeded": 200}
        assert calls["patch"] == 400, "Running and Succeeded, once each"
        print(f"200 pods created and simulated to Succeeded in {elapsed:.2f}s")

    run(server, body, defaults=Rules(run_seconds=10))
