"""Events about pods: abnormal active pods (spec 4.8) and ``ExitedWithCode`` (spec 4.5).

Upstream repeats both every reconcile; here ``ExitedWithCode`` is emitted once per transition,
derived from the observed pods and the recorded status (docs/design/005), and abnormal-pod
warnings repeat while the pod reports the problem, as upstream.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from support import apply_plan, make_job, run, with_phase

from trainop.api.types import Job
from trainop.engine.actions import Event, Plan
from trainop.engine.observed import Observed, name_of


def _started(job: Job) -> tuple[Job, Observed]:
    return apply_plan(job, Observed(), run(job))


def _with_status(observed: Observed, name: str, status: dict[str, Any]) -> Observed:
    pods = []
    for pod in observed.pods:
        if name_of(pod) == name:
            pod = copy.deepcopy(pod)
            pod["status"] = status
        pods.append(pod)
    return Observed(tuple(pods), observed.services, observed.pod_group, observed.objects)


def _of(result: Plan, reason: str | None = None) -> set[Event]:
    wanted = {"ExitedWithCode"} if reason is None else {reason}
    return {e for e in result.events if e.reason in wanted}


def _container(state: dict[str, Any], name: str = "jax") -> dict[str, Any]:
    return {"name": name, "restartCount": 0, "state": state}


POD = "job-worker-0"
ABNORMAL_TABLE: list[tuple[str, dict[str, Any], set[Event]]] = [
    (
        "container terminated non-zero",
        {"phase": "Running", "containerStatuses": [
            _container({"running": {}}),
            _container({"terminated": {"exitCode": 137, "reason": "OOMKilled",
                                       "message": "out of memory"}}, "sidecar"),
        ]},
        {Event("Warning", "OOMKilled", f"Error pod {POD} container sidecar exitCode: 137 "
                                       "terminated message: out of memory")},
    ),
    (
        "container waiting with a message",
        {"phase": "Pending", "containerStatuses": [_container(
            {"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling image"}})]},
        {Event("Warning", "ImagePullBackOff",
               f"Error pod {POD} container jax waiting message: Back-off pulling image")},
    ),
    (
        "waiting without a message, terminated with 0",
        {"phase": "Running", "containerStatuses": [
            _container({"waiting": {"reason": "ContainerCreating"}}),
            _container({"terminated": {"exitCode": 0, "reason": "Completed"}}, "sidecar"),
        ]},
        set(),
    ),
    (
        "init container waiting (no container statuses yet)",
        {"phase": "Pending", "initContainerStatuses": [_container(
            {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 10s"}}, "init")]},
        {Event("Warning", "CrashLoopBackOff",
               f"Error pod {POD} container init waiting message: back-off 10s")},
    ),
    (
        "latest condition not True",
        {"phase": "Pending", "conditions": [
            {"type": "Initialized", "status": "True", "lastTransitionTime": "2025-01-01T11:00:00Z"},
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
             "message": "0/3 nodes are available", "lastTransitionTime": "2025-01-01T11:30:00Z"},
        ]},
        {Event("Warning", "Unschedulable",
               f"Error pod {POD} condition message: 0/3 nodes are available")},
    ),
    (
        "latest condition True",
        {"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
             "lastTransitionTime": "2025-01-01T11:00:00Z"},
            {"type": "PodScheduled", "status": "True",
             "lastTransitionTime": "2025-01-01T11:30:00Z"},
        ]},
        set(),
    ),
    (
        "finished pod is not active",
        {"phase": "Failed", "containerStatuses": [_container(
            {"terminated": {"exitCode": 2, "reason": "Error", "message": "boom"}})]},
        set(),
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("status", "expected"),
    [case[1:] for case in ABNORMAL_TABLE],
    ids=[case[0] for case in ABNORMAL_TABLE],
)
def test_abnormal_active_pods_raise_warnings(status: dict[str, Any], expected: set[Event]) -> None:
    job, observed = _started(make_job("JAXJob", {"Worker": 2}))
    result = run(job, _with_status(observed, POD, status))
    assert {
        e for e in result.events if e.type == "Warning" and e.message.startswith("Error pod")
    } == (expected)


def test_abnormal_warnings_stop_once_the_pod_is_terminating() -> None:
    job, observed = _started(make_job("JAXJob", {"Worker": 1}))
    waiting = {"waiting": {"reason": "ErrImagePull", "message": "not found"}}
    observed = _with_status(observed, POD, {"phase": "Pending", "containerStatuses": [
        _container(waiting)]})  # fmt: skip
    assert _of(run(job, observed), "ErrImagePull"), "repeated while the pod reports it"
    suspended = job.run_policy.model_copy(update={"suspend": True})
    job = job.model_copy(update={"spec": job.spec.model_copy(update={"run_policy": suspended})})
    job, observed = apply_plan(job, observed, run(job, observed))
    assert not _of(run(job, observed), "ErrImagePull")


def _exited(code: int, name: str = POD) -> Event:
    return Event("Normal", "ExitedWithCode", f"Pod: ns.{name} exited with code {code}")


EXITED_TABLE: list[tuple[str, str, str, int, set[Event], set[Event]]] = [
    # case, restart policy, phase, exit code, first plan, the plan after it was applied
    ("restarted failure: reported when deleted", "OnFailure", "Failed", 1, {_exited(1)}, set()),
    ("retryable exit code", "ExitCode", "Failed", 137, {_exited(137)}, set()),
    ("permanent failure: once", "Never", "Failed", 3, {_exited(3)}, set()),
    ("success: once", "Never", "Succeeded", 0, {_exited(0)}, set()),
]


@pytest.mark.parametrize(
    ("policy", "phase", "code", "first", "again"),
    [case[1:] for case in EXITED_TABLE],
    ids=[case[0] for case in EXITED_TABLE],
)
def test_exited_with_code_once_per_transition(
    policy: str, phase: str, code: int, first: set[Event], again: set[Event]
) -> None:
    job = make_job("JAXJob", {"Worker": 2})
    specs = {rt: s.model_copy(update={"restart_policy": policy})
             for rt, s in job.spec.replica_specs.items()}  # fmt: skip
    job = job.model_copy(update={"spec": job.spec.model_copy(update={"replica_specs": specs})})
    job, observed = _started(job)
    pods = tuple(
        with_phase(p, phase, exit_code=code) if name_of(p) == POD else with_phase(p, "Running")
        for p in observed.pods
    )
    observed = Observed(pods, observed.services, observed.pod_group, observed.objects)
    result = run(job, observed)
    assert _of(result) == first
    assert _of(run(job, observed)) == first, "planning twice over the same state: same events"
    job, observed = apply_plan(job, observed, result)
    assert _of(run(job, observed)) == again


def test_exited_with_code_only_for_the_default_container() -> None:
    job, observed = _started(make_job("JAXJob", {"Worker": 2}))
    sidecar = with_phase(observed.pods[0], "Running", exit_code=1, container_name="sidecar")
    observed = Observed((sidecar, *observed.pods[1:]), observed.services)
    assert _of(run(job, observed)) == set()


def test_exited_with_code_reported_for_a_pod_removed_by_scale_down() -> None:
    job, observed = _started(make_job("JAXJob", {"Worker": 2}))
    pods = (with_phase(observed.pods[0], "Running"),
            with_phase(observed.pods[1], "Succeeded", exit_code=0))  # fmt: skip
    observed = Observed(pods, observed.services)
    specs = {"Worker": job.spec.replica_specs["Worker"].model_copy(update={"replicas": 1})}
    job = job.model_copy(update={"spec": job.spec.model_copy(update={"replica_specs": specs})})
    assert _of(run(job, observed)) == {_exited(0, "job-worker-1")}
