"""A Job's end in two steps, suspension and TTL: the conditions, reasons, messages and
counts of spec §3.6, §3.8 and §4 G15 ("indexed job completed", "indexed job failed",
"suspending…", "resuming…"), with fake time."""

from __future__ import annotations

from tests.unit.cluster.controllers.jobs_fixtures import (
    at,
    created_indexes,
    job,
    pod,
    run,
    types,
)
from trainop.cluster.controllers.jobs import model

REACHED = "Reached expected number of succeeded pods"
BACKOFF = "Job has reached the specified backoff limit"


def test_indexed_job_completed_gets_both_conditions_and_a_completion_time() -> None:
    pods = [pod(0, "Succeeded"), pod(1, "Failed"), pod(1, "Succeeded"), pod(2, "Succeeded")]
    result = run(job(parallelism=2, completions=3), pods, seconds=30)
    assert result.status is not None
    status = result.status
    assert (status["succeeded"], status["failed"], status["completedIndexes"]) == (3, 1, "0-2")
    assert types(result) == [
        ("SuccessCriteriaMet", "True", "CompletionsReached"),
        ("Complete", "True", "CompletionsReached"),
    ]
    assert {c["message"] for c in status["conditions"]} == {REACHED}
    assert status["completionTime"] == at(30)
    assert all(
        c["lastProbeTime"] == c["lastTransitionTime"] == at(30) for c in status["conditions"]
    )
    assert ("Normal", "Completed", "Job completed") in result.events
    assert status["uncountedTerminatedPods"] == {}
    assert sorted(result.strip) == sorted(p["metadata"]["name"] for p in pods)


def test_indexed_job_failed_waits_for_the_killed_pod_before_failed() -> None:
    running = pod(2, "Running")
    pods = [pod(0, "Succeeded"), pod(1, "Failed"), running]
    the_job = job(parallelism=2, completions=3, backoffLimit=0)
    first = run(the_job, pods)
    assert first.status is not None
    status = first.status
    assert (status["succeeded"], status["failed"], status["completedIndexes"]) == (1, 2, "0")
    assert first.delete == [running["metadata"]["name"]]
    assert status["terminating"] == 1
    assert types(first) == [("FailureTarget", "True", "BackoffLimitExceeded")]
    assert status["conditions"][0]["message"] == BACKOFF
    assert first.create == []

    # The killed pod is gone (a later sync): Failed, same reason and message, counts kept.
    later = job(parallelism=2, completions=3, backoffLimit=0, status=status)
    second = run(later, pods[:2], seconds=5, settled=first.settled)
    assert second.status is not None
    assert types(second) == [
        ("FailureTarget", "True", "BackoffLimitExceeded"),
        ("Failed", "True", "BackoffLimitExceeded"),
    ]
    assert second.status["conditions"][1]["message"] == BACKOFF
    assert second.status["failed"] == 2, "no pod counted twice"
    assert ("Warning", "BackoffLimitExceeded", BACKOFF) in second.events
    assert "completionTime" not in second.status


def test_a_finished_job_is_not_synced_again_but_its_pods_lose_the_finalizer() -> None:
    status = {"conditions": [{"type": "Complete", "status": "True"}], "completionTime": at(0)}
    leftover = pod(0, "Succeeded")
    result = run(job(completions=1, status=status), [leftover, pod(1, "Running")], seconds=9)
    assert result.status is None
    assert result.create == []
    assert result.delete == []
    assert leftover["metadata"]["name"] in result.strip


def test_suspending_deletes_active_pods_uncounted() -> None:
    pods = [pod(0, "Running"), pod(1, "Running")]
    status = {"startTime": at(0), "active": 2}
    result = run(job(parallelism=2, completions=4, suspend=True, status=status), pods)
    assert sorted(result.delete) == sorted(p["metadata"]["name"] for p in pods)
    assert sorted(result.strip) == sorted(result.delete), "stripped first: never failures"
    assert result.status is not None
    assert "active" not in result.status
    assert "failed" not in result.status
    assert result.status["terminating"] == 2
    assert types(result) == [("Suspended", "True", "JobSuspended")]
    assert result.status["conditions"][0]["message"] == "Job suspended"
    assert ("Normal", "Suspended", "Job suspended") in result.events
    assert result.status["startTime"] == at(0)


def test_resuming_creates_pods_and_restarts_the_clock() -> None:
    suspended = {"type": "Suspended", "status": "True", "reason": "JobSuspended",
                 "message": "Job suspended"}  # fmt: skip
    status = {"startTime": at(0), "conditions": [suspended]}
    result = run(job(parallelism=2, completions=4, suspend=False, status=status), [], seconds=60)
    assert created_indexes(result) == [0, 1]
    assert result.status is not None
    assert result.status["active"] == 2
    assert types(result) == [("Suspended", "False", "JobResumed")]
    assert result.status["conditions"][0]["message"] == "Job resumed"
    assert result.status["startTime"] == at(60)
    assert ("Normal", "Resumed", "Job resumed") in result.events


def test_a_job_created_suspended_has_no_start_time_and_no_pods() -> None:
    result = run(job(completions=2, parallelism=2, suspend=True), [])
    assert result.create == []
    assert result.status is not None
    assert "startTime" not in result.status
    assert types(result) == [("Suspended", "True", "JobSuspended")]
    unsuspended = run(job(completions=2, parallelism=2), [])
    assert unsuspended.status is not None
    assert "conditions" not in unsuspended.status, "no False Suspended from nothing"
    assert unsuspended.status["startTime"] == at(0)


def test_ttl_deletes_the_finished_job_once_it_has_passed() -> None:
    done = {
        "startTime": at(0),
        "completionTime": at(10),
        "conditions": [{"type": "Complete", "status": "True", "lastTransitionTime": at(10)}],
    }
    the_job = job(completions=1, ttlSecondsAfterFinished=5, status=done)
    early = run(the_job, [], seconds=12)
    assert not early.delete_job
    assert early.requeue_after == 3.0
    assert run(the_job, [], seconds=15).delete_job
    failed = {"conditions": [{"type": "Failed", "status": "True", "lastTransitionTime": at(0)}]}
    left = run(job(completions=1, ttlSecondsAfterFinished=15, status=failed), [], seconds=10)
    assert left.requeue_after == 5.0
    assert not run(job(completions=1, status=done), [], seconds=999).delete_job


def test_success_policy_ends_the_job_and_its_killed_pods_do_not_count() -> None:
    policy = {"rules": [{"succeededIndexes": "0-1"}, {"succeededCount": 1}]}
    running = pod(2, "Running")
    the_job = job(completions=3, parallelism=3, successPolicy=policy)
    result = run(the_job, [pod(0, "Succeeded"), running])
    assert result.status is not None
    assert types(result) == [("SuccessCriteriaMet", "True", "SuccessPolicy")]
    assert result.status["conditions"][0]["message"] == "Matched rules at index 1"
    assert result.delete == [running["metadata"]["name"]]
    assert "failed" not in result.status


def test_the_index_label_and_annotation_key_is_kubes() -> None:
    assert model.INDEX_KEY == "batch.kubernetes.io/job-completion-index"
    assert model.TRACKING_FINALIZER == "batch.kubernetes.io/job-tracking"
