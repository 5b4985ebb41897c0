"""Classification, replicatedJobsStatus and the condition rules (JobSet spec 1.8, 2.4, 2.5;
golden case G4)."""

from __future__ import annotations

import pytest

from tests.unit.cluster.controllers.jobset_fixtures import (
    NOW,
    all_jobs,
    jobset,
    replicated,
    with_status,
)
from trainop.cluster.controllers.jobset import counts
from trainop.cluster.controllers.jobset.conditions import Conditions

RJ = "jobset.sigs.k8s.io/replicatedjob-name"


def _job(rj: str, parallelism: int, completions: int | None, ready: int, succeeded: int) -> dict:  # type: ignore[type-arg]
    spec = {"parallelism": parallelism} | ({"completions": completions} if completions else {})
    return {
        "metadata": {
            "name": f"{rj}-x",
            "labels": {RJ: rj, "jobset.sigs.k8s.io/restart-attempt": "0"},
        },
        "spec": spec,
        "status": {"ready": ready, "succeeded": succeeded},
    }


def test_g4_partial_jobs_ready() -> None:
    js = jobset("js", replicated("replicated-job-1", 1), replicated("replicated-job-2", 4))
    jobs = [
        _job("replicated-job-1", 1, 2, 1, 1),
        _job("replicated-job-2", 5, None, 2, 3),
        _job("replicated-job-2", 3, 2, 1, 1),
        _job("replicated-job-2", 2, 3, 2, 1),
        _job("replicated-job-2", 4, 5, 2, 1),
    ]
    found = counts.replicated_jobs_status(js, counts.classify(js, jobs))
    zero = {"succeeded": 0, "failed": 0, "active": 0, "suspended": 0}
    assert found == [
        {"name": "replicated-job-2", "ready": 3, **zero},
        {"name": "replicated-job-1", "ready": 1, **zero},
    ]


def test_previous_attempts_and_finished_jobs_are_sorted_out() -> None:
    js = jobset("js", replicated("a", 3))
    js["status"] = {"restarts": 1}
    old, new, done = all_jobs(js)
    old["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"] = "0"
    failed = {"type": "Failed", "status": "True"}
    done = with_status(done, conditions=[{"type": "FailureTarget", "status": "True"}])
    found = counts.classify(js, [old, with_status(new, conditions=[failed]), done])
    assert (len(found.previous), len(found.failed), len(found.active)) == (
        1,
        1,
        1,
    )  # FailureTarget alone: active
    assert counts.replicated_jobs_status(js, found)[0]["failed"] == 1


def test_a_non_integer_attempt_label_fails_the_pass() -> None:
    js = jobset("js", replicated("a", 1))
    job = all_jobs(js)[0]
    job["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"] = "one"
    with pytest.raises(counts.BadAttemptLabelError):
        counts.classify(js, [job])


def test_condition_rules() -> None:
    earlier = "2026-01-01T10:00:00Z"
    conds = Conditions(
        [
            {
                "type": "Suspended",
                "status": "True",
                "reason": "SuspendedJobs",
                "message": "jobset is suspended",
                "lastTransitionTime": earlier,
            }
        ],
        NOW,
    )
    assert not conds.set(
        "RestartingJobSet", False, ("JobsReady", "all jobs are ready")
    )  # never made False
    assert not conds.set("Suspended", True, ("SuspendedJobs", "jobset is suspended"))  # identical
    assert conds.set("Suspended", True, ("Other", "text"))
    assert conds.find("Suspended")["lastTransitionTime"] == earlier  # type: ignore[index]
    assert conds.set("Suspended", False, ("ResumeJobs", "jobset is resumed"))
    assert conds.find("Suspended")["lastTransitionTime"] == "2026-01-01T12:00:00Z"  # type: ignore[index]
    conds.set("StartupPolicyInProgress", True, ("InOrderStartupPolicyInProgress", "x"))
    conds.set("StartupPolicyCompleted", True, ("InOrderStartupPolicyCompleted", "y"))
    assert conds.find("StartupPolicyInProgress")["status"] == "False"  # type: ignore[index]
    assert conds.find("StartupPolicyInProgress")["reason"] == "InOrderStartupPolicyInProgress"  # type: ignore[index]
    assert [e.reason for e in conds.events] == [
        "Other",
        "ResumeJobs",
        "InOrderStartupPolicyInProgress",
        "InOrderStartupPolicyCompleted",
    ]
    assert all(e.type == "Normal" for e in conds.events)
