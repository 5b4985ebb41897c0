"""Indexed Jobs: which pods one sync creates and deletes, and the counts it writes — the
``TestControllerSyncJob`` cases of spec §4 G15 (expected values from the spec)."""

from __future__ import annotations

from tests.unit.cluster.controllers.jobs_fixtures import created_indexes, job, pod, run
from trainop.cluster.controllers.jobs import indexes


def test_interval_notation_round_trips_as_kube_writes_it() -> None:
    assert indexes.format_intervals({2, 4, 5, 7, 8, 9}) == "2,4,5,7-9"
    assert indexes.format_intervals([0, 1]) == "0,1"
    assert indexes.format_intervals(range(3)) == "0-2"
    assert indexes.format_intervals([]) == ""
    assert indexes.parse_intervals("2,4,5,7-9") == {2, 4, 5, 7, 8, 9}
    assert indexes.parse_intervals("x,1-,3") == {3}


def test_some_running_and_completed_pods() -> None:
    phases = {0: "Running", 2: "Succeeded", 3: "Pending", 4: "Succeeded", 5: "Succeeded",
              7: "Succeeded", 8: "Succeeded", 9: "Succeeded"}  # fmt: skip
    result = run(job(parallelism=8, completions=20), [pod(i, p) for i, p in phases.items()])
    assert created_indexes(result) == [1, 6, 10, 11, 12, 13]
    assert result.status is not None
    assert result.status["active"] == 8
    assert result.status["succeeded"] == 6
    assert result.status["completedIndexes"] == "2,4,5,7-9"
    assert result.delete == []


def test_repeated_completed_index() -> None:
    pods = [pod(0, "Succeeded"), pod(1, "Succeeded"), pod(1, "Succeeded")]
    result = run(job(parallelism=2, completions=3), pods)
    assert created_indexes(result) == [2]
    assert result.status is not None
    assert (result.status["active"], result.status["succeeded"]) == (1, 2)
    assert result.status["completedIndexes"] == "0,1"


def test_some_failed_pods_are_replaced_at_their_index() -> None:
    pods = [pod(0, "Failed"), pod(1, "Pending"), pod(2, "Failed")]
    result = run(job(parallelism=3, completions=4, backoffLimit=6), pods)
    assert created_indexes(result) == [0, 2]
    assert result.status is not None
    assert (result.status["active"], result.status["failed"]) == (3, 2)


def test_repeated_indexes_delete_the_index_less_and_the_least_advanced_duplicate() -> None:
    no_index, pending_twin = pod(None, "Running"), pod(2, "Pending")
    pods = [no_index, pod(0, "Succeeded"), pod(1, "Running"), pod(2, "Running"), pending_twin]
    result = run(job(parallelism=5, completions=5), pods)
    names = {p["metadata"]["name"] for p in (no_index, pending_twin)}
    assert set(result.delete) == names
    assert set(result.strip) >= names, "removed on purpose: never counted as failed"
    assert result.create == []
    assert result.status is not None
    assert (result.status["active"], result.status["succeeded"]) == (2, 1)
    assert result.status["completedIndexes"] == "0"


def test_indexes_outside_the_range_are_deleted_and_not_counted() -> None:
    running, pending = pod(5, "Running"), pod(7, "Pending")
    pods = [pod(0, "Succeeded"), running, pod(6, "Succeeded"), pending, pod(8, "Failed")]
    result = run(job(parallelism=2, completions=5), pods)
    assert set(result.delete) == {running["metadata"]["name"], pending["metadata"]["name"]}
    assert result.create == []
    assert result.status is not None
    assert result.status["succeeded"] == 1
    assert "failed" not in result.status
    assert "active" not in result.status


def test_surplus_pods_go_when_parallelism_shrinks() -> None:
    pods = [pod(0, "Running", ready=True), pod(1, "Running"), pod(2, "Pending")]
    result = run(job(parallelism=1, completions=3), pods)
    assert result.delete == [pods[2]["metadata"]["name"], pods[1]["metadata"]["name"]]
    assert result.create == []


def test_non_indexed_work_queue_stops_creating_after_the_first_success() -> None:
    the_job = job(indexed=False, parallelism=3)
    the_job["spec"].pop("completionMode")
    first = run(the_job, [])
    assert len(first.create) == 3
    assert all(p["metadata"]["generateName"] == "job-" for p in first.create)
    done = run(the_job, [pod(None, "Succeeded"), pod(None, "Running"), pod(None, "Running")])
    assert done.create == []
    assert done.status is not None
    assert done.status["succeeded"] == 1
    assert "conditions" not in done.status, "complete only once no pod is active"


def test_non_indexed_completions_count_successes() -> None:
    the_job = job(indexed=False, completions=3, parallelism=2)
    result = run(the_job, [pod(None, "Succeeded"), pod(None, "Running")])
    assert len(result.create) == 1, "wanted min(3 - 1, 2) = 2 active"
    assert result.status is not None
    assert result.status["active"] == 2


def test_a_pod_deleted_before_success_is_a_failure_replaced_at_once() -> None:
    # podReplacementPolicy TerminatingOrFailed (the default): deleted pods count as failed.
    deleted = pod(0, "Running", deleting=True)
    result = run(job(completions=2, parallelism=2), [deleted, pod(1, "Running")])
    assert created_indexes(result) == [0]
    assert result.status is not None
    assert (result.status["failed"], result.status["terminating"]) == (1, 1)
    assert result.status["active"] == 2
    assert deleted["metadata"]["name"] in result.strip


def test_with_replacement_policy_failed_a_terminating_pod_holds_its_index() -> None:
    deleted = pod(0, "Running", deleting=True)
    the_job = job(completions=2, parallelism=2, podReplacementPolicy="Failed")
    result = run(the_job, [deleted, pod(1, "Running")])
    assert result.create == []
    assert result.status is not None
    assert "failed" not in result.status
    assert result.status["terminating"] == 1
    assert result.strip == []
