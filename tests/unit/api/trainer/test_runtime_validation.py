"""TrainingRuntime / ClusterTrainingRuntime rules: the CRD's CEL rules (spec 1.5, 1.6, 7.1) and
the runtime webhook (spec 6.1), each with upstream's message."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.unit.api.trainer.builders import job, runtime
from trainop.api.trainer.validation import runtime_errors
from trainop.errors import FieldError

CLUSTER, NAMESPACED = "ClusterTrainingRuntime", "TrainingRuntime"
DEPRECATION_URL = (
    "https://trainer.kubeflow.org/en/latest/operator-guides/runtime.html#runtime-deprecation-policy"
)


def details(errors: list[FieldError]) -> dict[str, str]:
    return {e.path: e.detail for e in errors}


@pytest.mark.parametrize("kind", [CLUSTER, NAMESPACED])
def test_a_minimal_runtime_is_valid(kind: str) -> None:
    assert runtime_errors(kind, runtime(kind)) == ([], [])


def test_only_one_policy() -> None:
    obj = runtime(mlPolicy={"torch": {}, "mpi": {}})
    errors, _ = runtime_errors(CLUSTER, obj)
    assert details(errors) == {
        "spec.mlPolicy": 'Invalid value: "object": Only one of the policy can be configured'
    }


def test_mpi_and_flux_num_proc_per_node_at_least_one() -> None:
    mpi, _ = runtime_errors(CLUSTER, runtime(mlPolicy={"mpi": {"numProcPerNode": 0}}))
    flux, _ = runtime_errors(CLUSTER, runtime(mlPolicy={"flux": {"numProcPerNode": 0}}))
    assert details(mpi) == {
        "spec.mlPolicy.mpi.numProcPerNode": (
            'Invalid value: "integer": NumProcPerNode in mpiPolicy must be >= 1'
        )
    }
    assert details(flux) == {
        "spec.mlPolicy.flux.numProcPerNode": (
            'Invalid value: "integer": NumProcPerNode in fluxPolicy must be >= 1'
        )
    }


@pytest.mark.parametrize("value", ["Intel", "MPICH", "mpich"])
def test_mpi_implementation_enum(value: str) -> None:
    errors, _ = runtime_errors(CLUSTER, runtime(mlPolicy={"mpi": {"mpiImplementation": value}}))
    assert [(e.path, e.type) for e in errors] == [
        ("spec.mlPolicy.mpi.mpiImplementation", "NotSupported")
    ]
    assert errors[0].detail.endswith('supported values: "OpenMPI", ""')


def test_env_injection_may_not_name_the_node_container() -> None:
    targets = [{"jobName": "node", "containerNames": ["sidecar", "node"]}]
    obj = runtime(mlPolicy={"torch": {"envInjection": {"targets": targets}}})
    errors, _ = runtime_errors(CLUSTER, obj)
    assert details(errors) == {
        "spec.mlPolicy.torch.envInjection.targets[0].containerNames": (
            'Invalid value: "array": containerNames must not include the main node container '
            "because PET_* envs are always injected into it"
        )
    }


@pytest.mark.parametrize(
    ("names", "expected"), [([], "at least 1 items"), ([f"c{i}" for i in range(9)], "at most 8")]
)
def test_env_injection_container_count(names: list[str], expected: str) -> None:
    targets = [{"jobName": "node", "containerNames": names}]
    errors, _ = runtime_errors(
        CLUSTER, runtime(mlPolicy={"torch": {"envInjection": {"targets": targets}}})
    )
    assert len(errors) == 1
    assert expected in errors[0].detail


def test_volcano_mode_enum() -> None:
    obj = runtime(podGroupPolicy={"volcano": {"networkTopology": {"mode": "strict"}}})
    errors, _ = runtime_errors(CLUSTER, obj)
    assert [e.path for e in errors] == ["spec.podGroupPolicy.volcano.networkTopology.mode"]


def test_empty_spec_and_template_need_a_property() -> None:
    empty = runtime()
    empty["spec"] = {}
    errors, _ = runtime_errors(CLUSTER, empty)
    assert details(errors) == {
        "spec": "Invalid value: 0: spec in body should have at least 1 properties"
    }
    no_template = runtime(template={})
    errors, _ = runtime_errors(CLUSTER, no_template)
    assert [e.path for e in errors] == ["spec.template"]


def test_startup_policy_in_order_excludes_depends_on() -> None:
    jobs = [
        job("a", None, "x"),
        job("node", "trainer", "node", dependsOn=[{"name": "a", "status": "Ready"}]),
    ]
    obj = runtime(jobs=jobs)
    obj["spec"]["template"]["spec"]["startupPolicy"] = {"startupPolicyOrder": "InOrder"}
    errors, _ = runtime_errors(CLUSTER, obj)
    assert details(errors) == {
        "spec.template.spec": (
            'Invalid value: "object": StartupPolicy and DependsOn APIs are mutually exclusive'
        )
    }


def test_depends_on_status_enum_and_limit() -> None:
    six = [{"name": f"j{i}", "status": "Ready"} for i in range(6)]
    obj = runtime(jobs=[job("node", "trainer", "node", dependsOn=six)])
    errors, _ = runtime_errors(CLUSTER, obj)
    assert [e.type for e in errors] == ["TooMany"]
    bad = runtime(
        jobs=[job("node", "trainer", "node", dependsOn=[{"name": "a", "status": "Done"}])]
    )
    errors, _ = runtime_errors(CLUSTER, bad)
    assert [e.type for e in errors] == ["NotSupported"]


def test_volume_claim_templates_have_no_namespace() -> None:
    obj = runtime()
    claim = {"metadata": {"name": "initializer", "namespace": "other"}}
    obj["spec"]["template"]["spec"]["volumeClaimPolicies"] = [{"templates": [claim]}]
    errors, _ = runtime_errors(CLUSTER, obj)
    assert details(errors) == {
        "spec.template.spec.volumeClaimPolicies[0]": (
            'Invalid value: "object": namespace cannot be set for VolumeClaimPolicies templates'
        )
    }


@pytest.mark.parametrize(
    ("field", "old_value", "new_value"),
    [
        ("network", {"subdomain": "a"}, {"subdomain": "b"}),
        ("successPolicy", {"operator": "All"}, {"operator": "Any"}),
        ("failurePolicy", {"maxRestarts": 1}, {"maxRestarts": 2}),
        ("startupPolicy", {"startupPolicyOrder": "AnyOrder"}, {"startupPolicyOrder": "InOrder"}),
        (
            "volumeClaimPolicies",
            [{"templates": []}],
            [{"templates": [{"metadata": {"name": "x"}}]}],
        ),
    ],
)
def test_jobset_policies_are_immutable_on_update(
    field: str, old_value: Any, new_value: Any
) -> None:
    old, new = runtime(), runtime()
    old["spec"]["template"]["spec"][field] = old_value
    new["spec"]["template"]["spec"][field] = new_value
    errors, _ = runtime_errors(CLUSTER, new, old)
    assert [e.path for e in errors] == [f"spec.template.spec.{field}"]
    assert errors[0].detail.endswith(": Value is immutable")


def test_depends_on_is_immutable_on_update() -> None:
    jobs = [
        job("a", None, "x"),
        job("node", "trainer", "node", dependsOn=[{"name": "a", "status": "Ready"}]),
    ]
    changed = copy.deepcopy(jobs)
    changed[1]["dependsOn"][0]["status"] = "Complete"
    errors, _ = runtime_errors(
        NAMESPACED, runtime(NAMESPACED, jobs=changed), runtime(NAMESPACED, jobs=jobs)
    )
    assert details(errors) == {
        "spec.template.spec.replicatedJobs[1].dependsOn": (
            'Invalid value: "array": Value is immutable'
        )
    }


@pytest.mark.parametrize("ancestor", ["trainer", "dataset-initializer", "model-initializer"])
def test_ancestor_job_must_have_one_replica(ancestor: str) -> None:
    container = "node" if ancestor == "trainer" else ancestor
    obj = runtime(jobs=[job("j", ancestor, container, replicas=2)])
    errors, _ = runtime_errors(CLUSTER, obj)
    assert details(errors) == {
        "spec.template.spec.replicatedJobs[0].replicas": "Invalid value: 2: always must be 1"
    }


@pytest.mark.parametrize("ancestor", ["trainer", "dataset-initializer", "model-initializer"])
def test_ancestor_job_must_have_its_container(ancestor: str) -> None:
    obj = runtime(jobs=[job("j", ancestor, "other")])
    errors, _ = runtime_errors(CLUSTER, obj)
    path = "spec.template.spec.replicatedJobs[0].template.spec.template.spec.containers"
    assert list(details(errors)) == [path]
    assert errors[0].detail.endswith(
        f"must contain the required container for the ancestor: {ancestor}"
    )


def test_jobs_without_ancestor_are_free() -> None:
    obj = runtime(jobs=[job("node", "trainer", "node"), job("launcher", None, "x", replicas=3)])
    assert runtime_errors(CLUSTER, obj) == ([], [])


def test_webhook_rules_skip_runtimes_labelled_validation_disabled() -> None:
    obj = runtime(jobs=[job("j", "trainer", "other", replicas=2)])
    obj["metadata"]["labels"]["trainer.kubeflow.org/webhook-validation"] = "disabled"
    assert runtime_errors(CLUSTER, obj) == ([], [])


def test_training_runtime_webhook_runs_on_create_only() -> None:
    bad = runtime(NAMESPACED, jobs=[job("j", "trainer", "other")])
    assert runtime_errors(NAMESPACED, bad)[0] != []
    assert runtime_errors(NAMESPACED, bad, runtime(NAMESPACED)) == ([], [])
    assert (
        runtime_errors(
            CLUSTER, runtime(jobs=bad["spec"]["template"]["spec"]["replicatedJobs"]), runtime()
        )[0]
        != []
    )


def test_deprecated_cluster_runtime_warns_on_create() -> None:
    obj = runtime()
    obj["metadata"]["labels"]["trainer.kubeflow.org/support"] = "deprecated"
    errors, warnings = runtime_errors(CLUSTER, obj)
    assert errors == []
    assert warnings == [
        'ClusterTrainingRuntime "alpha" is deprecated and will be removed in a future release '
        f"of Kubeflow Trainer. See runtime deprecation policy: {DEPRECATION_URL}"
    ]
    assert runtime_errors(CLUSTER, obj, obj) == ([], [])
    assert runtime_errors(NAMESPACED, {**obj, "kind": NAMESPACED}) == ([], [])


def test_referenced_deprecation_warning_matches_spec() -> None:
    from trainop.api.trainer.validation import deprecation_warning

    assert deprecation_warning("test-runtime", referenced=True) == (
        'Referenced ClusterTrainingRuntime "test-runtime" is deprecated and will be removed in a '
        "future release of Kubeflow Trainer. See runtime deprecation policy: " + DEPRECATION_URL
    )


def test_unknown_kind_is_refused() -> None:
    errors, _ = runtime_errors("TrainJob", runtime())
    assert [(e.path, e.type) for e in errors] == [("kind", "NotSupported")]


@pytest.mark.parametrize(
    ("obj", "path"),
    [
        (None, "<root>"),
        ({**runtime(), "kind": "TrainingRuntime"}, "kind"),
        ({**runtime(), "spec": []}, "spec"),
        ({**runtime(), "spec": {"mlPolicy": "torch"}}, "spec.mlPolicy"),
        (
            {
                **runtime(),
                "spec": {
                    "mlPolicy": {
                        "torch": {
                            "envInjection": {
                                "targets": [{"jobName": "a", "containerNames": "node"}]
                            }
                        }
                    }
                },
            },
            "spec.mlPolicy.torch.envInjection.targets[0].containerNames",
        ),
        (
            {**runtime(), "spec": {"template": {"spec": {"replicatedJobs": [{"name": "a"}]}}}},
            "spec.template.spec.replicatedJobs[0].template",
        ),
        (
            {**runtime(), "spec": {"template": {"spec": {"replicatedJobs": "x"}}}},
            "spec.template.spec.replicatedJobs",
        ),
        ({**runtime(), "spec": {"template": {"spec": {"bogus": 1}}}}, "spec.template.spec.bogus"),
        ({**runtime(), "metadata": {"labels": []}}, "metadata.labels"),
        (
            {**runtime(), "spec": {"mlPolicy": {"mpi": {"numProcPerNode": "8"}}}},
            "spec.mlPolicy.mpi.numProcPerNode",
        ),
    ],
)
def test_malformed_runtime_names_the_field(obj: Any, path: str) -> None:
    errors, warnings = runtime_errors(CLUSTER, obj)
    assert path in [e.path for e in errors]
    assert warnings == []
