"""Scale-down (spec 4.4, 4.5, 7.5, 9.1): lowering ``replicas`` deletes the pods and Services of
indexes at or beyond the new count, and nothing else; the next plan is quiet."""

from __future__ import annotations

import pytest
from support import CANONICAL, apply_plan, run, start, with_phase

from trainop.api.types import Job
from trainop.engine.actions import Create, Delete, Update
from trainop.engine.observed import Observed
from trainop.frameworks.registry import REGISTRY


def _scaled(job: Job, replica_type: str, replicas: int) -> Job:
    specs = dict(job.spec.replica_specs)
    specs[replica_type] = specs[replica_type].model_copy(update={"replicas": replicas})
    return job.model_copy(update={"spec": job.spec.model_copy(update={"replica_specs": specs})})


@pytest.mark.parametrize("kind", sorted(REGISTRY))
def test_lowering_worker_replicas_deletes_the_highest_indexes(kind: str) -> None:
    job, observed, _ = start(CANONICAL[kind])
    running = tuple(with_phase(p, "Running") for p in observed.pods)
    observed = Observed(running, observed.services, observed.pod_group, observed.objects)
    before = job.spec.replica_specs["Worker"].replicas or 0
    job = _scaled(job, "Worker", 1)
    result = run(job, observed)
    gone = {f"job-worker-{i}" for i in range(1, before)}
    deleted = {(a.kind, a.name) for a in result.actions if isinstance(a, Delete)}
    services = {("Service", name) for name in gone} if REGISTRY[kind].creates_services else set()
    assert deleted == {("Pod", name) for name in gone} | services
    assert not [a for a in result.actions if isinstance(a, Create)]
    assert (result.status.replica_statuses or {})["Worker"].active == 1
    if kind == "MPIJob":  # the hostfile and the launcher's Role name only the remaining worker
        updated = {a.kind: a.body for a in result.actions if isinstance(a, Update)}
        assert updated["ConfigMap"]["data"]["hostfile"] == "job-worker-0 slots=2\n"
        assert updated["Role"]["rules"][1]["resourceNames"] == ["job-worker-0"]
    job, observed = apply_plan(job, observed, result)
    assert run(job, observed).actions == ()


def test_scale_down_of_a_pod_already_terminating_deletes_only_its_service() -> None:
    job, observed = apply_plan(CANONICAL["JAXJob"], Observed(), run(CANONICAL["JAXJob"]))
    pods = (observed.pods[0], {**observed.pods[1], "metadata": {
        **observed.pods[1]["metadata"], "deletionTimestamp": "2025-01-01T12:00:00Z"}})  # fmt: skip
    result = run(_scaled(job, "Worker", 1), Observed(pods, observed.services))
    assert [a for a in result.actions if isinstance(a, Delete)] == [
        Delete("v1", "Service", "job-worker-1")
    ]
