"""The JobSet controller against the embedded API server (issue 23 item 2's acceptance test).

Real parts: the embedded API server over HTTP with the JobSet CRD that ``trainop local up``
installs and its admission chain (JobSet's webhook defaults and validation), the
``JobSetController`` on the server's event loop, the official ``kubernetes`` client for
everything the test does, and the ``kubectl`` binary for a plain apply. There is no Job
controller here: the test writes child Job status itself, as JobSet's own integration tests
do (``completeJob``, ``failJob``, ``readyJob`` of spec section 4).

Expected values are the JobSet spec's golden cases (section 4): G1-G3 (names, labels, the
headless Service), G5-G13, G14 (admission); fixture ``testJobSet``: ``replicated-job-a`` (1
replica) + ``replicated-job-b`` (3), success policy All, DNS hostnames on.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from tests.integration.cluster.apiserver.conftest import RunningServer
from tests.integration.controller.cluster import start_cluster_server
from tests.polling import NotYet, until, wait_for
from trainop.api.trainer import constants as c
from trainop.cluster.controllers.jobset.controller import JOBSETS, JobSetController
from trainop.cluster.kubelet.sim import Rules, SimulatedKubelet
from trainop.kube.clock import LoopClock
from trainop.kube.http import HttpClient
from trainop.kube.resources import PODS
from trainop.local.session import ClusterConfig, LocalCluster, install_crds

DEADLINE = 30.0
P = "jobset.sigs.k8s.io/"
A0 = "test-js-replicated-job-a-0"
B1 = "test-js-replicated-job-b-1"
TOO_LONG = "JobSet name is too long, {} names generated for this JobSet will exceed 63 characters"
ALL4 = [A0] + [f"test-js-replicated-job-b-{i}" for i in range(3)]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    for running in start_cluster_server(tmp_path_factory.mktemp("jobset")):
        http = running.run(_start(running))
        yield running
        running.run(_stop(http))


async def _start(running: RunningServer) -> tuple[HttpClient, asyncio.Task[None]]:
    http = HttpClient.from_kubeconfig(path=str(running.kubeconfig))
    await install_crds(http)  # what `trainop local up` installs, JobSet's CRD among them
    controller = JobSetController(client=http, clock=LoopClock())
    return http, asyncio.create_task(controller.run())


async def _stop(started: tuple[HttpClient, asyncio.Task[None]]) -> None:
    http, task = started
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    await http.close()


def _stamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Kube:
    """The official client, scoped to one fresh namespace."""

    def __init__(self, running: RunningServer) -> None:
        self.kubeconfig = running.kubeconfig
        self.api = config.new_client_from_config(config_file=str(running.kubeconfig))
        self.custom = client.CustomObjectsApi(self.api)
        self.batch = client.BatchV1Api(self.api)
        self.core = client.CoreV1Api(self.api)
        self.ns = f"js-{uuid.uuid4().hex[:8]}"
        self.core.create_namespace({"metadata": {"name": self.ns}})

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = self.custom.create_namespaced_custom_object(
            c.JOBSET_GROUP, c.JOBSET_VERSION, self.ns, c.JOBSET_PLURAL, body
        )
        return out

    def jobset(self, name: str = "test-js") -> dict[str, Any] | None:
        try:
            out: dict[str, Any] = self.custom.get_namespaced_custom_object(
                c.JOBSET_GROUP, c.JOBSET_VERSION, self.ns, c.JOBSET_PLURAL, name
            )
        except client.ApiException as exc:
            if exc.status == 404:
                return None
            raise
        return out

    def patch(self, patch: dict[str, Any], name: str = "test-js") -> None:
        self.custom.patch_namespaced_custom_object(
            c.JOBSET_GROUP, c.JOBSET_VERSION, self.ns, c.JOBSET_PLURAL, name, patch
        )

    def jobs(self) -> dict[str, Any]:
        """Jobs by name, as plain dicts."""
        listed = self.api.sanitize_for_serialization(self.batch.list_namespaced_job(self.ns))
        return {j["metadata"]["name"]: j for j in listed["items"]}

    def live_jobs(self) -> dict[str, Any]:
        return {k: v for k, v in self.jobs().items() if not v["metadata"].get("deletionTimestamp")}

    def job_status(self, name: str, status: dict[str, Any]) -> None:
        self.batch.patch_namespaced_job_status(name, self.ns, {"status": status})

    def complete(self, name: str) -> None:
        now = _stamp()
        conds = [
            _cond(
                "SuccessCriteriaMet",
                "CompletionsReached",
                "Reached expected number of succeeded pods",
                now,
            ),
            _cond(
                "Complete", "CompletionsReached", "Reached expected number of succeeded pods", now
            ),
        ]
        self.job_status(
            name, {"succeeded": 1, "startTime": now, "completionTime": now, "conditions": conds}
        )

    def fail(
        self,
        name: str,
        reason: str = "BackoffLimitExceeded",
        message: str = "Job has reached the specified backoff limit",
    ) -> None:
        now = _stamp()
        conds = [
            _cond("FailureTarget", reason, message, now),
            _cond("Failed", reason, message, now),
        ]
        self.job_status(name, {"failed": 1, "startTime": now, "conditions": conds})

    def ready(self, name: str) -> None:
        self.job_status(name, {"active": 1, "ready": 1, "startTime": _stamp()})

    def until(self, probe: Any, what: str) -> Any:
        return wait_for(probe, timeout=DEADLINE, what=what)

    def until_jobs(self, names: list[str], **labels: str) -> dict[str, Any]:
        def probe() -> dict[str, Any] | NotYet:
            jobs = self.live_jobs()
            matching = {
                n: j
                for n, j in jobs.items()
                if all(
                    j["metadata"]["labels"].get(P + k.replace("_", "-")) == v
                    for k, v in labels.items()
                )
            }
            return matching if sorted(matching) == sorted(names) else NotYet(sorted(jobs))

        return self.until(probe, f"jobs {names} with {labels}")

    def until_condition(
        self, ctype: str, status: str = "True", name: str = "test-js"
    ) -> dict[str, Any]:
        def probe() -> dict[str, Any] | NotYet:
            js = self.jobset(name) or {}
            found = next(
                (x for x in (js.get("status") or {}).get("conditions") or [] if x["type"] == ctype),
                None,
            )
            return js if found and found["status"] == status else NotYet(js.get("status"))

        return self.until(probe, f"{ctype}={status}")

    def until_status(self, what: str, check: Any, name: str = "test-js") -> dict[str, Any]:
        def probe() -> dict[str, Any] | NotYet:
            status = (self.jobset(name) or {}).get("status") or {}
            return status if check(status) else NotYet(status)

        return self.until(probe, what)


def _cond(ctype: str, reason: str, message: str, now: str) -> dict[str, Any]:
    return {
        "type": ctype,
        "status": "True",
        "reason": reason,
        "message": message,
        "lastProbeTime": now,
        "lastTransitionTime": now,
    }


@pytest.fixture
def kube(server: RunningServer) -> Kube:
    return Kube(server)


def rjob(name: str, replicas: int = 1, **extra: Any) -> dict[str, Any]:
    pod = {"containers": [{"name": "c", "image": "busybox", "command": ["true"]}]}
    return {
        "name": name,
        "replicas": replicas,
        "template": {"spec": {"parallelism": 1, "completions": 1, "template": {"spec": pod}}},
        **extra,
    }


def jobset(name: str = "test-js", *rjs: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": c.JOBSET_API_VERSION,
        "kind": c.JOBSET,
        "metadata": {"name": name},
        "spec": {"replicatedJobs": list(rjs), **spec},
    }


def test_jobset(**spec: Any) -> dict[str, Any]:
    return jobset("test-js", rjob("replicated-job-a"), rjob("replicated-job-b", 3), **spec)


test_jobset.__test__ = False  # type: ignore[attr-defined]


def _entries(status: dict[str, Any]) -> dict[str, dict[str, int]]:
    return {
        e["name"]: {k: v for k, v in e.items() if k != "name" and v}
        for e in status.get("replicatedJobsStatus") or []
    }


def test_g14_defaults_g1_jobs_and_g3_service(kube: Kube) -> None:
    created = kube.create(test_jobset())
    spec = created["spec"]
    assert spec["network"] == {"enableDNSHostnames": True, "publishNotReadyAddresses": True}
    assert spec["successPolicy"] == {"operator": "All"}
    assert spec["startupPolicy"] == {"startupPolicyOrder": "AnyOrder"}
    job_spec = spec["replicatedJobs"][0]["template"]["spec"]
    assert (job_spec["completionMode"], job_spec["template"]["spec"]["restartPolicy"]) == (
        "Indexed",
        "OnFailure",
    )
    jobs = kube.until_jobs(ALL4, restart_attempt="0")
    b2 = jobs["test-js-replicated-job-b-2"]
    labels = b2["metadata"]["labels"]
    assert {
        k: labels[P + k]
        for k in (
            "jobset-name",
            "replicatedjob-name",
            "replicatedjob-replicas",
            "global-replicas",
            "job-index",
            "job-global-index",
            "group-name",
            "group-replicas",
            "job-group-index",
        )
    } == {
        "jobset-name": "test-js",
        "replicatedjob-name": "replicated-job-b",
        "replicatedjob-replicas": "3",
        "global-replicas": "4",
        "job-index": "2",
        "job-global-index": "3",
        "group-name": "default",
        "group-replicas": "4",
        "job-group-index": "3",
    }
    assert labels[P + "jobset-uid"] == created["metadata"]["uid"]
    assert b2["spec"]["template"]["spec"]["subdomain"] == "test-js"
    assert b2["spec"]["template"]["metadata"]["annotations"][P + "job-index"] == "2"
    assert b2["metadata"]["ownerReferences"][0]["kind"] == "JobSet"
    service = kube.until(lambda: _service(kube, "test-js"), "the headless Service")
    assert (service["spec"]["clusterIP"], service["spec"]["publishNotReadyAddresses"]) == (
        "None",
        True,
    )
    assert service["spec"]["selector"] == {P + "jobset-name": "test-js"}
    uid = service["metadata"]["uid"]
    kube.core.delete_namespaced_service("test-js", kube.ns)
    kube.until(
        lambda: (_service(kube, "test-js") or {}).get("metadata", {}).get("uid") not in (None, uid),
        "the deleted Service made again",
    )
    status = kube.until_status(
        "zero counts", lambda s: len(s.get("replicatedJobsStatus") or []) == 2
    )
    assert [e["name"] for e in status["replicatedJobsStatus"]] == [
        "replicated-job-b",
        "replicated-job-a",
    ]
    assert status["restarts"] == 0


def _service(kube: Kube, name: str) -> dict[str, Any] | None:
    try:
        out: dict[str, Any] = kube.api.sanitize_for_serialization(
            kube.core.read_namespaced_service(name, kube.ns)
        )
    except client.ApiException:
        return None
    return out


def test_g6_fails_after_reaching_max_restarts(kube: Kube) -> None:
    kube.create(test_jobset(failurePolicy={"maxRestarts": 1}))
    first = kube.until_jobs(ALL4, restart_attempt="0")
    kube.fail(A0)
    status = kube.until_status("restarts 1", lambda s: s.get("restarts") == 1)
    assert status.get("terminalState") is None
    second = kube.until_jobs(ALL4, restart_attempt="1")
    assert {j["metadata"]["uid"] for j in second.values()}.isdisjoint(
        j["metadata"]["uid"] for j in first.values()
    )
    kube.fail("test-js-replicated-job-b-1")
    js = kube.until_condition("Failed")
    failed = next(x for x in js["status"]["conditions"] if x["type"] == "Failed")
    assert failed["reason"] == "ReachedMaxRestarts"
    assert (
        failed["message"]
        == "jobset failed due to reaching max number of restarts (first failed job: " + B1 + ")"
    )
    assert (js["status"]["restarts"], js["status"]["terminalState"]) == (1, "Failed")


def test_g6_fails_from_first_run_without_failure_policy(kube: Kube) -> None:
    kube.create(test_jobset())
    kube.until_jobs(ALL4)
    kube.fail(A0)
    js = kube.until_condition("Failed")
    failed = next(x for x in js["status"]["conditions"] if x["type"] == "Failed")
    assert (failed["reason"], js["status"]["restarts"]) == ("FailedJobs", 0)


def test_g7_restarting_condition_transitions(kube: Kube) -> None:
    rule = {"name": "Rule1", "action": "RestartJobSet", "onJobFailureReasons": ["PodFailurePolicy"]}
    kube.create(test_jobset(failurePolicy={"maxRestarts": 1, "rules": [rule]}))
    kube.until_jobs(ALL4, restart_attempt="0")
    kube.fail(A0, "PodFailurePolicy", "Container c for pod x failed with exit code 3")
    js = kube.until_condition("RestartingJobSet")
    restarting = next(x for x in js["status"]["conditions"] if x["type"] == "RestartingJobSet")
    assert restarting["reason"] == "FailurePolicy_Rule1"
    for name in kube.until_jobs(ALL4, restart_attempt="1"):
        kube.ready(name)
    js = kube.until_condition("RestartingJobSet", "False")
    restarting = next(x for x in js["status"]["conditions"] if x["type"] == "RestartingJobSet")
    assert (restarting["reason"], restarting["message"]) == ("JobsReady", "all jobs are ready")
    events = kube.core.list_namespaced_event(kube.ns).items
    assert "RestartJobSetFailurePolicyAction" in {e.reason for e in events}


@pytest.mark.parametrize(
    ("first", "terminal", "restarts"), [("FailJobSet", "Failed", 0), ("RestartJobSet", None, 1)]
)
def test_g8_rule_order(kube: Kube, first: str, terminal: str | None, restarts: int) -> None:
    other = "RestartJobSet" if first == "FailJobSet" else "FailJobSet"
    rules = [
        {
            "name": name,
            "action": action,
            "onJobFailureReasons": ["MaxFailedIndexesExceeded"],
            "targetReplicatedJobs": ["replicated-job-a"],
        }
        for name, action in (("first", first), ("second", other))
    ]
    kube.create(test_jobset(failurePolicy={"maxRestarts": 1, "rules": rules}))
    kube.until_jobs(ALL4)
    kube.fail(
        A0,
        "MaxFailedIndexesExceeded",
        "Job has exceeded the specified maximal number of failed indexes",
    )
    status = kube.until_status(
        "the rule applied", lambda s: s.get("terminalState") or s.get("restarts")
    )
    assert (
        status.get("terminalState"),
        status["restarts"],
        status.get("restartsCountTowardsMax", 0),
    ) == (terminal, restarts, restarts)


def test_g9_success_policy_all_with_targets_then_active_jobs_deleted(kube: Kube) -> None:
    kube.create(
        test_jobset(successPolicy={"operator": "All", "targetReplicatedJobs": ["replicated-job-b"]})
    )
    kube.until_jobs(ALL4)
    kube.complete(A0)
    kube.complete("test-js-replicated-job-b-0")
    kube.until_status(
        "counted", lambda s: sum(e["succeeded"] for e in s.get("replicatedJobsStatus") or []) == 2
    )
    assert (kube.jobset() or {})["status"].get("terminalState") is None
    kube.complete("test-js-replicated-job-b-1")
    kube.complete("test-js-replicated-job-b-2")
    js = kube.until_condition("Completed")
    completed = next(x for x in js["status"]["conditions"] if x["type"] == "Completed")
    assert (completed["reason"], completed["message"]) == (
        "AllJobsCompleted",
        "jobset completed successfully",
    )
    assert js["status"]["terminalState"] == "Completed"


def test_g9_success_policy_any_deletes_the_active_jobs(kube: Kube) -> None:
    kube.create(
        test_jobset(successPolicy={"operator": "Any", "targetReplicatedJobs": ["replicated-job-b"]})
    )
    kube.until_jobs(ALL4)
    kube.complete("test-js-replicated-job-b-1")
    kube.until_condition("Completed")
    kube.until(lambda: sorted(kube.jobs()) == ["test-js-replicated-job-b-1"], "active Jobs deleted")
    status = kube.until_status(
        "only succeeded counts",
        lambda s: _entries(s) == {"replicated-job-b": {"succeeded": 1}, "replicated-job-a": {}},
    )
    assert status["terminalState"] == "Completed"


def test_g10_depends_on_ready(kube: Kube) -> None:
    kube.create(
        jobset(
            "depends-on",
            rjob("rjob-a"),
            rjob("rjob-b", 3, dependsOn=[{"name": "rjob-a", "status": "Ready"}]),
        )
    )
    kube.until_jobs(["depends-on-rjob-a-0"])
    kube.ready("depends-on-rjob-a-0")
    kube.until_jobs(["depends-on-rjob-a-0"] + [f"depends-on-rjob-b-{i}" for i in range(3)])
    for i in range(3):
        kube.ready(f"depends-on-rjob-b-{i}")
    status = kube.until_status(
        "all ready",
        lambda s: _entries(s).get("rjob-b") == {"ready": 3, "active": 3},
        name="depends-on",
    )
    assert [e["name"] for e in status["replicatedJobsStatus"]] == ["rjob-b", "rjob-a"]
    assert _entries(status)["rjob-a"] == {"ready": 1, "active": 1}


def test_g11_in_order_startup(kube: Kube) -> None:
    kube.create(test_jobset(startupPolicy={"startupPolicyOrder": "InOrder"}))
    kube.until_jobs([A0])
    kube.until_condition("StartupPolicyInProgress")
    kube.ready(A0)
    kube.until_jobs(ALL4)
    for name in ALL4[1:]:
        kube.job_status(name, {"active": 1, "startTime": _stamp()})
    status = kube.until_status(
        "b active", lambda s: _entries(s).get("replicated-job-b") == {"active": 3}
    )
    assert not any(x["type"] == "StartupPolicyCompleted" for x in status.get("conditions") or [])
    for name in ALL4[1:]:
        kube.ready(name)
    js = kube.until_condition("StartupPolicyCompleted")
    in_progress = next(
        x for x in js["status"]["conditions"] if x["type"] == "StartupPolicyInProgress"
    )
    assert in_progress["status"] == "False"


def test_g12_suspend_resume_and_complete(kube: Kube) -> None:
    kube.create(test_jobset(suspend=True))
    jobs = kube.until_jobs(ALL4)
    kube.until(
        lambda: all(j["spec"]["suspend"] for j in kube.jobs().values()) and len(kube.jobs()) == 4,
        "suspended Jobs",
    )
    kube.until_condition("Suspended")
    expected = {"replicated-job-b": {"suspended": 3}, "replicated-job-a": {"suspended": 1}}
    kube.until_status("suspended counts", lambda s: _entries(s) == expected)
    replicated = (kube.jobset() or {})["spec"]["replicatedJobs"]
    for rj in replicated:
        rj["template"]["spec"]["template"]["spec"]["nodeSelector"] = {"zone": "b"}
    kube.patch({"spec": {"replicatedJobs": replicated}})  # allowed while suspended
    kube.patch({"spec": {"suspend": False}})
    kube.until_condition("Suspended", "False")
    resumed = kube.until(
        lambda: (lambda j: j if all(not x["spec"]["suspend"] for x in j.values()) else NotYet(j))(
            kube.jobs()
        ),
        "resumed Jobs",
    )
    assert {
        j["spec"]["template"]["spec"].get("nodeSelector", {}).get("zone") for j in resumed.values()
    } == {"b"}
    assert set(resumed) == set(jobs)
    for name in ALL4:
        kube.complete(name)
    js = kube.until_condition("Completed")
    assert _entries(js["status"]) == {
        "replicated-job-b": {"succeeded": 3},
        "replicated-job-a": {"succeeded": 1},
    }


def test_g12_suspending_a_running_jobset(kube: Kube) -> None:
    kube.create(test_jobset())
    kube.until_jobs(ALL4)
    kube.patch({"spec": {"suspend": True}})
    kube.until(
        lambda: all(j["spec"].get("suspend") for j in kube.jobs().values()), "every Job suspended"
    )
    js = kube.until_condition("Suspended")
    suspended = next(x for x in js["status"]["conditions"] if x["type"] == "Suspended")
    assert (suspended["reason"], suspended["message"]) == ("SuspendedJobs", "jobset is suspended")


def test_g13_ttl_deletes_the_finished_jobset(kube: Kube) -> None:
    kube.create(jobset("ttl", rjob("a"), ttlSecondsAfterFinished=0))
    kube.until_jobs(["ttl-a-0"])
    kube.complete("ttl-a-0")
    kube.until(lambda: kube.jobset("ttl") is None, "the JobSet deleted by its TTL")
    kube.until(lambda: not kube.jobs(), "its Jobs collected")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            jobset("a" * 62, rjob("rj", 101)),
            TOO_LONG.format("job"),
        ),
        (
            jobset("a" * 56, rjob("rj", 1)),
            TOO_LONG.format("pod"),
        ),
        (
            jobset(
                "test-jobset",
                {
                    **rjob("test-jobset-replicated-job-0", 2147483647),
                    "template": {
                        "spec": {
                            "parallelism": 2147483647,
                            "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}},
                        }
                    },
                },
            ),
            "the product of replicas and parallelism must not exceed 2147483647 for "
            "replicatedJob 'test-jobset-replicated-job-0'",
        ),
        (
            jobset(
                "x",
                rjob("a"),
                rjob("b", dependsOn=[{"name": "a", "status": "Ready"}]),
                startupPolicy={"startupPolicyOrder": "InOrder"},
            ),
            "StartupPolicy and DependsOn APIs are mutually exclusive",
        ),
        (
            jobset("x", rjob("a", dependsOn=[{"name": "a", "status": "Ready"}])),
            "DependsOn can't be set for the first ReplicatedJob",
        ),
        (
            jobset(
                "x", rjob("a"), successPolicy={"operator": "All", "targetReplicatedJobs": ["nope"]}
            ),
            "invalid replicatedJob name 'nope' does not appear in .spec.ReplicatedJobs",
        ),
        (
            jobset(
                "x", rjob("a"), failurePolicy={"rules": [{"name": "r", "action": "RestartJob"}]}
            ),
            "RestartJob and RestartJobAndIgnoreMaxRestarts failure policy actions are not "
            "allowed when RestartJob feature gate is disabled",
        ),
        (
            jobset("x", rjob("a"), coordinator={"replicatedJob": "b"}),
            "coordinator replicatedJob b does not exist",
        ),
    ],
)
def test_g14_create_is_refused_with_jobsets_message(
    kube: Kube, body: dict[str, Any], message: str
) -> None:
    with pytest.raises(client.ApiException) as caught:
        kube.create(body)
    assert caught.value.status == 422
    assert message in json.loads(caught.value.body)["message"]


def test_g14_unnamed_rules_are_named_and_updates_are_judged(kube: Kube) -> None:
    rules = [
        {"action": "FailJobSet"},
        {"name": "mine", "action": "RestartJobSet"},
        {"action": "FailJobSet"},
    ]
    created = kube.create(test_jobset(suspend=True, failurePolicy={"rules": rules}))
    assert [r["name"] for r in created["spec"]["failurePolicy"]["rules"]] == [
        "failurePolicyRule0",
        "mine",
        "failurePolicyRule2",
    ]
    for patch in (
        {"spec": {"successPolicy": {"operator": "Any"}}},
        {"spec": {"failurePolicy": {"maxRestarts": 3}}},
    ):
        with pytest.raises(client.ApiException) as caught:
            kube.patch(patch)
        assert caught.value.status == 422
        assert "Value is immutable" in json.loads(caught.value.body)["message"]
    replicated = created["spec"]["replicatedJobs"]
    replicated[0]["template"]["spec"]["template"]["metadata"] = {"labels": {"kueue": "yes"}}
    kube.patch({"spec": {"replicatedJobs": replicated}})  # suspended: the pod template may change
    kube.patch({"spec": {"suspend": False}})
    replicated[0]["template"]["spec"]["template"]["metadata"] = {"labels": {"kueue": "no"}}
    with pytest.raises(client.ApiException) as caught:
        kube.patch({"spec": {"replicatedJobs": replicated}})
    assert "field is immutable" in json.loads(caught.value.body)["message"]


PLAIN = """apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: plain
spec:
  replicatedJobs:
  - name: workers
    replicas: 2
    template:
      spec:
        parallelism: 2
        completions: 2
        template:
          spec:
            containers:
            - name: main
              image: busybox
              command: ["true"]
