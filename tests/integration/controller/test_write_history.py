"""The crash test's history checks find what they are meant to find (synthetic histories)."""

from __future__ import annotations

import pytest

from tests.integration.controller.write_history import (
    PODS,
    Write,
    check_history,
    check_jobs,
    duplicates,
)

JOBS = "kubeflow.org/jaxjobs"


def pod(rv: int, kind: str, name: str, index: str = "0", uid: str = "") -> Write:
    labels = {
        "training.kubeflow.org/job-name": "j",
        "training.kubeflow.org/replica-type": "worker",
        "training.kubeflow.org/replica-index": index,
    }
    return Write(rv, kind, PODS, name, uid or f"u{rv}", labels, ("job-uid",))


def job(rv: int, kind: str, *conditions: str, uid: str = "job-uid") -> Write:
    return Write(rv, kind, JOBS, "j", uid, {}, (), frozenset(conditions))


def test_a_second_pod_in_a_live_slot_is_a_duplicate() -> None:
    writes = [pod(1, "ADDED", "j-worker-0"), pod(2, "ADDED", "j-worker-0-x")]
    assert len(duplicates(writes, PODS)) == 1


def test_a_pod_added_again_after_its_delete_is_no_duplicate_but_fails_exactly_once() -> None:
    writes = [job(1, "ADDED"), pod(2, "ADDED", "j-worker-0"), pod(3, "DELETED", "j-worker-0")]
    writes.append(pod(4, "ADDED", "j-worker-0"))
    assert duplicates(writes, PODS) == []
    with pytest.raises(AssertionError, match="more than once"):
        check_history(writes, jobs={"j"}, slots={("j", "worker", "0")})


def test_a_clean_history_passes() -> None:
    writes = [job(1, "ADDED"), pod(2, "ADDED", "j-worker-0"), pod(3, "MODIFIED", "j-worker-0")]
    writes.append(job(4, "MODIFIED", "Succeeded"))
    check_history(writes, jobs={"j"}, slots={("j", "worker", "0")})


@pytest.mark.parametrize(
    ("writes", "message"),
    [
        ([job(1, "ADDED"), job(2, "DELETED")], "deleted"),
        ([job(1, "ADDED"), job(2, "MODIFIED", uid="other")], "replaced"),
        ([job(1, "ADDED", "Succeeded"), job(2, "MODIFIED", "Running")], "taken back"),
        ([job(1, "ADDED"), job(2, "MODIFIED", "Failed")], "Failed"),
        ([], "never stored"),
    ],
)
def test_job_histories_that_break_a_claim_fail(writes: list[Write], message: str) -> None:
    with pytest.raises(AssertionError, match=message):
        check_jobs(writes, {"j"})
