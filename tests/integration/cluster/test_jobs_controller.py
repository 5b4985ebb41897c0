"""batch/v1 Jobs end to end: the embedded API server (admission: kube's defaults, validation
and status rules), the local Job controller and simulated kubelets, on a fake clock.

The golden cases of spec §4 G15 as a cluster plays them (index 0 succeeds, 1 fails, 2 runs…
with one simulated kubelet per index), and §3's behaviours: pod names, hostnames, the index
annotation/label/env, two-step conditions with kube's reasons and messages, backoffLimit with
OnFailure restarts, podFailurePolicy, activeDeadlineSeconds, suspend/resume, TTL, NonIndexed
Jobs. Expected values come from the spec.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.cluster.apiserver.conftest import RunningServer, start_server
from tests.integration.cluster.jobs_harness import INDEX, Node, Plane, run_plane, true_types
from tests.integration.cluster.kubelet import harness as kubelet_harness
from tests.polling import until
from trainop import errors
from trainop.cluster.controllers.jobs import JOBS, LocalJobController
from trainop.cluster.kubelet import LogFiles
from trainop.cluster.kubelet.sim import PREFIX, Rules
from trainop.kube.clock import LoopClock
from trainop.kube.resources import PODS

REACHED = "Reached expected number of succeeded pods"
BACKOFF = "Job has reached the specified backoff limit"
INDEX_ENV = {
    "name": "JOB_COMPLETION_INDEX",
    "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": f"metadata.labels['{INDEX}']"}},
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    yield from start_server(tmp_path_factory.mktemp("jobs"), bookmark_interval=0.2)


def batch_job(
    name: str,
    *,
    restart: str = "Never",
    rules: dict[str, Any] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    annotations = {PREFIX + k.replace("_", "-"): str(v) for k, v in (rules or {}).items()}
    template = {
        "metadata": {"labels": {"app": name}, "annotations": annotations},
        "spec": {
            "restartPolicy": restart,
            "containers": [{"name": "main", "image": "img/main:1", "command": ["true"]}],
        },
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {"template": template, **spec},
    }


def indexed(name: str, **spec: Any) -> dict[str, Any]:
    return batch_job(name, completionMode="Indexed", **spec)


def conditions(job: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    return [
        (c["type"], c["status"], c.get("reason", ""), c.get("message", ""))
        for c in job["status"].get("conditions") or []
    ]


async def until_pods(plane: Plane, job: str, count: int) -> list[dict[str, Any]]:
    async def probe() -> tuple[list[dict[str, Any]]] | None:
        pods = await plane.pods(job)
        return (pods,) if len(pods) == count else None  # truthy even when none is wanted

    found: tuple[list[dict[str, Any]]] = await until(probe, timeout=30, what=f"{count} pods")
    return found[0]


def test_an_indexed_job_runs_every_index_to_complete(server: RunningServer) -> None:
    async def body(plane: Plane) -> None:
        await plane.create(indexed("demo", completions=3, parallelism=2))
        first = await until_pods(plane, "demo", 2)
        for index, pod in enumerate(first):
            meta, spec = pod["metadata"], pod["spec"]
            assert re.fullmatch(rf"demo-{index}-[a-z0-9]{{5}}", meta["name"])
            assert meta["generateName"] == f"demo-{index}-"
            assert spec["hostname"] == f"demo-{index}"
            assert meta["annotations"][INDEX] == meta["labels"][INDEX] == str(index)
            assert meta["labels"]["batch.kubernetes.io/job-name"] == "demo"
            assert meta["labels"]["job-name"] == "demo"
            assert meta["labels"]["app"] == "demo"
            assert spec["containers"][0]["env"] == [INDEX_ENV]
            assert meta["finalizers"] == ["batch.kubernetes.io/job-tracking"]
            [owner] = meta["ownerReferences"]
            assert (owner["kind"], owner["name"], owner["controller"]) == ("Job", "demo", True)
        await plane.until_status("demo", lambda s: s.get("active") == 2)
        await plane.advance(5)  # indexes 0 and 1 succeed; index 2 starts
        await plane.until_status("demo", lambda s: s.get("completedIndexes") == "0,1")
        await plane.advance(5)
        job = await plane.until_condition("demo", "Complete")
        status = job["status"]
        assert conditions(job) == [
            ("SuccessCriteriaMet", "True", "CompletionsReached", REACHED),
            ("Complete", "True", "CompletionsReached", REACHED),
        ]
        assert (status["succeeded"], status["completedIndexes"]) == (3, "0-2")
        assert (status["ready"], status["terminating"]) == (0, 0)
        assert "active" not in status
        assert "failed" not in status
        assert status["uncountedTerminatedPods"] == {}
        assert status["completionTime"] >= status["startTime"]

        async def released() -> bool:
            pods = await plane.pods("demo")
            return len(pods) == 3 and not any(p["metadata"].get("finalizers") for p in pods)

        await until(released, timeout=30, what="the pods' tracking finalizers removed")

        async def events() -> list[str]:
            created = await plane.events("SuccessfulCreate")
            done = await plane.events("Completed")
            return sorted(e["message"] for e in created) if len(created) == 3 and done else []

        messages = await until(events, timeout=30, what="the Job's Events")
        assert messages == sorted(
            f"Created pod: {p['metadata']['name']}" for p in await plane.pods("demo")
        )
        [completed] = await plane.events("Completed")
        assert completed["message"] == "Job completed"
        assert completed["source"] == {"component": "job-controller"}

    run_plane(server, body)


def test_backoff_limit_exceeded_fails_the_job_after_its_pods_are_gone(
    server: RunningServer,
) -> None:
    # G15 "indexed job failed": p2, c3, backoffLimit 0; index 0 succeeds, 1 fails, 2 runs.
    nodes = (
        Node("zero", Rules(run_seconds=1), f"{INDEX}=0"),
        Node("one", Rules(run_seconds=2, exit_code=1), f"{INDEX}=1"),
        Node("two", Rules(run_seconds=100), f"{INDEX}=2"),
    )

    async def body(plane: Plane) -> None:
        await plane.create(indexed("bad", completions=3, parallelism=2, backoffLimit=0))
        await until_pods(plane, "bad", 2)
        await plane.advance(1)  # index 0 succeeds: index 2 starts
        await until_pods(plane, "bad", 3)
        await plane.advance(1)  # index 1 fails: the Job is failing, index 2 is killed
        job = await plane.until_condition("bad", "Failed")
        status = job["status"]
        assert conditions(job) == [
            ("FailureTarget", "True", "BackoffLimitExceeded", BACKOFF),
            ("Failed", "True", "BackoffLimitExceeded", BACKOFF),
        ]
        assert (status["succeeded"], status["failed"], status["completedIndexes"]) == (1, 2, "0")
        assert status["terminating"] == 0
        assert "completionTime" not in status
        left = await plane.pods("bad")
        assert sorted(p["metadata"]["labels"][INDEX] for p in left) == ["0", "1"]
        [warning] = await until(lambda: plane.events("BackoffLimitExceeded"), timeout=30)
        assert (warning["type"], warning["message"]) == ("Warning", BACKOFF)

    run_plane(server, body, nodes)


def test_on_failure_restarts_count_toward_the_backoff_limit(server: RunningServer) -> None:
    rules = {"run_seconds": 1, "exit_code": 1, "restart_delay_seconds": 1}

    async def body(plane: Plane) -> None:
        job = indexed("flaky", completions=1, backoffLimit=2, restart="OnFailure", rules=rules)
        await plane.create(job)
        await until_pods(plane, "flaky", 1)
        restarts_seen = 0
        for _ in range(8):
            await plane.advance(1)
            job = await plane.job("flaky")
            assert job is not None
            failing = "FailureTarget" in true_types(job["status"])
            if failing:
                break
            for pod in await plane.pods("flaky"):
                restarts_seen = pod["status"]["containerStatuses"][0]["restartCount"]
            assert restarts_seen < 2, "2 restarts reach backoffLimit 2"
        assert failing
        done = await plane.until_condition("flaky", "Failed")
        assert conditions(done)[-1] == ("Failed", "True", "BackoffLimitExceeded", BACKOFF)
        assert done["status"]["failed"] == 1, "the restarting pod, killed"
        assert restarts_seen == 1

    run_plane(server, body)


def test_pod_failure_policy_fail_job_names_the_container_and_the_rule(
    server: RunningServer,
) -> None:
    policy = {
        "rules": [
            {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [3]}},
            {"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "In",
                                                  "values": [42]}},
        ]
    }  # fmt: skip

    async def body(plane: Plane) -> None:
        job = indexed("policy", completions=1, podFailurePolicy=policy,
                      rules={"run_seconds": 1, "exit_code": 42})  # fmt: skip
        created = await plane.create(job)
        assert created["spec"]["podReplacementPolicy"] == "Failed"
        [pod] = await until_pods(plane, "policy", 1)
        await plane.advance(1)
        failed = await plane.until_condition("policy", "Failed")
        message = (
            f"Container main for pod {plane.namespace}/{pod['metadata']['name']} failed with "
            "exit code 42 matching FailJob rule at index 1"
        )
        assert conditions(failed) == [
            ("FailureTarget", "True", "PodFailurePolicy", message),
            ("Failed", "True", "PodFailurePolicy", message),
        ]
        assert failed["status"]["failed"] == 1

    run_plane(server, body)


def test_the_active_deadline_fails_a_running_job(server: RunningServer) -> None:
    async def body(plane: Plane) -> None:
        job = indexed("slow", completions=1, activeDeadlineSeconds=10, rules={"run_seconds": 100})
        await plane.create(job)
        await until_pods(plane, "slow", 1)
        await plane.advance(9)
        assert "conditions" not in ((await plane.job("slow")) or {}).get("status", {})
        await plane.advance(1)
        failed = await plane.until_condition("slow", "Failed")
        message = "Job was active longer than specified deadline"
        assert conditions(failed)[-1] == ("Failed", "True", "DeadlineExceeded", message)
        assert failed["status"]["failed"] == 1

    run_plane(server, body)


def test_suspend_and_resume(server: RunningServer) -> None:
    async def body(plane: Plane) -> None:
        job = indexed("pause", completions=2, parallelism=2, suspend=True,
                      rules={"run_seconds": 100})  # fmt: skip
        await plane.create(job)
        held = await plane.until_condition("pause", "Suspended")
        assert conditions(held) == [("Suspended", "True", "JobSuspended", "Job suspended")]
        assert "startTime" not in held["status"]
        assert await plane.pods("pause") == []

        await plane.patch("pause", {"spec": {"suspend": False}})
        await until_pods(plane, "pause", 2)
        resumed = await plane.until_status("pause", lambda s: s.get("active") == 2)
        assert conditions(resumed) == [("Suspended", "False", "JobResumed", "Job resumed")]
        assert resumed["status"]["startTime"]

        await plane.patch("pause", {"spec": {"suspend": True}})
        await until_pods(plane, "pause", 0)
        again = await plane.until_condition("pause", "Suspended")
        assert "failed" not in again["status"], "pods removed on suspension are not failures"
        assert "active" not in again["status"]
        reasons = {e["reason"] for e in await plane.events("Suspended")}
        reasons |= {e["reason"] for e in await plane.events("Resumed")}
        assert reasons == {"Suspended", "Resumed"}

    run_plane(server, body)


def test_ttl_deletes_the_finished_job_and_its_pods(server: RunningServer) -> None:
    async def body(plane: Plane) -> None:
        job = indexed("brief", completions=1, ttlSecondsAfterFinished=5, rules={"run_seconds": 1})
        await plane.create(job)
        await until_pods(plane, "brief", 1)
        await plane.advance(1)
        await plane.until_condition("brief", "Complete")
        await plane.advance(4)
        assert await plane.job("brief") is not None
        await plane.advance(1)

        async def gone() -> bool:
            return await plane.job("brief") is None and await plane.pods("brief") == []

        await until(gone, timeout=30, what="the Job and its pods gone")

    run_plane(server, body)


def test_a_non_indexed_job_runs_completions_pods(server: RunningServer) -> None:
    async def body(plane: Plane) -> None:
        created = await plane.create(batch_job("plain", completions=3, parallelism=2))
        assert created["spec"]["completionMode"] == "NonIndexed"
        pods = await until_pods(plane, "plain", 2)
        assert all(p["metadata"]["generateName"] == "plain-" for p in pods)
        assert all(INDEX not in p["metadata"]["labels"] for p in pods)
        assert all("hostname" not in p["spec"] for p in pods)
        await plane.advance(5)
        await plane.until_status("plain", lambda s: s.get("succeeded") == 2)
        await plane.advance(5)
        done = await plane.until_condition("plain", "Complete")
        assert done["status"]["succeeded"] == 3
        assert "completedIndexes" not in done["status"]

    run_plane(server, body)


# ---- the API server's side (spec §3.1) ----------------------------------------------------


async def refusal(plane: Plane, job: dict[str, Any]) -> str:
    with pytest.raises(errors.ApiError) as refused:
        await plane.create(job)
    assert refused.value.status == 422
    return str(refused.value)


def test_the_api_server_defaults_and_validates_jobs_as_kube(server: RunningServer) -> None:
    async def body(plane: Plane) -> None:
        made = await plane.create({**batch_job("plain", suspend=True), "status": {"active": 5}})
        spec, meta = made["spec"], made["metadata"]
        assert (spec["completions"], spec["parallelism"], spec["backoffLimit"]) == (1, 1, 6)
        assert spec["completionMode"] == "NonIndexed"
        assert spec["podReplacementPolicy"] == "TerminatingOrFailed"
        assert spec["selector"] == {
            "matchLabels": {"batch.kubernetes.io/controller-uid": meta["uid"]}
        }
        labels = spec["template"]["metadata"]["labels"]
        assert labels["batch.kubernetes.io/job-name"] == labels["job-name"] == "plain"
        assert labels["controller-uid"] == meta["uid"]
        assert made.get("status", {}) == {}, "a client's status is not kept on create"

        no_completions = indexed("idx", parallelism=2)
        assert "spec.completions: Required value: when completion mode is Indexed" in (
            await refusal(plane, no_completions)
        )
        always = batch_job("always", restart="Always")
        assert (
            'spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"'
            in (await refusal(plane, always))
        )
        policy = {
            "rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [1]}}]
        }
        on_failure = batch_job("pfp", restart="OnFailure", podFailurePolicy=policy)
        assert 'only "Never" is supported when podFailurePolicy is specified' in (
            await refusal(plane, on_failure)
        )
        long = indexed("a" * 62, completions=100)
        assert f"will not able to create pod with invalid DNS label: {'a' * 62}-99" in (
            await refusal(plane, long)
        )
        plain = batch_job("plain2", backoffLimitPerIndex=1)
        assert "spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode" in (
            await refusal(plane, plain)
        )
        most = indexed("most", completions=2, maxFailedIndexes=1)
        assert "spec.backoffLimitPerIndex: Required value: when maxFailedIndexes is specified" in (
            await refusal(plane, most)
        )
        wide = indexed("wide", completions=1, parallelism=100001)
        assert "must be less than or equal to 100000 when completion mode is Indexed" in (
            await refusal(plane, wide)
        )

    run_plane(server, body)


def test_a_suspended_never_started_job_may_change_scheduling_only(server: RunningServer) -> None:
    async def body(plane: Plane) -> None:
        await plane.create(indexed("held", completions=1, suspend=True, rules={"run_seconds": 1}))
        await plane.until_condition("held", "Suspended")
        gated = {"spec": {"template": {"spec": {"nodeSelector": {"zone": "a"}}}}}
        changed = await plane.patch("held", gated)
        assert changed["spec"]["template"]["spec"]["nodeSelector"] == {"zone": "a"}
        image = {"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "x"}]}}}}
        with pytest.raises(errors.ApiError) as refused:
            await plane.patch("held", image)
        assert "spec.template: Invalid value" in str(refused.value)
        assert "field is immutable" in str(refused.value)
        with pytest.raises(errors.ApiError) as mode:
            await plane.patch("held", {"spec": {"completionMode": "NonIndexed"}})
        assert "spec.completionMode: Invalid value" in str(mode.value)

        await plane.patch("held", {"spec": {"suspend": False}})
        await plane.until_status("held", lambda s: bool(s.get("startTime")))
        with pytest.raises(errors.ApiError) as started:
            await plane.patch("held", {"spec": {"template": {"spec": {"nodeSelector": None}}}})
        assert "field is immutable" in str(started.value)

    run_plane(server, body)


def test_status_writes_follow_kubes_rules(server: RunningServer) -> None:
    async def body(plane: Plane) -> None:
        await plane.create(indexed("judged", completions=1, suspend=True))
        job = await plane.until_condition("judged", "Suspended")
        complete = {"type": "Complete", "status": "True"}
        lone = {**job, "status": {**job["status"], "conditions": [complete]}}
        with pytest.raises(errors.ApiError) as refused:
            await plane.client.replace(JOBS, lone, namespace=plane.namespace, subresource="status")
        text = str(refused.value)
        assert (
            "status.conditions: Invalid value: cannot set Complete=True condition without the "
            "SuccessCriteriaMet=true condition"
        ) in text
        assert (
            "status.completionTime: Required value: completionTime is required for Complete jobs"
            in text
        )
        assert "status.startTime: Required value: startTime is required for finished job" in text

    run_plane(server, body)


def test_a_pod_deleted_by_someone_else_counts_as_failed_and_is_replaced(
    server: RunningServer,
) -> None:
    async def body(plane: Plane) -> None:
        await plane.create(indexed("lost", completions=1, rules={"run_seconds": 100}))
        [first] = await until_pods(plane, "lost", 1)
        await plane.until_status("lost", lambda s: s.get("active") == 1)
        await plane.client.delete(PODS, name=first["metadata"]["name"], namespace=plane.namespace)

        async def replaced() -> list[dict[str, Any]] | None:
            pods = await plane.pods("lost")
            names = [p["metadata"]["name"] for p in pods]
            return pods if len(pods) == 1 and first["metadata"]["name"] not in names else None

        [second] = await until(replaced, timeout=30, what="index 0 replaced")
        assert second["metadata"]["labels"][INDEX] == "0"
        job = await plane.until_status("lost", lambda s: s.get("failed") == 1)
        assert job["status"]["active"] == 1
        assert "conditions" not in job["status"]

    run_plane(server, body)


def test_per_index_backoff_fails_an_index_then_the_job(server: RunningServer) -> None:
    nodes = (
        Node("fine", Rules(run_seconds=1), f"{INDEX}!=1"),
        Node("broken", Rules(run_seconds=1, exit_code=2), f"{INDEX}=1"),
    )

    async def body(plane: Plane) -> None:
        job = indexed("per", completions=3, parallelism=3, backoffLimitPerIndex=1)
        created = await plane.create(job)
        assert created["spec"]["backoffLimit"] == 2147483647
        await until_pods(plane, "per", 3)
        await plane.advance(1)  # 0 and 2 succeed, 1 fails once: replaced after 10 s
        await plane.until_status("per", lambda s: s.get("failed") == 1)
        await plane.advance(9)
        assert len(await plane.pods("per")) == 3, "the replacement waits 10 s"
        await plane.advance(1)
        pods = await until_pods(plane, "per", 4)
        [retry] = [
            p
            for p in pods
            if p["metadata"]["labels"][INDEX] == "1" and p["status"]["phase"] != "Failed"
        ]
        counts = retry["metadata"]["annotations"]
        assert counts["batch.kubernetes.io/job-index-failure-count"] == "1"
        await plane.advance(1)  # the second failure of index 1 is past its limit
        failed = await plane.until_condition("per", "Failed")
        assert conditions(failed)[-1] == (
            "Failed",
            "True",
            "FailedIndexes",
            "Job has failed indexes",
        )
        status = failed["status"]
        assert (status["completedIndexes"], status["failedIndexes"], status["failed"]) == (
            "0,2",
            "1",
            2,
        )

    run_plane(server, body, nodes)


def test_max_failed_indexes_exceeded(server: RunningServer) -> None:
    nodes = (
        Node("fine", Rules(run_seconds=100), f"{INDEX}!=1"),
        Node("broken", Rules(run_seconds=1, exit_code=2), f"{INDEX}=1"),
    )

    async def body(plane: Plane) -> None:
        job = indexed("most", completions=3, parallelism=3, backoffLimitPerIndex=0,
                      maxFailedIndexes=0)  # fmt: skip
        await plane.create(job)
        await until_pods(plane, "most", 3)
        await plane.advance(1)
        failed = await plane.until_condition("most", "Failed")
        message = "Job has exceeded the specified maximal number of failed indexes"
        assert conditions(failed) == [
            ("FailureTarget", "True", "MaxFailedIndexesExceeded", message),
            ("Failed", "True", "MaxFailedIndexesExceeded", message),
        ]
        assert failed["status"]["failed"] == 3, "index 1, and 0 and 2 killed"

    run_plane(server, body, nodes)


# ---- with the process kubelet: the index reaches the running process ----------------------

CHECK_INDEX = (
    "import os, sys; i = os.environ['JOB_COMPLETION_INDEX']; "
    "ok = i == os.environ['FROM_ANNOTATION'] and i in ('0', '1'); sys.exit(0 if ok else 3)"
)


def test_the_process_kubelet_gives_each_pod_its_index(tmp_path: Path) -> None:
    root = tmp_path / "sandboxes"
    root.mkdir()
    logs = LogFiles(root)
    annotation = f"metadata.annotations['{INDEX}']"
    env = [
        {"name": "FROM_ANNOTATION", "valueFrom": {"fieldRef": {"fieldPath": annotation}}},
    ]

    async def body(site: RunningServer) -> None:
        async with kubelet_harness.local(site, logs, root) as env_:
            controller = LocalJobController(
                client=env_.client, clock=LoopClock(), namespace=env_.namespace
            )
            task = asyncio.create_task(controller.run())
            try:
                job = indexed("real", completions=2, parallelism=2)
                job["spec"]["template"]["spec"]["containers"] = [
                    kubelet_harness.py(CHECK_INDEX, env=env)
                ]
                await env_.client.create(JOBS, job, namespace=env_.namespace)

                async def complete() -> Any:
                    found = await env_.client.get(JOBS, name="real", namespace=env_.namespace)
                    status = found.get("status") or {}
                    return (
                        found if "Complete" in true_types(status) or status.get("failed") else None
                    )

                done = await until(complete, timeout=60, what="the Job Complete")
                assert done["status"].get("failed") is None, done["status"]
                assert done["status"]["completedIndexes"] == "0,1"
            finally:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)

    for site in kubelet_harness.start_server(tmp_path / "apiserver", logs):
        asyncio.run(body(site))
