"""Per-index back-off (spec §3.2-§3.5): failure counts carried by each index's pods, failed
indexes never recreated, ``MaxFailedIndexesExceeded`` and ``FailedIndexes`` — pure ``step``."""

from __future__ import annotations

from typing import Any

from tests.unit.cluster.controllers.jobs_fixtures import created_indexes, job, pod, run, types
from trainop.cluster.controllers.jobs import model

COUNT, IGNORED = model.FAILURE_COUNT_KEY, model.IGNORED_COUNT_KEY


def counted(index: int, phase: str, failures: int, **kw: Any) -> dict[str, Any]:
    made = pod(index, phase, **kw)
    made["metadata"]["annotations"][COUNT] = str(failures)
    return made


def test_new_pods_carry_their_index_failure_count() -> None:
    the_job = job(completions=2, parallelism=2, backoffLimitPerIndex=2)
    first = run(the_job, [])
    assert [p["metadata"]["annotations"][COUNT] for p in first.create] == ["0", "0"]
    again = run(the_job, [counted(0, "Failed", 0), counted(1, "Running", 0)])
    [replacement] = again.create
    assert replacement["metadata"]["annotations"][COUNT] == "1"
    assert IGNORED not in replacement["metadata"]["annotations"]
    assert again.status is not None
    assert (again.status["failed"], again.status["failedIndexes"]) == (1, "")


def test_an_index_past_its_limit_fails_and_is_not_recreated() -> None:
    the_job = job(completions=3, parallelism=3, backoffLimitPerIndex=1)
    pods = [counted(0, "Running", 0), counted(1, "Failed", 1), counted(2, "Running", 0)]
    result = run(the_job, pods)
    assert result.create == []
    assert result.status is not None
    assert result.status["failedIndexes"] == "1"
    assert "conditions" not in result.status, "other indexes still run"


def test_all_indexes_decided_with_a_failure_fails_the_job() -> None:
    the_job = job(completions=3, parallelism=3, backoffLimitPerIndex=0)
    pods = [counted(0, "Succeeded", 0), counted(1, "Failed", 0), counted(2, "Succeeded", 0)]
    result = run(the_job, pods)
    assert types(result) == [
        ("FailureTarget", "True", "FailedIndexes"),
        ("Failed", "True", "FailedIndexes"),
    ]
    assert result.status is not None
    assert result.status["conditions"][0]["message"] == "Job has failed indexes"
    assert (result.status["completedIndexes"], result.status["failedIndexes"]) == ("0,2", "1")


def test_more_failed_indexes_than_allowed_fails_the_job_at_once() -> None:
    the_job = job(completions=3, parallelism=3, backoffLimitPerIndex=0, maxFailedIndexes=0)
    running = counted(2, "Running", 0)
    result = run(the_job, [counted(0, "Running", 0), counted(1, "Failed", 0), running])
    assert types(result) == [("FailureTarget", "True", "MaxFailedIndexesExceeded")]
    assert result.status is not None
    message = result.status["conditions"][0]["message"]
    assert message == "Job has exceeded the specified maximal number of failed indexes"
    assert len(result.delete) == 2


def test_fail_index_rule_and_ignored_failures() -> None:
    policy = {
        "rules": [
            {"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [7]}},
            {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [3]}},
        ]
    }
    spec = {"podFailurePolicy": policy, "podReplacementPolicy": "Failed"}
    the_job = job(completions=2, parallelism=2, backoffLimitPerIndex=5, **spec)
    result = run(
        the_job, [counted(0, "Failed", 0, exit_code=7), counted(1, "Failed", 0, exit_code=3)]
    )
    assert result.status is not None
    assert result.status["failedIndexes"] == "0"
    assert result.status["failed"] == 1, "the ignored failure is not counted"
    assert created_indexes(result) == [1]
    assert result.create[0]["metadata"]["annotations"][IGNORED] == "1"
    assert result.create[0]["metadata"]["annotations"][COUNT] == "0"
