"""DGLJob's API (dgljob-spec.md 1.4): its defaults and the rules only it has."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.api.builders import manifest
from trainop.api import defaults, validation
from trainop.api import manifest as wire
from trainop.api.crds import build_crd
from trainop.api.jobs import DGLJobSpec
from trainop.api.kinds import DGLJOB


def errors_of(obj: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(e.path, e.type, e.detail) for e in validation.validate(wire.parse_job(obj)).errors]


def spec_of(obj: dict[str, Any]) -> DGLJobSpec:
    spec = defaults.apply_defaults(wire.parse_job(obj)).spec
    assert isinstance(spec, DGLJobSpec)
    return spec


def test_defaults_partition_mode_slots_and_clean_pod_policy_running() -> None:
    spec = spec_of(manifest("DGLJob"))
    assert (spec.partition_mode, spec.slots_per_worker) == ("DGL-API", 1)
    assert spec.run_policy is not None
    assert spec.run_policy.clean_pod_policy == "Running", "the Qihoo operator's default"
    assert {rt: s.restart_policy for rt, s in spec.replica_specs.items()} == {
        "Launcher": "Never",
        "Worker": "Never",
    }
    assert "ports" not in spec.replica_specs["Worker"].template["spec"]["containers"][0]


@pytest.mark.parametrize(
    ("top", "run_policy", "expected"),
    [(None, None, "Running"), ("All", None, "All"), ("None", "All", "All"), (None, "None", "None")],
)
def test_deprecated_top_level_clean_pod_policy_resolves_as_mpi_v1(
    top: str | None, run_policy: str | None, expected: str
) -> None:
    spec: dict[str, Any] = {}
    if top is not None:
        spec["cleanPodPolicy"] = top
    if run_policy is not None:
        spec["runPolicy"] = {"cleanPodPolicy": run_policy}
    resolved = spec_of(manifest("DGLJob", **spec))
    assert resolved.run_policy is not None
    assert resolved.run_policy.clean_pod_policy == expected


def test_a_valid_job_has_no_errors() -> None:
    assert errors_of(manifest("DGLJob")) == []
    skip = manifest("DGLJob", partitionMode="Skip")
    del skip["spec"]["dglReplicaSpecs"]["Worker"]
    assert errors_of(skip) == []
    named = manifest("DGLJob")
    named["spec"]["dglReplicaSpecs"]["Partitioner"] = {"replicas": 1}
    assert errors_of(named) == [], "a Partitioner without a template may be named"


@pytest.mark.parametrize("mode", ["ParMETIS", "DistParMETIS"])
def test_partition_modes_never_implemented_are_field_errors(mode: str) -> None:
    assert errors_of(manifest("DGLJob", partitionMode=mode)) == [
        (
            "spec.partitionMode",
            "NotSupported",
            'was never implemented; supported values: "DGL-API", "Skip"',
        )
    ]


def test_an_unknown_partition_mode_is_not_supported() -> None:
    found = errors_of(manifest("DGLJob", partitionMode="Random"))
    assert found == [("spec.partitionMode", "NotSupported", 'supported values: "DGL-API", "Skip"')]
    (error,) = validation.validate(
        wire.parse_job(manifest("DGLJob", partitionMode="Random"))
    ).errors
    assert str(error) == (
        'spec.partitionMode: Unsupported value: "Random": supported values: "DGL-API", "Skip"'
    )


def test_a_partitioner_template_is_forbidden() -> None:
    obj = manifest("DGLJob")
    obj["spec"]["dglReplicaSpecs"]["Partitioner"] = {
        "template": obj["spec"]["dglReplicaSpecs"]["Worker"]["template"]
    }
    assert [(p, t) for p, t, _ in errors_of(obj)] == [
        ("spec.dglReplicaSpecs[Partitioner].template", "Forbidden")
    ]


def test_skip_forbids_workers_and_a_partitioner() -> None:
    obj = manifest("DGLJob", partitionMode="Skip")
    obj["spec"]["dglReplicaSpecs"]["Partitioner"] = {"replicas": 1}
    assert [(p, t) for p, t, _ in errors_of(obj)] == [
        ("spec.dglReplicaSpecs[Worker].replicas", "Forbidden"),
        ("spec.dglReplicaSpecs[Partitioner]", "Forbidden"),
    ]
    zero = manifest("DGLJob", partitionMode="Skip")
    zero["spec"]["dglReplicaSpecs"]["Worker"]["replicas"] = 0
    assert errors_of(zero) == []


def test_dgl_api_needs_a_worker() -> None:
    obj = manifest("DGLJob")
    del obj["spec"]["dglReplicaSpecs"]["Worker"]
    assert [(p, t) for p, t, _ in errors_of(obj)] == [
        ("spec.dglReplicaSpecs[Worker].replicas", "Required")
    ]


@pytest.mark.parametrize(
    ("replica_type", "replicas"), [("Launcher", 2), ("Partitioner", 2), ("Launcher", 0)]
)
def test_launcher_and_partitioner_are_single(replica_type: str, replicas: int) -> None:
    obj = manifest("DGLJob")
    specs = obj["spec"]["dglReplicaSpecs"]
    specs.setdefault(replica_type, {})["replicas"] = replicas
    path = f"spec.dglReplicaSpecs[{replica_type}].replicas"
    assert (path, "Forbidden", "must be 1") in errors_of(obj)


def test_launcher_is_required_and_slots_positive() -> None:
    obj = manifest("DGLJob", slotsPerWorker=0)
    del obj["spec"]["dglReplicaSpecs"]["Launcher"]
    assert [(p, t) for p, t, _ in errors_of(obj)] == [
        ("spec.dglReplicaSpecs[Launcher]", "Required"),
        ("spec.slotsPerWorker", "Invalid"),
    ]


def test_the_crd_serves_dgljobs_with_the_partition_mode_enum() -> None:
    from trainop.cluster.apiserver import schemas

    crd = build_crd(DGLJOB, definitions=schemas.load_definitions())
    assert crd["metadata"]["name"] == "dgljobs.kubeflow.org"
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert schema["properties"]["partitionMode"]["enum"] == ["DGL-API", "Skip"]
    assert "scale" not in crd["spec"]["versions"][0]["subresources"]
    assert set(schema["properties"]) >= {
        "dglReplicaSpecs",
        "runPolicy",
        "slotsPerWorker",
        "partitionMode",
        "cleanPodPolicy",
    }