"""


def test_a_plain_jobset_applied_with_kubectl_is_accepted_with_defaults(
    kube: Kube, tmp_path: Path
) -> None:
    binary = shutil.which("kubectl")
    if binary is None:
        pytest.skip("kubectl is not installed")
    env = {
        "KUBECONFIG": str(kube.kubeconfig),
        "KUBECACHEDIR": str(tmp_path / "cache"),
        "HOME": str(tmp_path),
    }
    done = subprocess.run(
        [binary, "apply", "-n", kube.ns, "-f", "-"],
        input=PLAIN,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "jobset.jobset.x-k8s.io/plain created" in done.stdout
    js = kube.jobset("plain") or {}
    assert js["spec"]["network"]["enableDNSHostnames"] is True
    assert js["spec"]["replicatedJobs"][0]["groupName"] == "default"
    assert js["spec"]["replicatedJobs"][0]["template"]["spec"]["completionMode"] == "Indexed"
    kube.until_jobs(["plain-workers-0", "plain-workers-1"])
    listed = subprocess.run(
        [binary, "get", "jobsets", "-n", kube.ns],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    )
    assert listed.stdout.split()[:6] == [
        "NAME",
        "TERMINALSTATE",
        "RESTARTS",
        "COMPLETED",
        "SUSPENDED",
        "AGE",
    ]


def _sim_job(
    name: str, replicas: int, pods: int, exit_code: int = 0, **extra: Any
) -> dict[str, Any]:
    annotations = {"sim.trainop.dev/exit-code": str(exit_code)} if exit_code else {}
    pod = {
        "metadata": {"annotations": annotations},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]},
    }
    job = {"parallelism": pods, "completions": pods, "backoffLimit": 0, "template": pod}
    return {"name": name, "replicas": replicas, "template": {"spec": job}, **extra}


def test_in_a_local_session_with_the_job_controller_and_a_kubelet(tmp_path: Path) -> None:
    """The whole chain of ``trainop local up``: JobSet → Jobs (the Job controller) → pods (the
    simulated kubelet, pods run 0.2 s). A two-step JobSet (``node`` after ``init`` Complete)
    completes; one whose pods exit 1 with ``maxRestarts: 1`` is restarted once (restart attempt
    1), then Failed."""

    def kubelet(http: Any, clock: Any) -> SimulatedKubelet:
        return SimulatedKubelet(client=http, clock=clock, defaults=Rules(run_seconds=0.2))

    async def body() -> None:
        async with LocalCluster(ClusterConfig(state_dir=tmp_path / "state"), kubelet=kubelet) as cl:
            resource = JOBSETS
            steps = [
                _sim_job("init", 1, 1),
                _sim_job("node", 2, 2, dependsOn=[{"name": "init", "status": "Complete"}]),
            ]
            await cl.client.create(resource, jobset("ok", *steps), namespace="default")
            failing = jobset(
                "bad", _sim_job("node", 1, 2, exit_code=1), failurePolicy={"maxRestarts": 1}
            )
            await cl.client.create(resource, failing, namespace="default")

            async def finished() -> dict[str, Any] | NotYet:
                found = {}
                for name in ("ok", "bad"):
                    status = (await cl.client.get(resource, name=name, namespace="default")).get(
                        "status"
                    ) or {}
                    found[name] = status
                done = all(s.get("terminalState") for s in found.values())
                return found if done else NotYet(found)

            found = await until(finished, timeout=DEADLINE, what="both JobSets finished")
            assert found["ok"]["terminalState"] == "Completed"
            assert _entries(found["ok"]) == {"node": {"succeeded": 2}, "init": {"succeeded": 1}}
            failed = next(x for x in found["bad"]["conditions"] if x["type"] == "Failed")
            assert (failed["reason"], found["bad"]["restarts"]) == ("ReachedMaxRestarts", 1)
            pods = (await cl.client.list(PODS, namespace="default")).items
            hosts = {p["spec"]["hostname"]: p["spec"]["subdomain"] for p in pods}
            assert {h: s for h, s in hosts.items() if h.startswith("ok-node")} == {
                "ok-node-0-0": "ok",
                "ok-node-0-1": "ok",
                "ok-node-1-0": "ok",
                "ok-node-1-1": "ok",
            }
            attempts = {
                p["metadata"]["labels"][P + "restart-attempt"]
                for p in pods
                if p["metadata"]["name"].startswith("bad-")
            }
            assert attempts == {"1"}  # the first attempt's Job and pods are gone

    asyncio.run(body())


def test_g2_subdomain_and_coordinator(kube: Kube) -> None:
    coordinator = {"replicatedJob": "replicated-job-b", "jobIndex": 1, "podIndex": 0}
    network = {"enableDNSHostnames": True, "subdomain": "custom"}
    kube.create(test_jobset(network=network, coordinator=coordinator))
    jobs = kube.until_jobs(ALL4)
    endpoint = "test-js-replicated-job-b-1-0.custom"
    for job in jobs.values():
        assert job["metadata"]["labels"][P + "coordinator"] == endpoint
        assert job["spec"]["template"]["metadata"]["annotations"][P + "coordinator"] == endpoint
        assert job["spec"]["template"]["spec"]["subdomain"] == "custom"
    kube.until(lambda: _service(kube, "custom"), "the Service named after the subdomain")


def test_g5_restart_ignoring_max_restarts(kube: Kube) -> None:
    rule = {"name": "always", "action": "RestartJobSetAndIgnoreMaxRestarts"}
    kube.create(test_jobset(failurePolicy={"maxRestarts": 0, "rules": [rule]}))
    kube.until_jobs(ALL4, restart_attempt="0")
    kube.fail(A0)
    kube.until_jobs(ALL4, restart_attempt="1")
    kube.fail("test-js-replicated-job-b-0")
    kube.until_jobs(ALL4, restart_attempt="2")
    js = kube.until_condition("RestartingJobSet")
    status = js["status"]
    assert (status["restarts"], status.get("restartsCountTowardsMax", 0)) == (2, 0)
    restarting = next(x for x in status["conditions"] if x["type"] == "RestartingJobSet")
    assert restarting["reason"] == "FailurePolicy_always"
    assert restarting["message"] == (
        "applying RestartJobSetAndIgnoreMaxRestarts failure policy action "
        "(first failed job: test-js-replicated-job-b-0)"
    )
