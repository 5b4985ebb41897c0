"""Golden cases G8 (conditions and jobsStatus) and G9 (``activeDeadlineSeconds``) of the
Trainer v2 spec §8, plus the terminal rule fixed after v2.3.0 (§7.1): ``Complete``/``Failed``
never change and ``Failed`` survives the JobSet's deletion. Expected values from the spec."""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

import pytest
from tests.unit.engine.trainer.builders import NOW, applied, g1_runtime, g1_trainjob, run

from trainop.engine.trainer.plan import Observed, Plan


def _next(tj: dict[str, Any], result: Plan, **spec: Any) -> dict[str, Any]:
    tj = copy.deepcopy(tj)
    tj["status"] = result.status
    tj["spec"].update(spec)
    return tj


def _brief(status: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    return [(c["type"], c["status"], c["reason"], c["message"]) for c in status["conditions"]]


def _jobset_with(
    jobset: dict[str, Any], condition: dict[str, Any], counters: dict[str, dict[str, int]]
) -> dict[str, Any]:
    jobset = copy.deepcopy(jobset)
    jobset["status"] = {
        "conditions": [
            {**condition, "status": "True", "lastTransitionTime": "2025-06-15T12:05:00Z"}
        ],
        "replicatedJobsStatus": [
            {
                "name": n,
                "ready": 0,
                "succeeded": 0,
                "failed": 0,
                "active": 0,
                "suspended": 0,
                **counters.get(n, {}),
            }
            for n in ("dataset-initializer", "model-initializer", "node")
        ],
    }
    return jobset


def _resumed() -> tuple[dict[str, Any], dict[str, Any]]:
    first = run(g1_trainjob(), g1_runtime())
    assert _brief(first.status) == [("Suspended", "True", "Suspended", "TrainJob is suspended")]
    jobset = applied(first, "JobSet")
    resumed_tj = _next(g1_trainjob(), first, suspend=False)
    resumed = run(resumed_tj, g1_runtime(), Observed(jobset=jobset, snapshot={}))
    assert _brief(resumed.status) == [("Suspended", "False", "Resumed", "TrainJob is resumed")]
    assert applied(resumed, "JobSet")["spec"]["suspend"] is False
    return _next(resumed_tj, resumed), applied(resumed, "JobSet")


def test_g8_complete() -> None:
    tj, jobset = _resumed()
    completed = {
        "type": "Completed",
        "reason": "AllJobsCompleted",
        "message": "jobset completed successfully",
    }
    counters = {n: {"succeeded": 1} for n in ("dataset-initializer", "model-initializer", "node")}
    result = run(
        tj, g1_runtime(), Observed(jobset=_jobset_with(jobset, completed, counters), snapshot={})
    )
    assert _brief(result.status) == [
        ("Suspended", "False", "Resumed", "TrainJob is resumed"),
        ("Complete", "True", "AllJobsCompleted", "jobset completed successfully"),
    ]
    assert result.status["conditions"][1]["lastTransitionTime"] == "2025-06-15T12:05:00Z"
    assert result.status["jobsStatus"] == [
        {"name": n, "ready": 0, "succeeded": 1, "failed": 0, "active": 0, "suspended": 0}
        for n in ("dataset-initializer", "model-initializer", "node")
    ]
    assert [o["kind"] for o in result.apply if o["kind"] == "JobSet"] == []
    # Terminal: suspending a Complete TrainJob changes nothing and applies nothing.
    later = run(_next(tj, result, suspend=True), g1_runtime(), Observed(jobset=None, snapshot={}))
    assert later.status == result.status
    assert later.apply == []


def test_g8_failed_stays_after_the_jobset_is_deleted() -> None:
    tj, jobset = _resumed()
    failed = {
        "type": "Failed",
        "reason": "FailedJobs",
        "message": "jobset failed due to one or more job failures",
    }
    result = run(
        tj,
        g1_runtime(),
        Observed(jobset=_jobset_with(jobset, failed, {"node": {"failed": 1}}), snapshot={}),
    )
    assert _brief(result.status)[1] == (
        "Failed",
        "True",
        "FailedJobs",
        "jobset failed due to one or more job failures",
    )
    gone = run(
        _next(tj, result),
        g1_runtime(),
        Observed(jobset=None, snapshot={}),
        NOW + timedelta(hours=1),
    )
    assert gone.status == result.status
    assert gone.apply == []
    assert gone.delete_jobset is False


def _deadline_job(seconds: int, *, suspend: bool = False) -> dict[str, Any]:
    tj = g1_trainjob()
    tj["spec"].update(activeDeadlineSeconds=seconds, suspend=suspend)
    return tj


def test_g9_deadline_exceeded_fails_and_deletes_the_jobset() -> None:
    at_creation = NOW - timedelta(seconds=60)
    first = run(_deadline_job(1), g1_runtime(), now=at_creation)
    assert first.requeue_after == pytest.approx(1)
    jobset = applied(first, "JobSet")
    result = run(_deadline_job(1), g1_runtime(), Observed(jobset=jobset, snapshot={}))
    failed = [c for c in result.status["conditions"] if c["type"] == "Failed"]
    assert [(c["status"], c["reason"], c["message"]) for c in failed] == [
        ("True", "DeadlineExceeded", "TrainJob exceeded its active deadline")
    ]
    assert result.delete_jobset is True
    assert [o for o in result.apply if o["kind"] == "JobSet"] == []


def test_g9_long_deadline_requeues_for_the_remaining_time() -> None:
    result = run(_deadline_job(3600), g1_runtime())
    assert not [c for c in result.status.get("conditions", []) if c["type"] == "Failed"]
    assert result.requeue_after == pytest.approx(3600 - 60)
    assert result.delete_jobset is False


def test_g9_never_fails_while_suspended() -> None:
    result = run(_deadline_job(1, suspend=True), g1_runtime(), now=NOW + timedelta(hours=5))
    assert _brief(result.status) == [("Suspended", "True", "Suspended", "TrainJob is suspended")]
    assert result.requeue_after is None


def test_g9_clock_starts_at_resume() -> None:
    first = run(_deadline_job(2, suspend=True), g1_runtime())
    resume_at = NOW + timedelta(minutes=10)
    resumed_tj = _next(_deadline_job(2, suspend=True), first, suspend=False)
    resumed = run(resumed_tj, g1_runtime(), Observed(jobset=applied(first, "JobSet")), resume_at)
    assert resumed.requeue_after == pytest.approx(2)
    tj = _next(resumed_tj, resumed)
    early = run(
        tj,
        g1_runtime(),
        Observed(jobset=applied(resumed, "JobSet")),
        resume_at + timedelta(seconds=1),
    )
    assert not [c for c in early.status["conditions"] if c["type"] == "Failed"]
    late = run(
        tj,
        g1_runtime(),
        Observed(jobset=applied(resumed, "JobSet")),
        resume_at + timedelta(seconds=3),
    )
    assert [c["reason"] for c in late.status["conditions"] if c["type"] == "Failed"] == [
        "DeadlineExceeded"
    ]
    assert late.delete_jobset is True
