"""Validation (spec section 3): every rule, per kind, as a table of manifest mutations."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.unit.api.builders import manifest
from trainop.api import manifest as wire
from trainop.api import validation
from trainop.api.kinds import KINDS, kind_info

ALL_KINDS = [info.kind for info in KINDS]
Mutation = Callable[[dict[str, Any]], None]


def specs(obj: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = obj["spec"][kind_info(obj["kind"]).replica_specs_field]
    return result


def first_container(obj: dict[str, Any], replica_type: str) -> dict[str, Any]:
    result: dict[str, Any] = specs(obj)[replica_type]["template"]["spec"]["containers"][0]
    return result


def errors_of(obj: dict[str, Any]) -> list[tuple[str, str]]:
    result = validation.validate(wire.parse_job(obj))
    return [(e.path, e.type) for e in result.errors]


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_every_valid_layout_passes(kind: str) -> None:
    assert errors_of(manifest(kind)) == []


def _set_name(name: str) -> Mutation:
    return lambda obj: obj["metadata"].update(name=name)


COMMON_CASES: list[tuple[str, Mutation, str, str]] = [
    ("upper-case name", _set_name("My-Job"), "metadata.name", "Invalid"),
    ("name starting with a digit", _set_name("1job"), "metadata.name", "Invalid"),
    ("name with a dot", _set_name("my.job"), "metadata.name", "Invalid"),
    ("name longer than 63", _set_name("a" * 64), "metadata.name", "Invalid"),
    ("name too long for pod names", _set_name("a" * 55), "metadata.name", "TooLong"),
    ("no name", lambda obj: obj["metadata"].pop("name"), "metadata.name", "Required"),
    (
        "unsupported managedBy",
        lambda obj: obj["spec"].update(runPolicy={"managedBy": "someone/else"}),
        "spec.runPolicy.managedBy",
        "NotSupported",
    ),
    (
        "negative backoffLimit",
        lambda obj: obj["spec"].update(runPolicy={"backoffLimit": -1}),
        "spec.runPolicy.backoffLimit",
        "Invalid",
    ),
    (
        "zero activeDeadlineSeconds",
        lambda obj: obj["spec"].update(runPolicy={"activeDeadlineSeconds": 0}),
        "spec.runPolicy.activeDeadlineSeconds",
        "Invalid",
    ),
    (
        "negative ttlSecondsAfterFinished",
        lambda obj: obj["spec"].update(runPolicy={"ttlSecondsAfterFinished": -5}),
        "spec.runPolicy.ttlSecondsAfterFinished",
        "Invalid",
    ),
    (
        "negative minAvailable",
        lambda obj: obj["spec"].update(runPolicy={"schedulingPolicy": {"minAvailable": -1}}),
        "spec.runPolicy.schedulingPolicy.minAvailable",
        "Invalid",
    ),
    (
        "empty replica specs",
        lambda obj: specs(obj).clear(),
        "spec.{field}",
        "Required",
    ),
    (
        "unknown replica type",
        lambda obj: specs(obj).update(Bogus=next(iter(specs(obj).values()))),
        "spec.{field}[Bogus]",
        "NotSupported",
    ),
    (
        "negative replicas",
        lambda obj: specs(obj)["Worker"].update(replicas=-1),
        "spec.{field}[Worker].replicas",
        "Invalid",
    ),
    (
        "template without containers",
        lambda obj: specs(obj)["Worker"].update(template={"spec": {"containers": []}}),
        "spec.{field}[Worker].template.spec.containers",
        "Required",
    ),
    (
        "empty template",
        lambda obj: specs(obj)["Worker"].update(template={}),
        "spec.{field}[Worker].template.spec.containers",
        "Required",
    ),
    (
        "container without image",
        lambda obj: first_container(obj, "Worker").pop("image"),
        "spec.{field}[Worker].template.spec.containers[0].image",
        "Required",
    ),
    (
        "container without name",
        lambda obj: first_container(obj, "Worker").pop("name"),
        "spec.{field}[Worker].template.spec.containers[0].name",
        "Required",
    ),
    (
        "command as a string",
        lambda obj: first_container(obj, "Worker").update(command="python3 train.py"),
        "spec.{field}[Worker].template.spec.containers[0].command",
        "Invalid",
    ),
    (
        "containers as a mapping",
        lambda obj: specs(obj)["Worker"]["template"]["spec"].update(containers={"a": 1}),
        "spec.{field}[Worker].template.spec.containers",
        "Invalid",
    ),
    (
        "pod spec as a string",
        lambda obj: specs(obj)["Worker"]["template"].update(spec="nope"),
        "spec.{field}[Worker].template.spec",
        "Invalid",
    ),
]


@pytest.mark.parametrize("kind", ALL_KINDS)
@pytest.mark.parametrize(
    ("mutate", "path", "error_type"),
    [case[1:] for case in COMMON_CASES],
    ids=[case[0] for case in COMMON_CASES],
)
def test_common_rules_apply_to_every_kind(
    kind: str, mutate: Mutation, path: str, error_type: str
) -> None:
    obj = manifest(kind)
    mutate(obj)
    expected = (path.format(field=kind_info(kind).replica_specs_field), error_type)
    assert expected in errors_of(obj)


@pytest.mark.parametrize("kind", [k for k in ALL_KINDS if kind_info(k).requires_default_container])
def test_a_container_named_after_the_framework_is_required(kind: str) -> None:
    obj = manifest(kind)
    first_container(obj, "Worker")["name"] = "main"
    field = kind_info(kind).replica_specs_field
    assert (f"spec.{field}[Worker].template.spec.containers", "Required") in errors_of(obj)


def test_mpi_accepts_any_container_name() -> None:
    obj = manifest("MPIJob")
    first_container(obj, "Worker")["name"] = "main"
    assert errors_of(obj) == []


KIND_CASES: list[tuple[str, str, Mutation, str, str]] = [
    (
        "TF chief and master together",
        "TFJob",
        lambda obj: specs(obj).update(Master=specs(obj)["Chief"]),
        "spec.tfReplicaSpecs",
        "Forbidden",
    ),
    (
        "PyTorch master replicas 2",
        "PyTorchJob",
        lambda obj: specs(obj)["Master"].update(replicas=2),
        "spec.pytorchReplicaSpecs[Master].replicas",
        "Forbidden",
    ),
    (
        "PyTorch worker replicas 0",
        "PyTorchJob",
        lambda obj: specs(obj)["Worker"].update(replicas=0),
        "spec.pytorchReplicaSpecs[Worker].replicas",
        "Forbidden",
    ),
    (
        "PyTorch elastic without workers",
        "PyTorchJob",
        lambda obj: (specs(obj).pop("Worker"), obj["spec"].update(elasticPolicy={})),
        "spec.pytorchReplicaSpecs[Worker]",
        "Required",
    ),
    (
        "PyTorch both nproc fields",
        "PyTorchJob",
        lambda obj: obj["spec"].update(nprocPerNode="2", elasticPolicy={"nProcPerNode": 2}),
        "spec.elasticPolicy.nProcPerNode",
        "Forbidden",
    ),
    (
        "PyTorch nprocPerNode nonsense",
        "PyTorchJob",
        lambda obj: obj["spec"].update(nprocPerNode="many"),
        "spec.nprocPerNode",
        "Invalid",
    ),
    (
        "PyTorch elastic min above max",
        "PyTorchJob",
        lambda obj: obj["spec"].update(elasticPolicy={"minReplicas": 3, "maxReplicas": 2}),
        "spec.elasticPolicy.minReplicas",
        "Invalid",
    ),
    (
        "XGBoost without master",
        "XGBoostJob",
        lambda obj: specs(obj).pop("Master"),
        "spec.xgbReplicaSpecs[Master]",
        "Required",
    ),
    (
        "XGBoost master replicas 3",
        "XGBoostJob",
        lambda obj: specs(obj)["Master"].update(replicas=3),
        "spec.xgbReplicaSpecs[Master].replicas",
        "Forbidden",
    ),
    (
        "MPI without launcher",
        "MPIJob",
        lambda obj: specs(obj).pop("Launcher"),
        "spec.mpiReplicaSpecs[Launcher]",
        "Required",
    ),
    (
        "MPI two launchers",
        "MPIJob",
        lambda obj: specs(obj)["Launcher"].update(replicas=2),
        "spec.mpiReplicaSpecs[Launcher].replicas",
        "Forbidden",
    ),
    (
        "MPI lower-case type is not normalised",
        "MPIJob",
        lambda obj: specs(obj).update(worker=specs(obj).pop("Worker")),
        "spec.mpiReplicaSpecs[worker]",
        "NotSupported",
    ),
    (
        "MPI zero slots",
        "MPIJob",
        lambda obj: obj["spec"].update(slotsPerWorker=0),
        "spec.slotsPerWorker",
        "Invalid",
    ),
    (
        "Paddle chief is not a Paddle type",
        "PaddleJob",
        lambda obj: specs(obj).update(Chief=specs(obj)["Worker"]),
        "spec.paddleReplicaSpecs[Chief]",
        "NotSupported",
    ),
    (
        "Paddle elastic min above max",
        "PaddleJob",
        lambda obj: obj["spec"].update(elasticPolicy={"minReplicas": 5, "maxReplicas": 1}),
        "spec.elasticPolicy.minReplicas",
        "Invalid",
    ),
    (
        "JAX master is not a JAX type",
        "JAXJob",
        lambda obj: specs(obj).update(Master=specs(obj)["Worker"]),
        "spec.jaxReplicaSpecs[Master]",
        "NotSupported",
    ),
    (
        "JAX managedBy is validated too",
        "JAXJob",
        lambda obj: obj["spec"].update(runPolicy={"managedBy": "x/y"}),
        "spec.runPolicy.managedBy",
        "NotSupported",
    ),
    (
        "MX two schedulers",
        "MXJob",
        lambda obj: specs(obj)["Scheduler"].update(replicas=2),
        "spec.mxReplicaSpecs[Scheduler].replicas",
        "Forbidden",
    ),
    (
        "duplicate replica type in two spellings",
        "TFJob",
        lambda obj: specs(obj).update(worker=specs(obj)["Worker"]),
        "spec.tfReplicaSpecs[worker]",
        "Duplicate",
    ),
]


@pytest.mark.parametrize(
    ("kind", "mutate", "path", "error_type"),
    [case[1:] for case in KIND_CASES],
    ids=[case[0] for case in KIND_CASES],
)
def test_kind_specific_rules(kind: str, mutate: Mutation, path: str, error_type: str) -> None:
    obj = manifest(kind)
    mutate(obj)
    assert (path, error_type) in errors_of(obj)


@pytest.mark.parametrize("kind", ["PyTorchJob", "XGBoostJob"])
def test_master_without_replicas_is_accepted_because_it_defaults_to_one(kind: str) -> None:
    obj = manifest(kind)
    specs(obj)["Master"].pop("replicas")
    assert errors_of(obj) == []


def test_lower_case_replica_types_are_accepted_and_normalised() -> None:
    obj = manifest("PyTorchJob")
    specs(obj)["worker"] = specs(obj).pop("Worker")
    assert errors_of(obj) == []


def test_generate_name_stands_in_for_name() -> None:
    obj = manifest("JAXJob")
    obj["metadata"] = {"generateName": "jax-"}
    assert errors_of(obj) == []


def test_every_problem_is_reported_not_just_the_first() -> None:
    obj = manifest("PyTorchJob", name="Bad_Name")
    specs(obj)["Master"]["replicas"] = 2
    first_container(obj, "Worker").pop("image")
    paths = {path for path, _ in errors_of(obj)}
    assert {
        "metadata.name",
        "spec.pytorchReplicaSpecs[Master].replicas",
        "spec.pytorchReplicaSpecs[Worker].template.spec.containers[0].image",
    } <= paths


def test_deprecated_elastic_nproc_per_node_warns() -> None:
    job = wire.parse_job(manifest("PyTorchJob", elasticPolicy={"nProcPerNode": 2}))
    result = validation.validate(job)
    assert result.ok
    assert result.warnings == (
        "spec.elasticPolicy.nProcPerNode is deprecated, use spec.nprocPerNode instead",
    )


def test_mxjob_warns_that_upstream_removed_it() -> None:
    assert validation.validate(wire.parse_job(manifest("MXJob"))).warnings


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_managed_by_is_immutable_for_every_kind(kind: str) -> None:
    old = wire.parse_job(manifest(kind))
    new = wire.parse_job(manifest(kind, runPolicy={"managedBy": "kueue.x-k8s.io/multikueue"}))
    result = validation.validate_update(old, new)
    assert [(e.path, e.detail) for e in result.errors] == [
        ("spec.runPolicy.managedBy", "field is immutable")
    ]


def test_queue_is_immutable_once_set() -> None:
    old = wire.parse_job(manifest("TFJob", runPolicy={"schedulingPolicy": {"queue": "a"}}))
    new = wire.parse_job(manifest("TFJob", runPolicy={"schedulingPolicy": {"queue": "b"}}))
    paths = [e.path for e in validation.validate_update(old, new).errors]
    assert paths == ["spec.runPolicy.schedulingPolicy.queue"]


def test_an_unchanged_update_is_valid() -> None:
    job = wire.parse_job(
        manifest("PyTorchJob", runPolicy={"managedBy": "kueue.x-k8s.io/multikueue"})
    )
    assert validation.validate_update(job, job).ok
