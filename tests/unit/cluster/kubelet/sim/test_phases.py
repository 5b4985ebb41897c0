"""Pods move through their phases by rule, on a fake clock, against the in-memory client."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from tests.polling import until
from tests.unit.cluster.kubelet.sim.harness import DEADLINE, Sim, sim_pod, simulated
from trainop import errors
from trainop.cluster.kubelet.sim import Rules
from trainop.kube.fake import FakeClient
from trainop.kube.resources import PODS


def run(body: Callable[[Sim], Awaitable[None]], **options: Any) -> FakeClient:
    client = FakeClient()

    async def main() -> None:
        async with simulated(client, **options) as sim:
            await body(sim)

    asyncio.run(main())
    return client


def container(status: dict[str, Any], index: int = 0) -> dict[str, Any]:
    found: dict[str, Any] = status["containerStatuses"][index]
    return found


def conditions(status: dict[str, Any]) -> dict[str, str]:
    return {c["type"]: c["status"] for c in status["conditions"]}


def test_a_never_pod_runs_for_run_seconds_then_succeeds() -> None:
    async def body(sim: Sim) -> None:
        await sim.create(sim_pod("p", run_seconds=5, containers=("a", "b")))
        running = await sim.status("p")
        assert running["phase"] == "Running"
        assert running["hostIP"] == running["podIP"] == "127.0.0.1"
        assert running["startTime"] == "2026-01-01T00:00:00Z"
        assert conditions(running) == dict.fromkeys(
            ("PodScheduled", "Initialized", "ContainersReady", "Ready"), "True"
        )
        assert [c["name"] for c in running["containerStatuses"]] == ["a", "b"]
        assert container(running, 1)["state"] == {"running": {"startedAt": "2026-01-01T00:00:00Z"}}
        assert container(running)["ready"] is True
        await sim.advance(4.9)
        assert (await sim.status("p"))["phase"] == "Running"
        await sim.advance(0.1)
        done = await sim.status("p")
        assert done["phase"] == "Succeeded"
        assert conditions(done)["Ready"] == "False"
        terminated = container(done)["state"]["terminated"]
        assert terminated == {
            "exitCode": 0,
            "reason": "Completed",
            "startedAt": "2026-01-01T00:00:00Z",
            "finishedAt": "2026-01-01T00:00:05Z",
        }
        assert container(done)["ready"] is False
        assert sim.patches == 2, "one status write per transition: Running, Succeeded"
        assert sim.clock.pending == 0

    run(body)


def test_a_non_zero_exit_code_fails_the_pod_with_reason_error() -> None:
    async def body(sim: Sim) -> None:
        await sim.create(sim_pod("p", exit_code=3))
        await sim.advance(0)
        status = await sim.status("p")
        assert status["phase"] == "Failed"
        terminated = container(status)["state"]["terminated"]
        assert (terminated["exitCode"], terminated["reason"]) == (3, "Error")

    run(body)


def test_oom_killed_exits_137_with_reason_oomkilled() -> None:
    async def body(sim: Sim) -> None:
        await sim.create(sim_pod("p", oom_killed=True, run_seconds=2))
        await sim.advance(2)
        status = await sim.status("p")
        terminated = container(status)["state"]["terminated"]
        assert (status["phase"], terminated["exitCode"], terminated["reason"]) == (
            "Failed",
            137,
            "OOMKilled",
        )

    run(body)


def test_on_failure_restarts_in_place_until_the_run_succeeds() -> None:
    async def body(sim: Sim) -> None:
        pod = sim_pod("p", restart_policy="OnFailure", fail_times=2, run_seconds=1)
        await sim.create(pod)
        await sim.advance(1)
        backing_off = container(await sim.status("p"))
        assert backing_off["state"] == {"waiting": {"reason": "CrashLoopBackOff"}}
        assert backing_off["restartCount"] == 0
        assert backing_off["lastState"]["terminated"]["exitCode"] == 1
        await sim.advance(10)  # the default restart delay
        restarted = await sim.status("p")
        assert restarted["phase"] == "Running"
        assert container(restarted)["restartCount"] == 1
        assert container(restarted)["state"]["running"]["startedAt"] == "2026-01-01T00:00:11Z"
        await sim.advance(100)
        done = await sim.status("p")
        assert done["phase"] == "Succeeded"
        assert container(done)["restartCount"] == 2
        assert container(done)["lastState"]["terminated"]["reason"] == "Error"
        assert container(done)["state"]["terminated"]["exitCode"] == 0
        # Running, (exit, restart) x 2, Succeeded
        assert sim.patches == 6

    run(body)


def test_always_restarts_even_after_exit_zero() -> None:
    async def body(sim: Sim) -> None:
        pod = sim_pod("p", restart_policy="Always", run_seconds=5, restart_delay_seconds=0)
        await sim.create(pod)
        await sim.advance(5 * 3)
        status = await sim.status("p")
        assert status["phase"] == "Running"
        assert container(status)["restartCount"] == 3
        assert container(status)["lastState"]["terminated"]["reason"] == "Completed"
        assert sim.patches == 4, "with no back-off, an exit and its restart are one write"

    run(body)


def test_always_with_zero_times_never_spins() -> None:
    async def body(sim: Sim) -> None:
        pod = sim_pod("p", restart_policy="Always", run_seconds=0, restart_delay_seconds=0)
        await sim.create(pod)
        await sim.advance(3)
        assert container(await sim.status("p"))["restartCount"] == 3

    run(body)


def test_pending_seconds_keep_the_pod_pending_but_scheduled() -> None:
    async def body(sim: Sim) -> None:
        await sim.create(
            sim_pod("p", pending_seconds=30, run_seconds=10, init_containers=("init",))
        )
        pending = await sim.status("p")
        assert pending["phase"] == "Pending"
        assert conditions(pending)["PodScheduled"] == "True"
        assert conditions(pending)["Initialized"] == "False"
        assert container(pending)["state"] == {"waiting": {"reason": "ContainerCreating"}}
        await sim.advance(29)
        assert (await sim.status("p"))["phase"] == "Pending"
        await sim.advance(1)
        running = await sim.status("p")
        assert running["phase"] == "Running"
        assert running["initContainerStatuses"][0]["state"]["terminated"]["reason"] == "Completed"

    run(body)


def test_kubelet_defaults_apply_to_pods_without_annotations() -> None:
    async def body(sim: Sim) -> None:
        await sim.create(sim_pod("p"))
        await sim.advance(6)
        assert (await sim.status("p"))["phase"] == "Running"
        await sim.advance(1)
        assert container(await sim.status("p"))["state"]["terminated"]["exitCode"] == 4

    run(body, defaults=Rules(run_seconds=7, exit_code=4))


def test_an_invalid_annotation_fails_the_pod_naming_it() -> None:
    async def body(sim: Sim) -> None:
        await sim.create(sim_pod("p", run_seconds="soon"))
        status = await sim.status("p")
        assert status["phase"] == "Failed"
        assert status["reason"] == "InvalidSimulationRule"
        assert "sim.trainop.dev/run-seconds" in status["message"]
        assert sim.clock.pending == 0

    run(body)


def test_a_deleted_pod_is_never_written_again() -> None:
    async def body(sim: Sim) -> None:
        await sim.create(sim_pod("p", run_seconds=5))
        await sim.client.delete(PODS, name="p", namespace="default")
        await until(lambda: sim.kubelet.pod("default", "p") is None, timeout=DEADLINE)
        await sim.advance(60)
        assert await sim.gone("p")
        assert sim.patches == 1
        assert sim.clock.pending == 0, "the exit timer was cancelled"

    run(body)


def test_a_pod_recreated_under_the_same_name_starts_afresh() -> None:
    async def body(sim: Sim) -> None:
        await sim.create(sim_pod("p", run_seconds=5))
        await sim.client.delete(PODS, name="p", namespace="default")
        await sim.advance(3)
        second = await sim.create(sim_pod("p", run_seconds=5))
        await sim.advance(3)
        status = await sim.status("p")
        assert status["phase"] == "Running", "the first pod's exit timer must not fire"
        assert status["startTime"] == "2026-01-01T00:00:03Z"
        assert sim.kubelet.pod("default", "p").uid == second["metadata"]["uid"]  # type: ignore[union-attr]

    run(body)


def test_a_failed_write_is_retried_on_the_clock() -> None:
    client = FakeClient()
    client.inject("patch", errors.UnreachableError("down"), resource=PODS)

    async def main() -> None:
        async with simulated(client) as sim:
            await sim.create(sim_pod("p", run_seconds=100))
            assert "status" not in await sim.get("p"), "the first write failed"
            await sim.advance(1)
            assert (await sim.status("p"))["phase"] == "Running"

    asyncio.run(main())


def test_pods_bound_to_another_node_are_left_alone() -> None:
    async def body(sim: Sim) -> None:
        await sim.client.create(PODS, sim_pod("p", node_name="elsewhere"), namespace="default")
        await sim.client.create(PODS, sim_pod("q", node_name="trainop-sim"), namespace="default")
        await until(lambda: sim.kubelet.pod("default", "q") is not None, timeout=DEADLINE)
        await sim.advance(1)
        assert sim.kubelet.pod("default", "p") is None
        assert "status" not in await sim.get("p")
        assert (await sim.status("q"))["phase"] == "Succeeded"

    run(body)
