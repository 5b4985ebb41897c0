"""``kubectl get jobs`` cells as kube's Job printer prints them (``rest.jobprinters``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from trainop.cluster.apiserver.rest import jobprinters

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _at(seconds_ago: float) -> str:
    return (NOW - timedelta(seconds=seconds_ago)).isoformat().replace("+00:00", "Z")


def _job(spec: dict[str, Any], status: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "pi", "creationTimestamp": _at(300), **meta},
        "spec": spec,
        "status": status,
    }


def _holding(*kinds: str) -> list[dict[str, str]]:
    return [{"type": kind, "status": "True"} for kind in kinds]


@pytest.mark.parametrize(
    ("conditions", "deleting", "shown"),
    [
        ([], False, "Running"),
        (_holding("SuccessCriteriaMet", "Complete"), False, "Complete"),
        (_holding("FailureTarget", "Failed"), True, "Failed"),
        (_holding("Suspended"), True, "Terminating"),
        (_holding("Suspended"), False, "Suspended"),
        (_holding("FailureTarget"), False, "FailureTarget"),
        ([{"type": "Suspended", "status": "False"}], False, "Running"),
    ],
)
def test_status_is_the_first_condition_that_holds(
    conditions: list[dict[str, str]], deleting: bool, shown: str
) -> None:
    meta = {"deletionTimestamp": _at(1)} if deleting else {}
    assert jobprinters.job_status(_job({}, {"conditions": conditions}, **meta)) == shown


@pytest.mark.parametrize(
    ("spec", "succeeded", "shown"),
    [
        ({"completions": 4, "parallelism": 2}, 3, "3/4"),
        ({"parallelism": 3}, 0, "0/1 of 3"),
        ({"parallelism": 1}, 1, "1/1"),
        ({}, 0, "0/1"),
    ],
)
def test_completions(spec: dict[str, Any], succeeded: int, shown: str) -> None:
    assert jobprinters.completions(_job(spec, {"succeeded": succeeded})) == shown


def test_duration_runs_from_start_to_completion_or_now() -> None:
    assert jobprinters.duration(_job({}, {}), NOW) == ""
    running = _job({}, {"startTime": _at(200)})
    assert jobprinters.duration(running, NOW) == "3m20s"
    done = _job({}, {"startTime": _at(200), "completionTime": _at(150)})
    assert jobprinters.duration(done, NOW) == "50s"


def test_selector_in_label_selector_syntax() -> None:
    selector = {
        "matchLabels": {"batch.kubernetes.io/controller-uid": "u1"},
        "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["b", "a"]},
            {"key": "gone", "operator": "DoesNotExist"},
        ],
    }
    assert jobprinters.selector_text(selector) == (
        "batch.kubernetes.io/controller-uid=u1,!gone,tier in (a,b)"
    )
    assert jobprinters.selector_text(None) == "<none>"


def test_columns_and_one_row() -> None:
    columns, row = jobprinters.BUILTIN["batch/jobs"]
    names = [c["name"] for c in columns]
    assert names == [
        "Name",
        "Status",
        "Completions",
        "Duration",
        "Age",
        "Containers",
        "Images",
        "Selector",
    ]
    job = _job(
        {
            "completions": 2,
            "template": {"spec": {"containers": [{"name": "pi", "image": "perl:5"}]}},
            "selector": {"matchLabels": {"job-name": "pi"}},
        },
        {"succeeded": 2, "startTime": _at(100), "completionTime": _at(40)},
    )
    job["status"]["conditions"] = _holding("Complete")
    assert row(job, NOW) == ["pi", "Complete", "2/2", "60s", "5m", "pi", "perl:5", "job-name=pi"]
