"""The local batch/v1 Job controller: a launcher Job's pod runs to success, Never pods are
replaced within backoffLimit, OnFailure restarts count toward it, deadline, suspend and TTL
(simulated kubelet, FakeClient, FakeClock)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.polling import until
from tests.unit.cluster.kubelet.sim.harness import DEADLINE, Sim, simulated
from trainop.cluster.controllers import batchjob
from trainop.cluster.controllers.batchjob import JOBS, LocalJobController
from trainop.cluster.kubelet.sim import PREFIX
from trainop.kube.fake import FakeClient
from trainop.kube.resources import PODS

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def batch_job(name: str = "pi-launcher", restart: str = "Never", **spec: Any) -> dict[str, Any]:
    rules = spec.pop("rules", {})
    annotations = {PREFIX + k.replace("_", "-"): str(v) for k, v in rules.items()}
    template = {
        "metadata": {"labels": {"role": "launcher"}, "annotations": annotations},
        "spec": {
            "restartPolicy": restart,
            "containers": [{"name": "main", "image": "i", "command": ["true"]}],
        },
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"template": template, **spec},
    }


def run(body: Callable[[Sim, FakeClient], Awaitable[None]]) -> None:
    async def main() -> None:
        client = FakeClient()
        async with simulated(client) as sim:
            controller = LocalJobController(client=client, clock=sim.clock)
            task = asyncio.create_task(controller.run())
            try:
                await body(sim, client)
            finally:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)

    asyncio.run(main())


async def job_status(client: FakeClient, name: str = "pi-launcher") -> dict[str, Any]:
    status: dict[str, Any] = (await client.get(JOBS, name=name, namespace="default")).get(
        "status"
    ) or {}
    return status


def true_types(status: dict[str, Any]) -> set[str]:
    return {c["type"] for c in status.get("conditions") or [] if c["status"] == "True"}


def test_a_pod_runs_to_success_and_the_job_completes() -> None:
    async def body(sim: Sim, client: FakeClient) -> None:
        await client.create(JOBS, batch_job(rules={"run_seconds": 5}), namespace="default")

        async def one_pod() -> bool:
            return len((await client.list(PODS, namespace="default")).items) == 1

        await until(one_pod, timeout=20, what="one pod")
        [pod] = (await client.list(PODS, namespace="default")).items
        assert pod["metadata"]["name"].startswith("pi-launcher-")
        assert pod["metadata"]["labels"]["role"] == "launcher"
        assert pod["metadata"]["labels"][batchjob.JOB_NAME_LABEL] == "pi-launcher"
        assert pod["metadata"]["ownerReferences"][0]["kind"] == "Job"
        await until(
            lambda: sim.kubelet.pod("default", pod["metadata"]["name"]) is not None,
            timeout=DEADLINE,
        )
        await sim.advance(5)

        async def complete() -> bool:
            return "Complete" in true_types(await job_status(client))

        await until(complete, timeout=20, what="the Job Complete")
        status = await job_status(client)
        assert status["succeeded"] == 1
        assert "active" not in status
        assert "completionTime" in status

    run(body)


def test_never_pods_are_replaced_until_the_backoff_limit() -> None:
    async def body(sim: Sim, client: FakeClient) -> None:
        job = batch_job(backoffLimit=1, rules={"run_seconds": 1, "exit_code": 3})
        await client.create(JOBS, job, namespace="default")

        async def failed() -> bool:
            await sim.advance(1)
            return "Failed" in true_types(await job_status(client))

        await until(failed, timeout=30, what="the Job Failed")
        status = await job_status(client)
        assert status["failed"] == 2
        reasons = {c["type"]: c.get("reason") for c in status["conditions"]}
        assert reasons["Failed"] == "BackoffLimitExceeded"
        assert len((await client.list(PODS, namespace="default")).items) == 2

    run(body)


def pod(name: str, phase: str, restarts: int = 0) -> dict[str, Any]:
    statuses = [{"name": "main", "restartCount": restarts}]
    return {"metadata": {"name": name}, "status": {"phase": phase, "containerStatuses": statuses}}


def test_the_pure_step_for_restarts_deadline_suspend_and_ttl() -> None:
    on_failure = batch_job(restart="OnFailure", backoffLimit=2)
    on_failure["status"] = {"startTime": "2026-01-01T00:00:00Z"}
    decision = batchjob.step(on_failure, [pod("a", "Running", restarts=3)], NOW)
    assert decision.delete == ["a"]
    assert decision.status is not None
    failed = next(c for c in decision.status["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == "BackoffLimitExceeded"
    assert batchjob.step(on_failure, [pod("a", "Running", restarts=2)], NOW).delete == []

    deadline = batch_job(activeDeadlineSeconds=60)
    deadline["status"] = {"startTime": "2026-01-01T00:00:00Z", "active": 1}
    late = batchjob.step(deadline, [pod("a", "Running")], NOW + timedelta(seconds=60))
    assert late.delete == ["a"]
    assert late.status is not None
    assert [(c["type"], c["reason"]) for c in late.status["conditions"]] == [
        ("Failed", "DeadlineExceeded")
    ]
    assert batchjob.step(deadline, [pod("a", "Running")], NOW).status is None

    suspended = batch_job(suspend=True)
    paused = batchjob.step(suspended, [pod("a", "Running")], NOW)
    assert paused.delete == ["a"]
    assert paused.create == []
    assert paused.status is not None
    assert true_types(paused.status) == {"Suspended"}

    finished = batch_job(ttlSecondsAfterFinished=30)
    finished["status"] = {
        "completionTime": "2026-01-01T00:00:00Z",
        "conditions": [{"type": "Complete", "status": "True"}],
    }
    assert not batchjob.step(finished, [], NOW + timedelta(seconds=29)).delete_job
    assert batchjob.step(finished, [], NOW + timedelta(seconds=30)).delete_job
    fresh = batchjob.step(batch_job(), [], NOW)
    assert [p["metadata"]["generateName"] for p in fresh.create] == ["pi-launcher-"]
    assert fresh.status == {"active": 1, "startTime": "2026-01-01T00:00:00Z"}
