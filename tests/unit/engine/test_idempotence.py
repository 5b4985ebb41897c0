"""Property: applying a plan and planning again yields no actions and the same status.

Generated over every registered kind: replica counts, restart policies, suspend, cleanPodPolicy,
gang scheduler, and the phases/exit codes/restart counts the kubelet gave the created pods.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from support import NOW, apply_plan, make_job, run, with_phase

from trainop.engine.observed import Observed
from trainop.engine.plan import EngineOptions
from trainop.frameworks.registry import REGISTRY

_TYPES = {
    "TFJob": ("Chief", "PS", "Worker"),
    "PyTorchJob": ("Master", "Worker"),
    "XGBoostJob": ("Master", "Worker"),
    "MXJob": ("Scheduler", "Server", "Worker"),
    "MPIJob": ("Launcher", "Worker"),
    "PaddleJob": ("Master", "Worker"),
    "JAXJob": ("Worker",),
    "DGLJob": ("Launcher", "Worker"),
}
_SINGLE = ("Chief", "Master", "Launcher", "Scheduler")
_OUTCOMES = st.sampled_from(
    [None, ("Running", None, 0), ("Running", None, 2), ("Succeeded", 0, 0), ("Failed", 1, 0),
     ("Failed", 137, 1), ("Pending", None, 0)]
)  # fmt: skip


@st.composite
def scenarios(draw: Any, kind: str) -> tuple[Any, EngineOptions, list[Any]]:
    types = _TYPES[kind]
    chosen = [rt for rt in types if rt in ("Launcher", "Worker") or draw(st.booleans())]
    counts = {rt: 1 if rt in _SINGLE else draw(st.integers(1, 3)) for rt in chosen}
    policy = draw(st.sampled_from(["Always", "OnFailure", "Never", "ExitCode"]))
    run_policy = {
        "cleanPodPolicy": draw(st.sampled_from(["All", "Running", "None"])),
        "backoffLimit": draw(st.sampled_from([None, 0, 3])),
        "activeDeadlineSeconds": draw(st.sampled_from([None, 60])),
    }
    job = make_job(kind, counts, run_policy={k: v for k, v in run_policy.items() if v is not None})
    specs = {
        rt: s.model_copy(update={"restart_policy": policy})
        for rt, s in job.spec.replica_specs.items()
    }
    job = job.model_copy(update={"spec": job.spec.model_copy(update={"replica_specs": specs})})
    gang = draw(st.sampled_from(["", "volcano", "scheduler-plugins"]))
    return (
        job,
        EngineOptions(gang_scheduler_name=gang),
        draw(st.lists(_OUTCOMES, min_size=10, max_size=10)),
    )


def _kubelet(observed: Observed, outcomes: list[Any]) -> Observed:
    pods = []
    for pod, outcome in zip(observed.pods, outcomes * 3, strict=False):
        pods.append(
            pod
            if outcome is None
            else with_phase(pod, outcome[0], exit_code=outcome[1], restarts=outcome[2])
        )
    group = observed.pod_group
    if group is not None:
        group = {**group, "status": {"phase": "Running"}}
    return Observed(
        pods=tuple(pods), services=observed.services, pod_group=group, objects=observed.objects
    )


def _check(job: Any, options: EngineOptions, outcomes: list[Any], suspend: bool) -> None:
    first = run(job, options=options)
    job, observed = apply_plan(job, Observed(), first)
    observed = _kubelet(observed, outcomes)
    if suspend:
        policy = job.run_policy.model_copy(update={"suspend": True})
        job = job.model_copy(update={"spec": job.spec.model_copy(update={"run_policy": policy})})
    second = run(job, observed, options=options)
    job, observed = apply_plan(job, observed, second)
    third = run(job, observed, options=options)
    assert third.actions == ()
    assert third.status == second.status


def _property(kind: str) -> Any:
    @settings(max_examples=200, deadline=None)
    @given(scenario=scenarios(kind), suspend=st.booleans())
    def check(scenario: tuple[Any, EngineOptions, list[Any]], suspend: bool) -> None:
        _check(*scenario, suspend)

    return check


test_tfjob_plans_are_idempotent = _property("TFJob")
test_pytorchjob_plans_are_idempotent = _property("PyTorchJob")
test_xgboostjob_plans_are_idempotent = _property("XGBoostJob")
test_mxjob_plans_are_idempotent = _property("MXJob")
test_mpijob_plans_are_idempotent = _property("MPIJob")
test_paddlejob_plans_are_idempotent = _property("PaddleJob")
test_jaxjob_plans_are_idempotent = _property("JAXJob")
test_dgljob_plans_are_idempotent = _property("DGLJob")


def test_every_registered_kind_has_an_idempotence_property() -> None:
    assert set(_TYPES) == set(REGISTRY)
    assert NOW.tzinfo is not None
