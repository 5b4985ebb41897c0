"""``plan``'s rules beyond the golden cases: managedBy, unsupported or missing runtimes,
create-vs-update of §2.4, the creation-failed event, Volcano's PodGroup, condition times."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from tests.unit.engine.trainer.builders import (
    NOW,
    applied,
    container,
    g1_runtime,
    g1_trainjob,
    job,
    pod_of,
    run,
    runtime,
    trainjob,
)

from trainop.engine.trainer.plan import Observed, creation_failed


def _torch() -> dict[str, Any]:
    return runtime(
        "rt", [job("node", "trainer", container("node", image="img"))], ml_policy={"torch": {}}
    )


def test_a_trainjob_managed_by_multikueue_is_not_touched() -> None:
    tj = trainjob("j", "rt", managedBy="kueue.x-k8s.io/multikueue", suspend=True)
    result = run(tj, _torch())
    assert result.skipped is True
    assert result.apply == []
    assert result.status == {}


def test_unsupported_runtime_kind_fails_the_trainjob() -> None:
    result = run(trainjob("j", "rt", kind="Other"), None)
    assert result.apply == []
    assert [
        (c["type"], c["status"], c["reason"], c["message"]) for c in result.status["conditions"]
    ] == [
        (
            "Failed",
            "True",
            "TrainingRuntimeNotSupported",
            "unsupported runtime: Other.trainer.kubeflow.org",
        )
    ]


def test_missing_runtime_fails_the_trainjob_instead_of_retrying_forever() -> None:
    result = run(trainjob("j", "absent"), None)
    assert result.apply == []
    assert result.status["conditions"][0]["message"] == (
        "TrainingRuntime specified in TrainJob is not found: "
        'trainingruntimes.trainer.kubeflow.org "absent" not found'
    )


@pytest.mark.parametrize(
    ("trainjob_suspended", "jobset_suspended", "applied_again"),
    [(False, False, False), (True, False, True), (False, True, True), (True, True, True)],
)
def test_the_jobset_is_applied_only_when_absent_or_suspended(
    trainjob_suspended: bool, jobset_suspended: bool, applied_again: bool
) -> None:
    existing = {"spec": {"suspend": jobset_suspended}}
    result = run(
        trainjob("j", "rt", suspend=trainjob_suspended),
        _torch(),
        Observed(jobset=existing, snapshot={}),
    )
    assert any(o["kind"] == "JobSet" for o in result.apply) is applied_again


def test_the_pod_group_is_applied_only_when_absent_or_suspended() -> None:
    groups = {"scheduling.x-k8s.io/v1alpha1": {"spec": {}}}
    running = g1_trainjob()
    running["spec"]["suspend"] = False
    assert [
        o
        for o in run(running, g1_runtime(), Observed(pod_groups=groups)).apply
        if o["kind"] == "PodGroup"
    ] == []
    assert applied(run(g1_trainjob(), g1_runtime(), Observed(pod_groups=groups)), "PodGroup")


def test_a_plugin_error_becomes_the_creation_failed_event() -> None:
    rt = runtime(
        "rt",
        [job("node", "trainer", container("node"))],
        ml_policy={"mpi": {"mpiImplementation": "Intel"}},
    )
    result = run(trainjob("j", "rt"), rt)
    assert result.error == "MPI implementation for 'Intel' doesn't supported"
    assert [(e.type, e.reason, e.message) for e in result.events] == [
        (
            "Warning",
            "TrainJobResourcesCreationFailed",
            "TrainJob resources reconciliation failed: MPI implementation for "
            "'Intel' doesn't supported",
        )
    ]
    assert [o["kind"] for o in result.apply] == ["ConfigMap"]  # the snapshot only


def test_missing_env_injection_target_is_a_plan_error() -> None:
    policy = {
        "torch": {"envInjection": {"targets": [{"jobName": "node", "containerNames": ["x"]}]}}
    }
    rt = runtime("rt", [job("node", "trainer", container("node"))], ml_policy=policy)
    result = run(trainjob("j", "rt", trainer={}), rt)
    assert (
        result.error
        == 'envInjection target podSet "node" container "x" not found in runtime template'
    )


def test_env_injection_target_gets_all_pet_env() -> None:
    policy = {
        "torch": {"envInjection": {"targets": [{"jobName": "node", "containerNames": ["agent"]}]}}
    }
    node = job("node", "trainer", container("node"), pod={"initContainers": [container("agent")]})
    result = run(trainjob("j", "rt"), runtime("rt", [node], ml_policy=policy))
    agent = pod_of(applied(result, "JobSet"), "node")["spec"]["initContainers"][0]
    assert [e["name"] for e in agent["env"]] == [
        "PET_NNODES",
        "PET_NPROC_PER_NODE",
        "PET_NODE_RANK",
        "PET_MASTER_ADDR",
        "PET_MASTER_PORT",
    ]
    assert "ports" not in agent


def test_the_event_note_is_cut_at_950_characters() -> None:
    message = creation_failed("x" * 1000).message
    assert message == "TrainJob resources reconciliation failed: " + "x" * 950 + " ..."
    assert creation_failed("short").message.endswith(": short")


def test_volcano_pod_group() -> None:
    jobs = [
        job(
            "a",
            None,
            container("c", resources={"requests": {"cpu": "2"}}),
            pod={"priorityClassName": "low"},
        ),
        job(
            "b",
            None,
            container("c", resources={"requests": {"cpu": "1"}}),
            pod={"priorityClassName": "high"},
        ),
    ]
    rt = runtime(
        "rt",
        jobs,
        pod_group_policy={
            "volcano": {"networkTopology": {"mode": "soft", "highestTierAllowed": 2}}
        },
    )
    rt["spec"]["template"]["metadata"] = {"annotations": {"scheduling.volcano.sh/queue-name": "q"}}
    result = run(trainjob("v", "rt"), rt)
    pod_group = applied(result, "PodGroup", "scheduling.volcano.sh/v1beta1")
    assert pod_group["spec"] == {
        "minMember": 2,
        "minResources": {"cpu": "3"},
        "queue": "q",
        "priorityClassName": "high",
        "networkTopology": {"mode": "soft", "highestTierAllowed": 2},
    }
    jobset = applied(result, "JobSet")
    assert pod_of(jobset, "a")["metadata"]["annotations"] == {"scheduling.k8s.io/group-name": "v"}


def test_flux_is_refused_with_an_event() -> None:
    rt = runtime("rt", [job("node", "trainer", container("node"))], ml_policy={"flux": {}})
    assert run(trainjob("j", "rt"), rt).error == "mlPolicy.flux is not supported by trainop"


def test_suspended_condition_keeps_its_transition_time_until_the_status_changes() -> None:
    tj = trainjob("j", "rt", suspend=True)
    first = run(tj, _torch())
    tj["status"] = first.status
    again = run(
        tj,
        _torch(),
        Observed(jobset={"spec": {"suspend": True}}, snapshot={}),
        NOW + timedelta(hours=1),
    )
    assert again.status == first.status
    tj["spec"]["suspend"] = False
    resumed = run(
        tj,
        _torch(),
        Observed(jobset={"spec": {"suspend": True}}, snapshot={}),
        NOW + timedelta(hours=2),
    )
    assert resumed.status["conditions"][0]["lastTransitionTime"] == "2025-06-15T14:00:00Z"


def test_initializer_secret_and_env() -> None:
    jobs = [
        job(
            "dataset-initializer",
            "dataset-initializer",
            container("dataset-initializer", image="i"),
        )
    ]
    init = {
        "dataset": {
            "storageUri": "",
            "env": [{"name": "TOKEN", "value": "t"}],
            "secretRef": {"name": "creds"},
        }
    }
    got = pod_of(
        applied(run(trainjob("j", "rt", initializer=init), runtime("rt", jobs)), "JobSet"),
        "dataset-initializer",
    )
    dataset = got["spec"]["containers"][0]
    assert dataset["env"] == [{"name": "STORAGE_URI", "value": ""}, {"name": "TOKEN", "value": "t"}]
    assert dataset["envFrom"] == [{"secretRef": {"name": "creds"}}]
