"""Why a Job fails (spec §3.5): podFailurePolicy rules and their messages, the backoff limit
counting failed pods and OnFailure restarts, the active deadline, and the replacement
back-off (10 s doubling) — pure ``step`` with fake time."""

from __future__ import annotations

from typing import Any

from tests.unit.cluster.controllers.jobs_fixtures import (
    NOW,
    at,
    created_indexes,
    job,
    pod,
    run,
    types,
)
from trainop.cluster.controllers.jobs import failure

NEVER: dict[str, Any] = {"podReplacementPolicy": "Failed"}


def rules(*entries: dict[str, Any]) -> dict[str, Any]:
    return {"podFailurePolicy": {"rules": list(entries)}, **NEVER}


def test_fail_job_on_exit_code_names_container_pod_code_and_rule() -> None:
    policy = rules(
        {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [3]}},
        {
            "action": "FailJob",
            "onExitCodes": {"containerName": "main", "operator": "In", "values": [42]},
        },
    )
    bad = pod(0, "Failed", exit_code=42)
    result = run(job(completions=2, parallelism=2, **policy), [bad, pod(1, "Running")])
    assert types(result) == [("FailureTarget", "True", "PodFailurePolicy")]
    assert result.status is not None
    message = result.status["conditions"][0]["message"]
    assert message == (
        f"Container main for pod ns/{bad['metadata']['name']} failed with exit code 42 "
        "matching FailJob rule at index 1"
    )
    assert result.status["failed"] == 2, "the failed pod and the killed one"
    assert len(result.delete) == 1


def test_fail_job_on_pod_condition() -> None:
    policy = rules({"action": "FailJob", "onPodConditions": [{"type": "DisruptionTarget"}]})
    evicted = pod(0, "Failed", conditions=[{"type": "DisruptionTarget", "status": "True"}])
    result = run(job(completions=1, **policy), [evicted])
    assert result.status is not None
    assert result.status["conditions"][0]["message"] == (
        f"Pod ns/{evicted['metadata']['name']} has condition DisruptionTarget matching FailJob "
        "rule at index 0"
    )
    assert types(result)[-1] == ("Failed", "True", "PodFailurePolicy"), "nothing terminating"


def test_ignore_is_not_counted_and_the_pod_is_replaced_at_once() -> None:
    policy = rules({"action": "Ignore", "onExitCodes": {"operator": "In", "values": [3]}})
    ignored = pod(0, "Failed", exit_code=3)
    result = run(job(completions=1, backoffLimit=0, **policy), [ignored])
    assert result.status is not None
    assert "failed" not in result.status
    assert "conditions" not in result.status
    assert created_indexes(result) == [0]


def test_count_and_not_in_count_toward_the_backoff_limit() -> None:
    policy = rules({"action": "Count", "onExitCodes": {"operator": "NotIn", "values": [3]}})
    result = run(job(completions=1, backoffLimit=0, **policy), [pod(0, "Failed", exit_code=1)])
    assert result.status is not None
    assert result.status["failed"] == 1
    assert types(result)[0] == ("FailureTarget", "True", "BackoffLimitExceeded")


def test_on_failure_restarts_of_live_pods_reach_the_backoff_limit() -> None:
    the_job = job(completions=2, parallelism=2, restart="OnFailure", backoffLimit=6)
    under = run(the_job, [pod(0, "Running", restarts=3), pod(1, "Running", restarts=2)])
    assert under.status is not None
    assert "conditions" not in under.status
    over = run(the_job, [pod(0, "Running", restarts=3), pod(1, "Pending", restarts=3)])
    assert types(over) == [("FailureTarget", "True", "BackoffLimitExceeded")]
    assert over.status is not None
    assert over.status["failed"] == 2, "both live pods killed and counted"
    zero = job(completions=1, restart="OnFailure", backoffLimit=0)
    assert types(run(zero, [pod(0, "Running", restarts=1)]))[0][2] == "BackoffLimitExceeded"


def test_failed_pods_beyond_the_limit_fail_the_job_strictly_greater() -> None:
    pods = [pod(0, "Failed"), pod(0, "Failed")]
    at_limit = run(job(completions=1, backoffLimit=2), pods)
    assert at_limit.status is not None
    assert "conditions" not in at_limit.status
    over = run(job(completions=1, backoffLimit=1), [pod(0, "Failed"), pod(0, "Failed")])
    assert types(over)[0][2] == "BackoffLimitExceeded"


def test_active_deadline_fails_the_job_and_is_requeued_until_then() -> None:
    status = {"startTime": at(0), "active": 1}
    the_job = job(completions=1, activeDeadlineSeconds=60, status=status)
    early = run(the_job, [pod(0, "Running")], seconds=20)
    assert early.requeue_after == 40.0
    late = run(the_job, [pod(0, "Running")], seconds=60)
    assert types(late) == [("FailureTarget", "True", "DeadlineExceeded")]
    assert late.status is not None
    assert late.status["conditions"][0]["message"] == failure.DEADLINE[1]
    paused = job(completions=1, activeDeadlineSeconds=60, suspend=True, status=status)
    assert "DeadlineExceeded" not in str(run(paused, [], seconds=600).status)


def test_replacement_waits_ten_seconds_doubling_from_the_last_failure() -> None:
    first = [pod(0, "Failed", exit_code=1, finished=at(0))]
    the_job = job(completions=1)
    waiting = run(the_job, first, seconds=4)
    assert waiting.create == []
    assert waiting.requeue_after == 6.0
    assert created_indexes(run(the_job, first, seconds=10)) == [0]
    two = [*first, pod(0, "Failed", exit_code=1, finished=at(10))]
    assert run(the_job, two, seconds=20).requeue_after == 10.0, "20 s after the second"
    no_finish_time = pod(0, "Failed")  # as the spec's G15 test pods: the back-off is over
    assert failure.replacement_delay([no_finish_time], NOW) == 0.0
