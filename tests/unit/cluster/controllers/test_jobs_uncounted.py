"""Each ended pod counted exactly once across a crash: kube's ``uncountedTerminatedPods``
protocol (spec §3.4) — (1) the UIDs recorded, (2) the finalizers removed, (3) the counters
bumped and the record emptied — replayed by the pure ``step`` from each crash point, with
the memory of a restarted controller (no ``settled``)."""

from __future__ import annotations

import copy
from typing import Any

from tests.unit.cluster.controllers.jobs_fixtures import at, job, pod, run, types
from trainop.cluster.controllers.jobs import uncounted
from trainop.cluster.controllers.jobs.step import Step


def uid(the_pod: dict[str, Any]) -> str:
    return str(the_pod["metadata"]["uid"])


def name(the_pod: dict[str, Any]) -> str:
    return str(the_pod["metadata"]["name"])


def stripped(the_pod: dict[str, Any]) -> dict[str, Any]:
    """``the_pod`` once step (2) removed its tracking finalizer."""
    copied = copy.deepcopy(the_pod)
    copied["metadata"]["finalizers"] = []
    return copied


def restarted(the_job: dict[str, Any], status: dict[str, Any] | None) -> dict[str, Any]:
    """``the_job`` as a restarted controller reads it: with the last status written."""
    assert status is not None
    return {**the_job, "status": copy.deepcopy(status)}


def record_of(result: Step) -> dict[str, Any]:
    assert result.record is not None
    return dict(result.record["uncountedTerminatedPods"])


def test_a_non_indexed_success_is_recorded_before_its_finalizer_goes_and_counted_after() -> None:
    done = pod(None, "Succeeded")
    result = run(job(indexed=False, completions=1), [done], seconds=7)
    assert record_of(result) == {"succeeded": [uid(done)]}
    assert result.record is not None
    assert "succeeded" not in result.record, "not counted until the finalizer is gone"
    assert types(Step(status=result.record)) == [
        ("SuccessCriteriaMet", "True", "CompletionsReached")
    ]
    assert "completionTime" not in result.record, "finished only once nothing is uncounted"
    assert result.strip == [name(done)]
    assert result.after_strip, "the counters are written once the finalizer is gone"
    assert result.status is not None
    assert result.status["succeeded"] == 1
    assert result.status["uncountedTerminatedPods"] == {}
    assert result.status["completionTime"] == at(7)
    assert types(result)[-1] == ("Complete", "True", "CompletionsReached")


def test_a_crash_after_the_record_counts_the_success_once() -> None:
    done = pod(None, "Succeeded")
    the_job = job(indexed=False, completions=1)
    first = run(the_job, [done])
    again = run(restarted(the_job, first.record), [done], seconds=3)  # finalizer still there
    assert again.record is None, "the UID is recorded already: not added twice"
    assert again.strip == [name(done)]
    assert again.after_strip, "the counters still wait for the finalizer removal"
    assert again.status is not None
    assert again.status["succeeded"] == 1
    assert again.status["uncountedTerminatedPods"] == {}
    assert types(again)[-1] == ("Complete", "True", "CompletionsReached")


def test_a_crash_after_the_finalizer_removal_counts_the_success_once() -> None:
    done = pod(None, "Succeeded")
    the_job = job(indexed=False, completions=2, parallelism=1)
    first = run(the_job, [done])
    for pods in ([stripped(done)], []):  # the pod without its finalizer, or gone
        again = run(restarted(the_job, first.record), pods)
        assert again.record is None
        assert again.strip == []
        assert again.status is not None
        assert again.status["succeeded"] == 1
        assert again.status["uncountedTerminatedPods"] == {}
        assert len(again.create) == 1, "the second completion still needs a pod"


def test_a_failure_is_counted_once_so_the_backoff_limit_is_not_reached_early() -> None:
    failed = pod(0, "Failed")
    the_job = job(completions=1, backoffLimit=1)
    first = run(the_job, [failed])
    assert record_of(first) == {"failed": [uid(failed)]}
    assert first.record is not None
    assert "failed" not in first.record
    for pods in ([failed], [stripped(failed)]):  # crashed after step (1), after step (2)
        again = run(restarted(the_job, first.record), [*pods, pod(0, "Running")], seconds=60)
        assert again.status is not None
        assert again.status["failed"] == 1
        assert "conditions" not in again.status, "1 failure is within backoffLimit 1"
        assert again.status["uncountedTerminatedPods"] == {}


def test_pods_killed_by_a_failing_job_are_recorded_and_counted_once() -> None:
    bad, running = pod(0, "Failed"), pod(1, "Running")
    the_job = job(completions=2, parallelism=2, backoffLimit=0)
    first = run(the_job, [bad, running])
    assert record_of(first) == {"failed": sorted([uid(bad), uid(running)])}
    assert first.delete == [name(running)]
    assert types(Step(status=first.record)) == [("FailureTarget", "True", "BackoffLimitExceeded")]
    assert first.status is not None
    assert first.status["failed"] == 2

    # Crash after step (1): the killed pod was neither stripped nor deleted.
    again = run(restarted(the_job, first.record), [bad, running], seconds=1)
    assert again.record is None
    assert sorted(again.strip) == sorted([name(bad), name(running)])
    assert again.delete == [name(running)]
    assert again.status is not None
    assert again.status["failed"] == 2, "each pod once"


def test_an_indexed_success_goes_straight_to_completed_indexes() -> None:
    done, running = pod(0, "Succeeded"), pod(1, "Running")
    the_job = job(completions=2, parallelism=2)
    first = run(the_job, [done, running])
    assert first.record is None, "completedIndexes is a set: no record needed"
    assert not first.after_strip, "one write, before the finalizer goes"
    assert first.strip == [name(done)]
    assert first.status is not None
    assert (first.status["completedIndexes"], first.status["succeeded"]) == ("0", 1)
    assert first.status["uncountedTerminatedPods"] == {}
    again = run(restarted(the_job, first.status), [done, running])  # crashed before the strip
    assert again.strip == [name(done)]
    assert again.status is None, "index 0 is completed already: nothing changes"


def test_recorded_pods_already_released_are_counted_in_the_record_write() -> None:
    old, new = pod(None, "Failed"), pod(None, "Failed")
    the_job = job(indexed=False, completions=1, backoffLimit=6)
    status = {"failed": 3, "uncountedTerminatedPods": {"failed": [uid(old)]}}
    result = run(restarted(the_job, status), [stripped(old), new])
    assert record_of(result) == {"failed": [uid(new)]}
    assert result.record is not None
    assert result.record["failed"] == 4, "the released pod moves to the counter"
    assert result.strip == [name(new)]
    assert result.status is not None
    assert result.status["failed"] == 5


def test_the_first_write_withholds_the_terminal_condition() -> None:
    final = {
        "succeeded": 2,
        "failed": 1,
        "conditions": [
            {"type": "SuccessCriteriaMet", "status": "True"},
            {"type": "Complete", "status": "True"},
        ],
        "completionTime": at(0),
        "uncountedTerminatedPods": {},
    }
    awaiting = uncounted.Uncounted(succeeded={"b", "a"}, failed={"c"})
    first = uncounted.first_write(final, awaiting)
    assert first == {
        "conditions": [{"type": "SuccessCriteriaMet", "status": "True"}],
        "uncountedTerminatedPods": {"succeeded": ["a", "b"], "failed": ["c"]},
    }
    assert uncounted.recorded(first) == awaiting
    assert uncounted.recorded({}) == uncounted.Uncounted()
