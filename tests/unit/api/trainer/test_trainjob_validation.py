"""TrainJob rules of spec sections 1.1-1.4 (and the bounds adopted from section 7.1), each with
upstream's message in kube's framing; expected texts are the spec's, not trainop's output."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.unit.api.trainer.builders import patch, trainjob
from trainop.api.trainer.validation import trainjob_errors
from trainop.errors import FieldError

IMMUTABLE = 'Invalid value: "object": field is immutable'


def details(errors: list[FieldError]) -> dict[str, str]:
    return {e.path: e.detail for e in errors}


def test_a_minimal_trainjob_is_valid() -> None:
    assert trainjob_errors(trainjob()) == []


@pytest.mark.parametrize("name", ["Invalid-job-name", "1jobname", "jobname-"])
def test_name_must_be_an_rfc1035_label(name: str) -> None:
    assert details(trainjob_errors(trainjob(name))) == {
        "<nil>": 'Invalid value: "object": metadata.name must match RFC 1035 DNS label format'
    }


def test_name_of_64_characters_is_refused() -> None:
    assert details(trainjob_errors(trainjob("a" * 64))) == {
        "<nil>": 'Invalid value: "object": metadata.name must be no more than 63 characters'
    }
    assert trainjob_errors(trainjob("a" * 63)) == []


def test_managed_by_must_be_trainer_or_multikueue() -> None:
    message = (
        "ManagedBy must be trainer.kubeflow.org/trainjob-controller or "
        "kueue.x-k8s.io/multikueue if set"
    )
    assert details(trainjob_errors(trainjob(managedBy="invalid"))) == {
        "spec.managedBy": f'Invalid value: "string": {message}'
    }
    assert trainjob_errors(trainjob(managedBy="kueue.x-k8s.io/multikueue")) == []


@pytest.mark.parametrize("uri", ["hf://org/model", "s3://b/k", ""])
def test_storage_uri_may_be_empty_or_a_uri(uri: str) -> None:
    assert trainjob_errors(trainjob(initializer={"dataset": {"storageUri": uri}})) == []


def test_storage_uri_without_scheme_is_refused() -> None:
    obj = trainjob(initializer={"model": {"storageUri": "just-a-path"}})
    message = "storageUri may be empty, or it must be a valid URI (scheme://...)"
    assert details(trainjob_errors(obj)) == {
        "spec.initializer.model.storageUri": f'Invalid value: "string": {message}'
    }


def test_num_proc_per_node_below_one_is_refused() -> None:
    obj = trainjob(trainer={"numProcPerNode": 0})
    assert details(trainjob_errors(obj)) == {
        "spec.trainer.numProcPerNode": (
            'Invalid value: "integer": numProcPerNode must be greater than or equal to 1'
        )
    }


def test_num_nodes_below_zero_is_refused() -> None:
    errors = trainjob_errors(trainjob(trainer={"numNodes": -5}))
    assert [e.path for e in errors] == ["spec.trainer.numNodes"]
    assert "should be greater than or equal to 0" in errors[0].detail
    assert trainjob_errors(trainjob(trainer={"numNodes": 0})) == []


def test_active_deadline_must_be_at_least_one() -> None:
    errors = trainjob_errors(trainjob(activeDeadlineSeconds=0))
    assert [(e.path, e.type) for e in errors] == [("spec.activeDeadlineSeconds", "Invalid")]
    assert "greater than or equal to 1" in errors[0].detail


@pytest.mark.parametrize(
    ("spec", "path", "expected"),
    [
        ({"trainer": {"image": "x" * 501}}, "spec.trainer.image", "at most 500 chars"),
        ({"trainer": {"command": ["a"] * 129}}, "spec.trainer.command", "at most 128 items"),
        ({"trainer": {"args": ["a" * 1048577]}}, "spec.trainer.args[0]", "at most 1048576 chars"),
        ({"runtimeRef": {"name": ""}}, "spec.runtimeRef.name", "at least 1 chars"),
        ({"runtimeRef": {"name": "n" * 254}}, "spec.runtimeRef.name", "at most 253 chars"),
        ({"managedBy": "m" * 254}, "spec.managedBy", "at most 253 chars"),
        (
            {"initializer": {"dataset": {"storageUri": "s3://" + "k" * 2044}}},
            "spec.initializer.dataset.storageUri",
            "at most 2048 chars",
        ),
        (
            {"runtimePatches": [patch(f"a.io/m{i}", {}) for i in range(17)]},
            "spec.runtimePatches",
            "at most 16 items",
        ),
    ],
)
def test_schema_limits(spec: dict[str, Any], path: str, expected: str) -> None:
    obj = trainjob(**spec)
    errors = [e for e in trainjob_errors(obj) if e.path == path]
    assert errors, trainjob_errors(obj)
    assert expected in errors[0].detail


def test_termination_grace_period_must_not_be_negative() -> None:
    obj = trainjob(runtimePatches=[patch("test.io/m", {"terminationGracePeriodSeconds": -1})])
    errors = trainjob_errors(obj)
    assert len(errors) == 1
    assert errors[0].path.endswith(".template.spec.template.spec.terminationGracePeriodSeconds")
    ok = trainjob(runtimePatches=[patch("test.io/m", {"terminationGracePeriodSeconds": 0})])
    assert trainjob_errors(ok) == []


@pytest.mark.parametrize(
    ("field", "old_value", "new_value"),
    [
        ("runtimeRef", {"name": "a"}, {"name": "b"}),
        ("initializer", {"model": {"storageUri": "hf://a"}}, {"model": {"storageUri": "hf://b"}}),
        ("trainer", {"image": "test:trainjob"}, {"image": "test:other"}),
    ],
)
def test_whole_objects_are_immutable(field: str, old_value: Any, new_value: Any) -> None:
    old, new = trainjob(**{field: old_value}), trainjob(**{field: new_value})
    assert details(trainjob_errors(new, old)) == {f"spec.{field}": IMMUTABLE}


def test_managed_by_and_deadline_are_immutable() -> None:
    old = trainjob(managedBy="kueue.x-k8s.io/multikueue", activeDeadlineSeconds=10)
    new = trainjob(managedBy="trainer.kubeflow.org/trainjob-controller", activeDeadlineSeconds=20)
    assert details(trainjob_errors(new, old)) == {
        "spec.managedBy": 'Invalid value: "string": field is immutable',
        "spec.activeDeadlineSeconds": 'Invalid value: "integer": field is immutable',
    }


def test_adding_a_whole_block_is_not_a_transition() -> None:
    """CEL transition rules run only when the field exists in both objects (spec 1.1)."""
    old, new = trainjob(), trainjob(trainer={"image": "x"})
    assert trainjob_errors(new, old) == []
    assert trainjob_errors(old, new) == []


def test_suspend_is_mutable() -> None:
    assert trainjob_errors(trainjob(suspend=False), trainjob(suspend=True)) == []


def test_patched_pod_fields_are_immutable_for_the_same_manager_and_job() -> None:
    old = trainjob(runtimePatches=[patch("test.io/m", {"terminationGracePeriodSeconds": 300})])
    new = trainjob(runtimePatches=[patch("test.io/m", {"terminationGracePeriodSeconds": 600})])
    path = (
        "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0]"
        ".template.spec.template.spec.terminationGracePeriodSeconds"
    )
    assert details(trainjob_errors(new, old)) == {
        path: 'Invalid value: "integer": field is immutable'
    }


@pytest.mark.parametrize(
    ("field", "old_value", "new_value"),
    [
        ("serviceAccountName", "a", "b"),
        ("volumes", [{"name": "v", "emptyDir": {}}], [{"name": "w", "emptyDir": {}}]),
        ("containers", [{"name": "c"}], [{"name": "c", "env": [{"name": "E", "value": "1"}]}]),
        ("initContainers", [{"name": "c"}], [{"name": "d"}]),
        ("imagePullSecrets", [{"name": "a"}], [{"name": "b"}]),
        ("securityContext", {"runAsUser": 1}, {"runAsUser": 2}),
    ],
)
def test_each_immutable_pod_field(field: str, old_value: Any, new_value: Any) -> None:
    old = trainjob(runtimePatches=[patch("test.io/m", {field: old_value})])
    new = trainjob(runtimePatches=[patch("test.io/m", {field: new_value})])
    errors = trainjob_errors(new, old)
    assert [e.path.rsplit(".", 1)[-1] for e in errors] == [field]
    assert errors[0].detail.endswith(": field is immutable")


@pytest.mark.parametrize(
    ("field", "old_value", "new_value"),
    [
        ("nodeSelector", {"a": "b"}, {"a": "c"}),
        ("tolerations", [{"key": "a"}], [{"key": "b"}]),
        ("schedulingGates", [{"name": "a"}], [{"name": "b"}]),
        ("affinity", {}, {"nodeAffinity": {}}),
    ],
)
def test_mutable_pod_fields(field: str, old_value: Any, new_value: Any) -> None:
    old = trainjob(runtimePatches=[patch("test.io/m", {field: old_value})])
    new = trainjob(runtimePatches=[patch("test.io/m", {field: new_value})])
    assert trainjob_errors(new, old) == []


def test_a_new_manager_or_job_may_set_any_field() -> None:
    old = trainjob(runtimePatches=[patch("a.io/m", {"serviceAccountName": "a"})])
    other_manager = trainjob(runtimePatches=[patch("b.io/m", {"serviceAccountName": "b"})])
    other_job = trainjob(runtimePatches=[patch("a.io/m", {"serviceAccountName": "b"}, "launcher")])
    assert trainjob_errors(other_manager, old) == []
    assert trainjob_errors(other_job, old) == []


def test_dropping_an_explicit_zero_value_is_a_change() -> None:
    """Deep equality is the contract (spec 7.2, issue #3888)."""
    mount = {"name": "v", "mountPath": "/v", "readOnly": False}
    old = trainjob(
        runtimePatches=[
            patch("a.io/m", {"containers": [{"name": "node", "volumeMounts": [mount]}]})
        ]
    )
    trimmed = {"name": "v", "mountPath": "/v"}
    new = trainjob(
        runtimePatches=[
            patch("a.io/m", {"containers": [{"name": "node", "volumeMounts": [trimmed]}]})
        ]
    )
    assert [e.detail for e in trainjob_errors(new, old)] == [
        'Invalid value: "array": field is immutable'
    ]


def test_trainer_status_needs_last_updated_time() -> None:
    obj = trainjob()
    obj["status"] = {"trainerStatus": {"progressPercentage": 10}}
    assert details(trainjob_errors(obj)) == {
        "status.trainerStatus": (
            'Invalid value: "object": lastUpdatedTime is required when trainerStatus is present'
        )
    }
    obj["status"]["trainerStatus"]["lastUpdatedTime"] = "2026-01-01T00:00:00Z"
    assert trainjob_errors(obj) == []


def test_progress_percentage_is_bounded() -> None:
    obj = trainjob()
    obj["status"] = {
        "trainerStatus": {"progressPercentage": 101, "lastUpdatedTime": "2026-01-01T00:00:00Z"}
    }
    errors = trainjob_errors(obj)
    assert [e.path for e in errors] == ["status.trainerStatus.progressPercentage"]
    assert "less than or equal to 100" in errors[0].detail


def test_jobs_status_counters_are_required() -> None:
    obj = trainjob()
    obj["status"] = {"jobsStatus": [{"name": "node", "ready": 0}]}
    paths = {e.path for e in trainjob_errors(obj)}
    assert paths == {
        f"status.jobsStatus[0].{k}" for k in ("succeeded", "failed", "active", "suspended")
    }


@pytest.mark.parametrize(
    ("obj", "path"),
    [
        (None, "<root>"),
        ([], "<root>"),
        ("text", "<root>"),
        (
            {"apiVersion": "v1", "kind": "TrainJob", "spec": {"runtimeRef": {"name": "a"}}},
            "apiVersion",
        ),
        ({"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob"}, "spec"),
        ({**trainjob(), "spec": "x"}, "spec"),
        ({**trainjob(), "spec": {"runtimeRef": "x"}}, "spec.runtimeRef"),
        ({**trainjob(), "spec": {"runtimeRef": {"name": 3}}}, "spec.runtimeRef.name"),
        (
            {**trainjob(), "spec": {"runtimeRef": {"name": "a"}, "trainer": {"numNodes": "2"}}},
            "spec.trainer.numNodes",
        ),
        (
            {**trainjob(), "spec": {"runtimeRef": {"name": "a"}, "trainer": {"numNodes": 2**31}}},
            "spec.trainer.numNodes",
        ),
        (
            {**trainjob(), "spec": {"runtimeRef": {"name": "a"}, "runtimePatches": [3]}},
            "spec.runtimePatches[0]",
        ),
        ({**trainjob(), "spec": {"runtimeRef": {"name": "a"}, "unknown": 1}}, "spec.unknown"),
        (
            {**trainjob(), "spec": {"runtimeRef": {"name": "a"}, "trainer": {"env": "x"}}},
            "spec.trainer.env",
        ),
        ({**trainjob(), "metadata": {"name": 5}}, "metadata.name"),
    ],
)
def test_malformed_input_names_the_field(obj: Any, path: str) -> None:
    errors = trainjob_errors(obj)
    assert path in [e.path for e in errors]


def test_malformed_old_object_never_raises() -> None:
    new = trainjob(trainer={"image": "x"})
    olds: list[Any] = [
        {"spec": "x"},
        {"spec": {"runtimePatches": "x"}},
        [],
        {"spec": {"trainer": 3}},
    ]
    for old in olds:
        errors = trainjob_errors(new, old)
        assert all(e.path == "spec.trainer" for e in errors)  # only a real change is reported


def test_input_is_not_modified() -> None:
    obj = trainjob(runtimePatches=[patch("a.io/m", {"serviceAccountName": "a"})])
    before = copy.deepcopy(obj)
    trainjob_errors(obj, copy.deepcopy(obj))
    assert obj == before
