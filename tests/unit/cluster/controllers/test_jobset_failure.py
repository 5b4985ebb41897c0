"""The failure policy (JobSet spec 2.8; golden cases G5 and G8's rule matching)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.cluster.controllers.jobset_fixtures import NOW, all_jobs, fail, fixture_jobset
from trainop.cluster.controllers.jobset import failure
from trainop.cluster.controllers.jobset.conditions import Conditions, Draft

A0 = "test-js-replicated-job-a-0"


def _draft(restarts: int = 0, counted: int = 0) -> Draft:
    return Draft(Conditions([], NOW), restarts=restarts, counted=counted)


def _failed(reason: str = "BackoffLimitExceeded") -> list[dict[str, Any]]:
    return [fail(all_jobs(fixture_jobset())[0], reason)]


def _only(draft: Draft) -> tuple[str, str, str]:
    (c,) = draft.conditions.items
    return c["type"], c["reason"], c["message"]


def test_g5_fail_jobset_action() -> None:
    draft = _draft()
    rule = {"name": "r", "action": "FailJobSet"}
    failure.apply({"rules": [rule]}, _failed(), draft)
    assert _only(draft) == (
        "Failed",
        "FailJobSetFailurePolicyAction",
        "applying FailJobSet failure policy action (first failed job: test-js-replicated-job-a-0)",
    )
    assert draft.terminal == "Failed"
    assert draft.conditions.events[0].type == "Warning"


def test_g5_restart_without_a_rule_and_with_rule1() -> None:
    draft = _draft(1, 1)
    failure.apply({"maxRestarts": 5}, _failed(), draft)
    assert (draft.restarts, draft.counted) == (2, 2)
    assert _only(draft)[:2] == ("RestartingJobSet", "DefaultFailurePolicy")
    assert [(e.type, e.reason) for e in draft.events] == [
        ("Warning", "RestartJobSetFailurePolicyAction")
    ]
    draft = _draft(1, 1)
    failure.apply(
        {"maxRestarts": 5, "rules": [{"name": "Rule1", "action": "RestartJobSet"}]},
        _failed(),
        draft,
    )
    assert _only(draft)[1] == "FailurePolicy_Rule1"
    assert (
        _only(draft)[2]
        == "applying RestartJobSet failure policy action (first failed job: " + A0 + ")"
    )


def test_g5_max_restarts_reached_and_ignore_max() -> None:
    draft = _draft(2, 2)
    failure.apply({"maxRestarts": 2}, _failed(), draft)
    assert (draft.restarts, draft.counted) == (2, 2)
    assert _only(draft)[:2] == ("Failed", "ReachedMaxRestarts")
    draft = _draft(1, 1)
    failure.apply(
        {"maxRestarts": 1, "rules": [{"name": "r", "action": "RestartJobSetAndIgnoreMaxRestarts"}]},
        _failed(),
        draft,
    )
    assert (draft.restarts, draft.counted) == (2, 1)
    assert draft.events[0].reason == "RestartJobSetAndIgnoreMaxRestartsFailurePolicyAction"


def test_empty_policy_fails_with_reached_max_restarts_and_nil_policy_with_failed_jobs() -> None:
    draft = _draft()
    failure.apply({}, _failed(), draft)
    assert _only(draft)[1] == "ReachedMaxRestarts"
    draft = _draft()
    failure.apply(None, _failed(), draft)
    assert _only(draft) == (
        "Failed",
        "FailedJobs",
        "jobset failed due to one or more job failures (first failed job: " + A0 + ")",
    )


def test_g8_rule_order_targets_reasons_and_patterns() -> None:
    jobs = all_jobs(fixture_jobset())
    a = fail(jobs[0], "MaxFailedIndexesExceeded", at="2026-01-01T11:00:05Z")
    b = fail(
        jobs[1], "PodFailurePolicy", "container crashed with exit 3", at="2026-01-01T11:00:01Z"
    )
    first = {
        "name": "F",
        "action": "FailJobSet",
        "onJobFailureReasons": ["MaxFailedIndexesExceeded"],
        "targetReplicatedJobs": ["replicated-job-a"],
    }
    second = dict(first, name="R", action="RestartJobSet")
    assert failure.choose({"rules": [first, second]}, [a, b])[0] == first
    assert failure.choose({"rules": [second, first]}, [a, b])[0] == second
    pattern = {
        "name": "P",
        "action": "FailJobSet",
        "onJobFailureMessagePatterns": ["exit [0-9]", "(["],
    }
    rule, job = failure.choose({"rules": [pattern]}, [a, b])
    assert rule == pattern
    assert job is b
    other = {
        "name": "O",
        "action": "FailJobSet",
        "targetReplicatedJobs": ["replicated-job-b"],
        "onJobFailureReasons": ["DeadlineExceeded"],
    }
    assert failure.choose({"rules": [other]}, [a, b]) == (None, b)  # no match: earliest failure


def test_gated_action_fails_the_pass() -> None:
    with pytest.raises(failure.GatedActionError):
        failure.apply({"rules": [{"name": "r", "action": "RestartJob"}]}, _failed(), _draft())
