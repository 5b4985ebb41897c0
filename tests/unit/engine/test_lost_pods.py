"""Terminating pods (docs/design/005): not active, not failed while their grace period lasts;
Failed once it is over by ``LOST_AFTER`` (a lost node), as upstream counted them at once."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from support import NOW, TERMINATING, apply_plan, make_job, run, with_phase

from trainop.api.types import Job
from trainop.engine import conditions
from trainop.engine.actions import Create, Delete
from trainop.engine.observed import LOST_AFTER, Observed, name_of

GRACE = 30


def _started(policy: str) -> tuple[Job, Observed]:
    job = make_job("JAXJob", {"Worker": 2})
    specs = {
        rt: s.model_copy(update={"restart_policy": policy})
        for rt, s in job.spec.replica_specs.items()
    }
    job = job.model_copy(update={"spec": job.spec.model_copy(update={"replica_specs": specs})})
    job, observed = apply_plan(job, Observed(), run(job))
    return job, Observed(tuple(with_phase(p, "Running") for p in observed.pods), observed.services)


def _terminating(observed: Observed, name: str) -> Observed:
    def mark(pod: Any) -> Any:
        if name_of(pod) != name:
            return pod
        meta = {**pod["metadata"], "deletionTimestamp": TERMINATING}
        return {**pod, "metadata": {**meta, "deletionGracePeriodSeconds": GRACE}}

    return Observed(tuple(mark(p) for p in observed.pods), observed.services)


LOST = timedelta(seconds=GRACE) + LOST_AFTER


@pytest.mark.parametrize(
    ("policy", "after", "failed", "condition"),
    [
        ("Never", LOST - timedelta(seconds=1), 0, None),
        ("Never", LOST, 1, "Failed"),
        ("OnFailure", LOST - timedelta(seconds=1), 0, None),
        ("OnFailure", LOST, 1, "Restarting"),
        ("ExitCode", LOST, 1, "Restarting"),  # exit code unknown: retryable, as evicted
    ],
)
def test_a_terminating_running_pod_counts_failed_once_lost(
    policy: str, after: timedelta, failed: int, condition: str | None
) -> None:
    job, observed = _started(policy)
    observed = _terminating(observed, "job-worker-1")
    result = run(job, observed, now=NOW + after)
    worker = (result.status.replica_statuses or {})["Worker"]
    assert (worker.active, worker.failed) == (1, failed or None)
    found = tuple(result.status.conditions or ())
    for name in ("Failed", "Restarting"):
        assert conditions.is_true(found, name) == (name == condition)
    assert not [a for a in result.actions if isinstance(a, Create | Delete) and a.kind == "Pod"]
    if condition is None:
        assert result.requeue_after == LOST - after, "planned again when the pod counts as lost"


def test_a_terminating_pod_that_finished_is_counted_by_its_phase_at_once() -> None:
    job, observed = _started("Never")
    observed = _terminating(observed, "job-worker-1")
    pods = tuple(
        with_phase(p, "Succeeded", exit_code=0) if name_of(p) == "job-worker-1" else p
        for p in observed.pods
    )
    result = run(job, Observed(pods, observed.services), now=NOW + LOST)
    worker = (result.status.replica_statuses or {})["Worker"]
    assert (worker.active, worker.succeeded, worker.failed) == (1, 1, None)
