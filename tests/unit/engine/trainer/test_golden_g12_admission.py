"""Golden case G12 of the Trainer v2 spec §8 (the TrainJob validator), through
``validate_trainjob``. The defaulter's ``time`` stamps are the mutating webhook's (not the
planner's) and are tested there."""

from __future__ import annotations

import copy
from typing import Any

from tests.unit.engine.trainer.builders import (
    container,
    g1_runtime,
    g1_trainjob,
    job,
    runtime,
    trainjob,
)

from trainop.engine.trainer.validate import validate_trainjob

DEPRECATION = (
    'Referenced ClusterTrainingRuntime "test-runtime" is deprecated and will be removed in a '
    "future release of Kubeflow Trainer. See runtime deprecation policy: "
    "https://trainer.kubeflow.org/en/latest/operator-guides/runtime.html#runtime-deprecation-policy"
)


def _torch_runtime(kind: str = "ClusterTrainingRuntime", **extra: Any) -> dict[str, Any]:
    jobs = [job("node", "trainer", container("node", image="img"))]
    return runtime("test-runtime", jobs, kind=kind, ml_policy={"torch": {}}, **extra)


def test_g12_missing_cluster_runtime_is_one_invalid_error_on_capital_runtime_ref() -> None:
    tj = trainjob("job", "unsupported-runtime", kind="ClusterTrainingRuntime")
    errors, warnings = validate_trainjob(tj, None, True)
    assert [(e.path, e.type) for e in errors] == [("spec.RuntimeRef", "Invalid")]
    assert errors[0].detail == (
        'clustertrainingruntimes.trainer.kubeflow.org "unsupported-runtime" not found: specified '
        "clusterTrainingRuntime must be created before the TrainJob is created"
    )
    assert warnings == []


def test_missing_namespaced_runtime() -> None:
    errors, _ = validate_trainjob(trainjob("job", "absent"), None, True)
    assert [(e.path, e.detail) for e in errors] == [
        (
            "spec.runtimeRef",
            'trainingruntimes.trainer.kubeflow.org "absent" not found: specified trainingRuntime '
            "must be created before the TrainJob is created",
        )
    ]


def test_g12_deprecated_runtime_is_a_warning_not_an_error() -> None:
    rt = _torch_runtime(labels={"trainer.kubeflow.org/support": "deprecated"})
    errors, warnings = validate_trainjob(
        trainjob("job", "test-runtime", kind="ClusterTrainingRuntime"), rt, True
    )
    assert errors == []
    assert warnings == [DEPRECATION]


def test_unregistered_runtime_kind() -> None:
    tj = trainjob("job", "x", kind="Other")
    errors, _ = validate_trainjob(tj, None, False)
    assert [e.detail for e in errors] == ["unsupported runtime: Other.trainer.kubeflow.org"]


def test_g12_reserved_torch_env_is_rejected() -> None:
    tj = trainjob(
        "job",
        "test-runtime",
        kind="ClusterTrainingRuntime",
        trainer={"env": [{"name": "PET_NODE_RANK", "value": "1"}]},
    )
    errors, _ = validate_trainjob(tj, _torch_runtime(), True)
    assert [(e.path, e.type, e.detail) for e in errors] == [
        (
            "spec.trainer.env",
            "Invalid",
            "must not have reserved envs, invalid envs configured: [PET_NODE_RANK]",
        )
    ]


def _with_manager(manager: str) -> dict[str, Any]:
    return trainjob(
        "job", "test-runtime", kind="ClusterTrainingRuntime", runtimePatches=[{"manager": manager}]
    )


def test_g12_manager_must_be_a_domain_prefixed_path() -> None:
    errors, _ = validate_trainjob(_with_manager("kueue.k8s.io/"), _torch_runtime(), True)
    assert [(e.path, e.detail) for e in errors] == [
        ("spec.runtimePatches.manager", 'must be a domain-prefixed path (such as "acme.io/foo")')
    ]
    assert validate_trainjob(_with_manager("kueue.k8s.io/manager"), _torch_runtime(), True) == (
        [],
        [],
    )


def test_g12_invalid_name_comes_from_the_api_rules() -> None:
    errors, _ = validate_trainjob(
        trainjob("1jobname", "test-runtime"), _torch_runtime("TrainingRuntime"), True
    )
    assert [e.detail for e in errors] == [
        'Invalid value: "object": metadata.name must match RFC 1035 DNS label format'
    ]


def test_g12_runtime_patches_change_forbidden_unless_suspended() -> None:
    old = g1_trainjob()
    old["spec"]["suspend"] = False
    new = copy.deepcopy(old)
    new["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["metadata"]["labels"][
        "x"
    ] = "y"
    errors, _ = validate_trainjob(new, g1_runtime(), True, old)
    assert [(e.path, e.type, e.detail) for e in errors] == [
        (
            "spec.runtimePatches",
            "Forbidden",
            "RuntimePatches can only be modified when the TrainJob is suspended "
            "before or after the update",
        )
    ]


def test_runtime_patches_change_with_resume_is_allowed_unless_a_job_is_active() -> None:
    old = g1_trainjob()
    new = copy.deepcopy(old)
    new["spec"]["suspend"] = False
    new["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["metadata"]["labels"][
        "x"
    ] = "y"
    assert validate_trainjob(new, g1_runtime(), True, old) == ([], [])
    jobset = {
        "status": {
            "replicatedJobsStatus": [
                {"name": "node", "active": 2},
                {"name": "model-initializer", "active": 0},
            ]
        }
    }
    errors, _ = validate_trainjob(new, g1_runtime(), True, old, jobset=jobset)
    assert [(e.type, e.detail) for e in errors] == [
        (
            "Forbidden",
            "RuntimePatches cannot be modified when the JobSet's ReplicatedJob "
            "node is still active",
        )
    ]
