"""Table-driven behaviour of the engine, one shared suite parametrised over the registry."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from support import CANONICAL, NOW, apply_plan, make_job, run, start, with_phase

from trainop.api.types import Job
from trainop.engine import conditions
from trainop.engine.actions import Create, Delete, DeleteJob, Update
from trainop.engine.observed import Observed, name_of
from trainop.engine.plan import EngineOptions
from trainop.frameworks.registry import REGISTRY

KINDS = sorted(REGISTRY)


def _started(job: Job, options: EngineOptions | None = None) -> tuple[Job, Observed]:
    job, observed, _ = start(job, options)
    return job, observed


def _set_phase(observed: Observed, name: str, phase: str, **kw: Any) -> Observed:
    pods = tuple(with_phase(p, phase, **kw) if name_of(p) == name else p for p in observed.pods)
    return Observed(pods, observed.services, observed.pod_group, observed.objects)


def _all(observed: Observed, phase: str, **kw: Any) -> Observed:
    pods = tuple(with_phase(p, phase, **kw) for p in observed.pods)
    return Observed(pods, observed.services, observed.pod_group, observed.objects)


def _primary_pod(job: Job) -> str:
    framework = REGISTRY[job.kind]
    rt = framework.primary_type(job)
    assert rt is not None
    index = None if rt in framework.unindexed_types else 0
    return f"{job.metadata.name}-{rt.lower()}" + ("" if index is None else "-0")


def _with_policy(job: Job, policy: str) -> Job:
    specs = {
        rt: s.model_copy(update={"restart_policy": policy})
        for rt, s in job.spec.replica_specs.items()
    }
    return job.model_copy(update={"spec": job.spec.model_copy(update={"replica_specs": specs})})


def _true(result: Any, condition_type: str) -> bool:
    return conditions.is_true(tuple(result.status.conditions or ()), condition_type)


RESTART_TABLE = [
    # policy, exit code, restarted, job failed
    ("Always", 1, True, False),
    ("OnFailure", 1, True, False),
    ("Never", 1, False, True),
    ("ExitCode", 1, False, True),
    ("ExitCode", 137, True, False),
    ("ExitCode", None, True, False),
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("policy", "code", "restarted", "failed"), RESTART_TABLE)
def test_restart_policy_decides_between_restart_and_failure(
    kind: str, policy: str, code: int | None, restarted: bool, failed: bool
) -> None:
    """ExitCode >= 128 retries for every kind, MPI too (upstream: MPI stuck in Restarting)."""
    job = _with_policy(CANONICAL[kind], policy)
    job, observed = _started(job)
    name = _primary_pod(job)
    result = run(job, _set_phase(_all(observed, "Running"), name, "Failed", exit_code=code))
    assert (Delete("v1", "Pod", name) in result.actions) is restarted
    assert _true(result, "Restarting") is restarted
    assert _true(result, "Failed") is failed
    if failed:
        assert result.status.completion_time == NOW, "completionTime on every terminal condition"
        reason = next(c.reason for c in result.status.conditions or () if c.type == "Failed")
        assert reason == f"{kind}Failed", (
            "MPI reason spelled like every kind (not MPIJobMPIJobFailed)"
        )


@pytest.mark.parametrize("kind", KINDS)
def test_primary_success_completes_the_job(kind: str) -> None:
    job, observed = _started(CANONICAL[kind])
    prefix = _primary_pod(job).rstrip("0")
    observed = _all(observed, "Running")
    for pod in observed.pods:
        if name_of(pod).startswith(prefix):
            observed = _set_phase(observed, name_of(pod), "Succeeded", exit_code=0)
    result = run(job, observed)
    assert _true(result, "Succeeded")
    assert not _true(result, "Running")
    assert result.status.completion_time == NOW


def test_tf_worker0_success_rule_and_all_workers_policy() -> None:
    job, observed = _started(make_job("TFJob", {"Worker": 2}))
    observed = _set_phase(_all(observed, "Running"), "job-worker-0", "Succeeded", exit_code=0)
    assert _true(run(job, observed), "Succeeded")
    strict = make_job("TFJob", {"Worker": 2}, spec={"successPolicy": "AllWorkers"})
    assert not _true(run(strict.model_copy(update={"status": job.status}), observed), "Succeeded")


def test_elastic_pytorch_succeeds_when_any_worker_succeeds() -> None:
    job = make_job("PyTorchJob", {"Worker": 3}, spec={"elasticPolicy": {"minReplicas": 1}})
    job, observed = _started(job)
    assert _true(
        run(job, _set_phase(observed, "job-worker-2", "Succeeded", exit_code=0)), "Succeeded"
    )


def test_condition_rules_of_set_condition() -> None:
    now, later = NOW, NOW + timedelta(seconds=5)
    first, events = conditions.set_condition((), type="Running", reason="R", message="m", now=now)
    assert len(first) == 1
    assert events
    same, events = conditions.set_condition(
        first, type="Running", reason="R", message="x", now=later
    )
    assert same == first
    assert not events
    other, _ = conditions.set_condition(first, type="Running", reason="R2", message="m", now=later)
    assert other[0].last_transition_time == now
    assert other[0].reason == "R2"
    restarting, _ = conditions.set_condition(
        first, type="Restarting", reason="X", message="m", now=later
    )
    assert [c.type for c in restarting] == ["Restarting"]
    done, _ = conditions.set_condition(first, type="Failed", reason="F", message="m", now=later)
    assert [(c.type, c.status) for c in done] == [("Running", "False"), ("Failed", "True")]
    frozen, _ = conditions.set_condition(done, type="Running", reason="R", message="m", now=later)
    assert frozen == done


@pytest.mark.parametrize(("policy", "deleted"), [
    ("All", {"Running", "Pending", "Succeeded"}),
    ("Running", {"Running", "Pending"}),
    ("None", set()),
])  # fmt: skip
def test_clean_pod_policy_on_completion(policy: str, deleted: set[str]) -> None:
    job = make_job("JAXJob", {"Worker": 3}, run_policy={"cleanPodPolicy": policy})
    job, observed = _started(job)
    phases = {"job-worker-0": "Running", "job-worker-1": "Pending", "job-worker-2": "Succeeded"}
    for name, phase in phases.items():
        observed = _set_phase(observed, name, phase)
    done = conditions.set_condition((), type="Succeeded", reason="S", message="m", now=NOW)[0]
    job = job.model_copy(
        update={"status": job.status.model_copy(update={"conditions": list(done)})}
    )  # type: ignore[union-attr]
    result = run(job, observed)
    gone = {a.name for a in result.actions if isinstance(a, Delete) and a.kind == "Pod"}
    assert gone == {name for name, phase in phases.items() if phase in deleted}


@pytest.mark.parametrize("kind", KINDS)
def test_suspend_then_resume(kind: str) -> None:
    job, observed = _started(CANONICAL[kind], EngineOptions(gang_scheduler_name="volcano"))
    observed = _all(observed, "Running")
    policy = job.run_policy.model_copy(update={"suspend": True})
    suspended = job.model_copy(update={"spec": job.spec.model_copy(update={"run_policy": policy})})
    result = run(suspended, observed, options=EngineOptions(gang_scheduler_name="volcano"))
    assert {a.name for a in result.actions if isinstance(a, Delete) and a.kind == "Pod"} == {
        name_of(p) for p in observed.pods
    }
    assert any(isinstance(a, Delete) and a.kind == "PodGroup" for a in result.actions), (
        "PodGroup freed"
    )
    assert _true(result, "Suspended")
    later = NOW + timedelta(minutes=5)
    resumed = job.model_copy(update={"status": result.status})
    back = run(resumed, Observed(), now=later)
    assert not _true(back, "Suspended")
    assert back.status.start_time == later
    assert any(isinstance(a, Create) and a.kind == "Pod" for a in back.actions)


@pytest.mark.parametrize("kind", KINDS)
def test_foreign_managed_by_is_skipped(kind: str) -> None:
    job = CANONICAL[kind]
    policy = job.run_policy.model_copy(update={"managed_by": "kueue.x-k8s.io/multikueue"})
    job = job.model_copy(update={"spec": job.spec.model_copy(update={"run_policy": policy})})
    result = run(job)
    assert result.skipped
    assert result.actions == ()
    assert not result.status.conditions


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("scheduler", ["", "volcano", "scheduler-plugins"])
def test_gang_scheduling(kind: str, scheduler: str) -> None:
    result = run(CANONICAL[kind], options=EngineOptions(gang_scheduler_name=scheduler))
    groups = [a for a in result.actions if isinstance(a, Create) and a.kind == "PodGroup"]
    pods = [a for a in result.actions if isinstance(a, Create) and a.kind == "Pod"]
    assert len(groups) == (1 if scheduler else 0)
    if scheduler == "volcano":
        assert pods == [], "held until admitted"
        assert result.status.last_reconcile_time == NOW
        assert groups[0].body["spec"]["queue"] == "default"
    elif scheduler:
        assert all(p.body["spec"]["schedulerName"] == scheduler for p in pods)
        assert all(
            p.body["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "job" for p in pods
        )
    if groups:  # every pod created at once (a later phase's pods cannot be waited for)
        ungated = [a for a in run(CANONICAL[kind]).actions if isinstance(a, Create)]
        assert groups[0].body["spec"]["minMember"] == len([a for a in ungated if a.kind == "Pod"])


def test_active_deadline_requeues_exactly_and_fails_on_time() -> None:
    """Upstream never requeues for activeDeadlineSeconds; we requeue at startTime + deadline."""
    job, observed = _started(
        make_job("JAXJob", {"Worker": 1}, run_policy={"activeDeadlineSeconds": 60})
    )
    assert run(job, observed, now=NOW + timedelta(seconds=20)).requeue_after == timedelta(
        seconds=40
    )
    late = run(job, _all(observed, "Running"), now=NOW + timedelta(seconds=60))
    assert _true(late, "Failed")
    assert late.status.completion_time == NOW + timedelta(seconds=60)


def test_ttl_requeues_then_deletes_the_job() -> None:
    job, observed = _started(
        make_job("JAXJob", {"Worker": 1}, run_policy={"ttlSecondsAfterFinished": 30})
    )
    finished = run(job, _all(observed, "Succeeded", exit_code=0))
    assert finished.requeue_after == timedelta(seconds=30)
    job = job.model_copy(update={"status": finished.status})
    assert DeleteJob("job") in run(job, observed, now=NOW + timedelta(seconds=30)).actions


def test_backoff_counts_operator_restarts_and_container_restarts() -> None:
    """Upstream counts only restartCount of Running pods; we also count pods we recreated."""
    job, observed = _started(make_job("JAXJob", {"Worker": 1}, run_policy={"backoffLimit": 1}))
    job = _with_policy(job, "OnFailure")
    first = run(job, _all(observed, "Failed", exit_code=1))
    assert not _true(first, "Failed")
    assert Delete("v1", "Pod", "job-worker-0") in first.actions
    job = job.model_copy(update={"status": first.status})
    second = run(job, _all(Observed(services=observed.services), "Failed"), now=NOW)
    recreated = apply_plan(job, Observed(services=observed.services), second)[1]
    third = run(job, _all(recreated, "Failed", exit_code=1))
    assert _true(third, "Failed"), "the second restart exceeds backoffLimit 1"


def test_mpi_validation_failure_is_an_event_not_an_action() -> None:
    job = make_job("MPIJob", {"Worker": 1})
    result = run(job)
    assert result.skipped
    assert result.actions == ()
    assert result.events[0].reason == "MPIJobFailedValidation"


def test_elastic_pytorch_hpa_created_and_deleted_on_suspend() -> None:
    from support import ELASTIC_PYTORCH

    job, observed = _started(ELASTIC_PYTORCH)
    assert any(o.get("kind") == "HorizontalPodAutoscaler" for o in observed.objects)
    policy = job.run_policy.model_copy(update={"suspend": True})
    job = job.model_copy(update={"spec": job.spec.model_copy(update={"run_policy": policy})})
    assert (
        Delete("autoscaling/v2", "HorizontalPodAutoscaler", "elastic") in run(job, observed).actions
    )
    assert not any(isinstance(a, Update) for a in run(job, observed).actions)
