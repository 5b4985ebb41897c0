"""One pass over a JobSet (JobSet spec 2.2, 2.6, 2.7, 2.9-2.13; golden cases G3, G6, G7, G9-G13),
with a fixed clock."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from tests.unit.cluster.controllers.jobset_fixtures import (
    NOW,
    all_jobs,
    by_name,
    complete,
    cond,
    fail,
    fixture_jobset,
    jobset,
    ready,
    replicated,
)
from trainop.cluster.controllers.jobset.reconcile import Plan, reconcile
from trainop.cluster.controllers.jobset.suspension import resume_patch

ATTEMPT = "jobset.sigs.k8s.io/restart-attempt"


def _pass(
    js: dict[str, Any], jobs: list[dict[str, Any]], *, service: bool = True, later: float = 0
) -> Plan:
    return reconcile(js, jobs, service_exists=service, now=NOW + timedelta(seconds=later))


def _created(plan: Plan) -> list[str]:
    return [j["metadata"]["name"] for j in plan.create_jobs]


def test_first_pass_creates_service_and_every_job() -> None:
    plan = _pass(fixture_jobset(), [], service=False)
    assert plan.create_service is not None
    assert plan.create_service["metadata"]["name"] == "test-js"
    assert plan.create_service["spec"] == {
        "clusterIP": "None",
        "publishNotReadyAddresses": True,
        "selector": {"jobset.sigs.k8s.io/jobset-name": "test-js"},
    }
    assert len(plan.create_jobs) == 4
    assert plan.status == {
        "restarts": 0,
        "replicatedJobsStatus": [
            {
                "name": "replicated-job-b",
                "ready": 0,
                "succeeded": 0,
                "failed": 0,
                "active": 0,
                "suspended": 0,
            },
            {
                "name": "replicated-job-a",
                "ready": 0,
                "succeeded": 0,
                "failed": 0,
                "active": 0,
                "suspended": 0,
            },
        ],
    }


def test_g3_service_name_and_publish_flag() -> None:
    js = fixture_jobset(
        network={
            "enableDNSHostnames": True,
            "subdomain": "test-subdomain",
            "publishNotReadyAddresses": False,
        }
    )
    service = _pass(js, [], service=False).create_service
    assert service is not None
    assert (service["metadata"]["name"], service["spec"]["publishNotReadyAddresses"]) == (
        "test-subdomain",
        False,
    )
    assert _pass(js, [], service=True).create_service is None
    unset = fixture_jobset(network={"enableDNSHostnames": True})
    assert (
        _pass(unset, [], service=False).create_service["spec"]["publishNotReadyAddresses"] is True
    )  # type: ignore[index]


def test_g6_restart_then_recreate_with_next_attempt_then_max_restarts() -> None:
    js = fixture_jobset(failurePolicy={"maxRestarts": 1})
    jobs = all_jobs(js)
    plan = _pass(js, [fail(jobs[0]), *jobs[1:]])
    assert plan.status is not None
    assert plan.status["restarts"] == 1
    assert plan.create_jobs == []
    assert plan.delete_jobs == []
    js["status"] = plan.status
    plan = _pass(js, [fail(jobs[0]), *jobs[1:]])
    assert sorted(plan.delete_jobs) == sorted(
        j["metadata"]["name"] for j in jobs
    )  # foreground, all 4
    assert plan.create_jobs == []  # names still held by the old attempt
    plan = _pass(js, [])
    assert len(plan.create_jobs) == 4
    assert {j["metadata"]["labels"][ATTEMPT] for j in plan.create_jobs} == {"1"}
    new = all_jobs(js)
    plan = _pass(js, [fail(new[2]), *new[:2], *new[3:]])
    assert plan.status is not None
    failed = cond(plan.status, "Failed")
    assert failed is not None
    assert failed["reason"] == "ReachedMaxRestarts"
    assert plan.status["terminalState"] == "Failed"


def test_blocking_recreate_creates_nothing_while_an_old_job_exists() -> None:
    js = fixture_jobset(failurePolicy={"maxRestarts": 1, "restartStrategy": "BlockingRecreate"})
    old = all_jobs(js)
    js["status"] = {"restarts": 1}
    assert _pass(js, old[:1]).create_jobs == []
    js["spec"]["failurePolicy"]["restartStrategy"] = "Recreate"
    assert len(_pass(js, old[:1]).create_jobs) == 3


def test_g7_restarting_condition_turns_false_when_all_jobs_ready() -> None:
    rule = {"name": "Rule1", "action": "RestartJobSet", "onJobFailureReasons": ["PodFailurePolicy"]}
    js = fixture_jobset(failurePolicy={"maxRestarts": 1, "rules": [rule]})
    jobs = all_jobs(js)
    plan = _pass(js, [fail(jobs[0], "PodFailurePolicy"), *jobs[1:]])
    assert plan.status is not None
    restarting = cond(plan.status, "RestartingJobSet")
    assert restarting is not None
    assert (restarting["status"], restarting["reason"]) == (
        "True",
        "FailurePolicy_Rule1",
    )
    js["status"] = plan.status
    new = [ready(j) for j in all_jobs(js)]
    plan = _pass(js, new)
    assert plan.status is not None
    restarting = cond(plan.status, "RestartingJobSet")
    assert restarting is not None
    assert (restarting["status"], restarting["reason"], restarting["message"]) == (
        "False",
        "JobsReady",
        "all jobs are ready",
    )


def test_g9_success_policy_all_and_any_with_targets() -> None:
    js = fixture_jobset(
        successPolicy={"operator": "All", "targetReplicatedJobs": ["replicated-job-b"]}
    )
    a, b0, b1, b2 = all_jobs(js)
    assert _pass(js, [complete(a), b0, b1, b2]).status.get("terminalState") is None  # type: ignore[union-attr]
    assert _pass(js, [a, complete(b0), b1, b2]).status.get("terminalState") is None  # type: ignore[union-attr]
    plan = _pass(js, [a, complete(b0), complete(b1), complete(b2)])
    assert plan.status is not None
    assert plan.status["terminalState"] == "Completed"
    completed = cond(plan.status, "Completed")
    assert completed is not None
    assert (completed["reason"], completed["message"]) == (
        "AllJobsCompleted",
        "jobset completed successfully",
    )
    js_any = fixture_jobset(
        successPolicy={"operator": "Any", "targetReplicatedJobs": ["replicated-job-b"]}
    )
    plan = _pass(js_any, [a, b0, complete(b1), b2])
    assert plan.status is not None
    assert plan.status["terminalState"] == "Completed"
    js_any["status"] = plan.status
    after = _pass(js_any, [a, b0, complete(b1), b2])  # next pass: active Jobs deleted
    assert sorted(after.delete_jobs) == [
        "test-js-replicated-job-a-0",
        "test-js-replicated-job-b-0",
        "test-js-replicated-job-b-2",
    ]


def test_failure_is_judged_before_success() -> None:
    js = fixture_jobset(successPolicy={"operator": "Any"})
    a, b0, b1, b2 = all_jobs(js)
    plan = _pass(js, [complete(a), fail(b0), b1, b2])
    assert plan.status is not None
    assert plan.status["terminalState"] == "Failed"


def test_g10_depends_on_ready() -> None:
    js = jobset(
        "depends-on",
        replicated("rjob-a", 1),
        replicated("rjob-b", 3, dependsOn=[{"name": "rjob-a", "status": "Ready"}]),
    )
    assert _created(_pass(js, [])) == ["depends-on-rjob-a-0"]
    a = ready(all_jobs(js)[0])
    plan = _pass(js, [a])
    assert _created(plan) == ["depends-on-rjob-b-0", "depends-on-rjob-b-1", "depends-on-rjob-b-2"]
    assert plan.status is not None
    assert plan.status["replicatedJobsStatus"] == [
        {"name": "rjob-b", "ready": 0, "succeeded": 0, "failed": 0, "active": 0, "suspended": 0},
        {"name": "rjob-a", "ready": 1, "succeeded": 0, "failed": 0, "active": 1, "suspended": 0},
    ]


def test_depends_on_complete_waits_for_success() -> None:
    js = jobset(
        "t",
        replicated("init", 1),
        replicated("node", 2, dependsOn=[{"name": "init", "status": "Complete"}]),
    )
    init = all_jobs(js)[0]
    assert _created(_pass(js, [ready(init)])) == []
    assert _created(_pass(js, [complete(init)])) == ["t-node-0", "t-node-1"]


def test_g11_in_order_startup() -> None:
    js = fixture_jobset(startupPolicy={"startupPolicyOrder": "InOrder"})
    plan = _pass(js, [])
    assert _created(plan) == ["test-js-replicated-job-a-0"]
    assert plan.status is not None
    assert cond(plan.status, "StartupPolicyInProgress")["status"] == "True"  # type: ignore[index]
    js["status"] = plan.status
    a, b0, b1, b2 = all_jobs(js)
    assert len(_pass(js, [ready(a)]).create_jobs) == 3
    active = [dict(j, status={"active": 1}) for j in (b0, b1, b2)]
    plan = _pass(js, [ready(a), *active])
    assert plan.create_jobs == []
    assert plan.status is not None
    assert cond(plan.status, "StartupPolicyCompleted") is None
    plan = _pass(js, [ready(a)] + [ready(j) for j in (b0, b1, b2)])
    assert plan.status is not None
    assert cond(plan.status, "StartupPolicyCompleted")["status"] == "True"  # type: ignore[index]
    assert cond(plan.status, "StartupPolicyInProgress")["status"] == "False"  # type: ignore[index]


def test_g12_suspend_and_resume_with_new_node_selector() -> None:
    js = fixture_jobset(suspend=True)
    plan = _pass(js, [])
    assert all(j["spec"]["suspend"] is True for j in plan.create_jobs)
    assert plan.status is not None
    suspended = cond(plan.status, "Suspended")
    assert suspended is not None
    assert (suspended["reason"], suspended["message"]) == (
        "SuspendedJobs",
        "jobset is suspended",
    )
    js["status"] = plan.status
    jobs = [dict(j, status={"startTime": "2026-01-01T11:00:00Z"}) for j in all_jobs(js)]
    counted = _pass(js, jobs).status or js["status"]
    assert {e["name"]: e["suspended"] for e in counted["replicatedJobsStatus"]} == {
        "replicated-job-b": 3,
        "replicated-job-a": 1,
    }
    js["spec"]["suspend"] = False
    for rj in js["spec"]["replicatedJobs"]:
        rj["template"]["spec"]["template"]["spec"]["nodeSelector"] = {"zone": "b"}
    plan = _pass(js, jobs)
    assert len(plan.clear_start_time) == 4
    assert {p["spec"]["suspend"] for _, p in plan.patch_jobs} == {False}
    assert all(
        p["spec"]["template"]["spec"]["nodeSelector"] == {"zone": "b"} for _, p in plan.patch_jobs
    )
    assert plan.status is not None
    resumed = cond(plan.status, "Suspended")
    assert resumed is not None
    assert (resumed["status"], resumed["reason"]) == ("False", "ResumeJobs")


def test_suspending_a_running_jobset_patches_active_jobs_only() -> None:
    js = fixture_jobset(suspend=True)
    a, b0, b1, b2 = all_jobs(fixture_jobset())
    plan = _pass(js, [complete(a), b0, b1, b2])
    assert sorted(name for name, _ in plan.patch_jobs) == [
        "test-js-replicated-job-b-0",
        "test-js-replicated-job-b-1",
        "test-js-replicated-job-b-2",
    ]
    assert all(patch == {"spec": {"suspend": True}} for _, patch in plan.patch_jobs)


def test_g13_ttl() -> None:
    js = fixture_jobset(ttlSecondsAfterFinished=5)
    js["status"] = {
        "restarts": 0,
        "conditions": [
            {
                "type": "Completed",
                "status": "True",
                "reason": "AllJobsCompleted",
                "message": "jobset completed successfully",
                "lastTransitionTime": "2026-01-01T11:59:50Z",
            }
        ],
    }
    assert _pass(js, []).delete_jobset is True  # completed 10 s ago
    js["status"]["conditions"][0]["lastTransitionTime"] = "2026-01-01T11:59:58Z"
    plan = _pass(js, [])
    assert (plan.delete_jobset, plan.requeue_after) == (False, 3.0)
    del js["spec"]["ttlSecondsAfterFinished"]
    assert (_pass(js, []).delete_jobset, _pass(js, []).requeue_after) == (False, None)
    js["spec"]["ttlSecondsAfterFinished"] = 15
    js["status"]["conditions"][0].update(type="Failed", lastTransitionTime="2026-01-01T11:59:50Z")
    assert _pass(js, []).requeue_after == 5.0


def test_skipped_when_managed_elsewhere_or_deleting() -> None:
    assert _pass(fixture_jobset(managedBy="kueue.x-k8s.io/multikueue"), []) == Plan()
    js = fixture_jobset()
    js["metadata"]["deletionTimestamp"] = "2026-01-01T11:00:00Z"
    assert _pass(js, []) == Plan()
    unmanaged = fixture_jobset(managedBy="jobset.sigs.k8s.io/jobset-controller")
    assert len(_pass(unmanaged, []).create_jobs) == 4


def test_a_jobset_without_webhook_defaults_does_not_crash() -> None:
    js = jobset("bare", replicated("a", 2))
    del js["spec"]["network"], js["spec"]["successPolicy"]
    plan = _pass(js, [], service=False)
    assert plan.create_service is not None
    assert len(plan.create_jobs) == 2
    a0, a1 = all_jobs(js)
    assert _pass(js, [complete(a0), complete(a1)]).status["terminalState"] == "Completed"  # type: ignore[index]
    assert by_name([a0, a1], "bare-a-1") is a1


def test_in_order_resume_unsuspends_one_replicated_job_at_a_time() -> None:
    js = fixture_jobset(suspend=True, startupPolicy={"startupPolicyOrder": "InOrder"})
    plan = _pass(js, [])
    assert len(plan.create_jobs) == 4  # suspended: InOrder bypassed, every Job made at once
    assert plan.status is not None
    assert cond(plan.status, "StartupPolicyInProgress") is None
    js["spec"]["suspend"] = False
    a, b0, b1, b2 = all_jobs(js)
    for job in (a, b0, b1, b2):
        job["spec"]["suspend"] = True
    assert [name for name, _ in _pass(js, [a, b0, b1, b2]).patch_jobs] == [a["metadata"]["name"]]
    a_ready = ready(dict(a, spec={**a["spec"], "suspend": False}))
    names = [name for name, _ in _pass(js, [a_ready, b0, b1, b2]).patch_jobs]
    assert names == [j["metadata"]["name"] for j in (b0, b1, b2)]


def test_resume_patch_merges_the_current_template() -> None:
    job = {
        "spec": {
            "template": {
                "metadata": {"labels": {"keep": "1", "team": "old"}},
                "spec": {
                    "tolerations": [{"key": "a"}],
                    "nodeSelector": {"zone": "a", "disk": "ssd"},
                },
            }
        }
    }
    template = {
        "spec": {
            "template": {
                "metadata": {"labels": {"team": "new"}},
                "spec": {
                    "tolerations": [{"key": "b"}, {"key": "a"}],
                    "nodeSelector": {"zone": "b"},
                    "schedulingGates": [{"name": "kueue"}],
                },
            }
        }
    }
    assert resume_patch(job, template) == {
        "spec": {
            "suspend": False,
            "template": {
                "metadata": {"labels": {"keep": "1", "team": "new"}},
                "spec": {
                    "nodeSelector": {"zone": "b", "disk": "ssd"},
                    "tolerations": [{"key": "a"}, {"key": "b"}],
                    "schedulingGates": [{"name": "kueue"}],
                },
            },
        }
    }
    assert resume_patch(job, {}) == {"spec": {"suspend": False}}
