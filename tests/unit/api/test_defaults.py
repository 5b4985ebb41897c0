"""Defaulting (spec section 2): every rule, per kind, as a table."""

from __future__ import annotations

from typing import Any, TypeVar

import pytest

from tests.unit.api.builders import LAYOUTS, manifest, replica
from trainop.api import defaults
from trainop.api import manifest as wire
from trainop.api.jobs import MPIJobSpec, PaddleJobSpec, PyTorchJobSpec, TFJobSpec
from trainop.api.kinds import KINDS, kind_info
from trainop.api.types import Job, JobSpec

S = TypeVar("S", bound=JobSpec)
ALL_KINDS = [info.kind for info in KINDS]


def defaulted(obj: dict[str, Any]) -> Job:
    return defaults.apply_defaults(wire.parse_job(obj))


def spec_of(job: Job, cls: type[S]) -> S:
    assert isinstance(job.spec, cls)
    return job.spec


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_unset_replicas_default_to_one_except_mpi_worker(kind: str) -> None:
    info = kind_info(kind)
    obj = manifest(kind)
    obj["spec"][info.replica_specs_field] = {rt: replica(info, None) for rt in LAYOUTS[kind]}
    specs = defaulted(obj).spec.replica_specs
    expected = {rt: 0 if (kind, rt) == ("MPIJob", "Worker") else 1 for rt in LAYOUTS[kind]}
    assert {rt: s.replicas for rt, s in specs.items()} == expected


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_unset_restart_policy_takes_the_kind_default(kind: str) -> None:
    expected = {
        "TFJob": "Never",
        "PyTorchJob": "OnFailure",
        "XGBoostJob": "Never",
        "MPIJob": "Never",
        "PaddleJob": "OnFailure",
        "JAXJob": "Never",
        "MXJob": "Never",
        "DGLJob": "Never",
    }[kind]
    specs = defaulted(manifest(kind)).spec.replica_specs
    assert {s.restart_policy for s in specs.values()} == {expected}


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_explicit_restart_policy_is_kept(kind: str) -> None:
    info = kind_info(kind)
    obj = manifest(kind)
    for spec in obj["spec"][info.replica_specs_field].values():
        spec["restartPolicy"] = "ExitCode"
    specs = defaulted(obj).spec.replica_specs
    assert {s.restart_policy for s in specs.values()} == {"ExitCode"}


@pytest.mark.parametrize("kind", [k for k in ALL_KINDS if kind_info(k).inserts_default_port])
def test_default_port_is_appended_to_the_default_container(kind: str) -> None:
    info = kind_info(kind)
    spec = defaulted(manifest(kind)).spec.replica_specs[next(iter(LAYOUTS[kind]))]
    ports = spec.template["spec"]["containers"][0]["ports"]
    assert ports == [{"name": info.default_port_name, "containerPort": info.default_port}]


def test_default_port_goes_to_the_container_named_after_the_kind_not_the_first() -> None:
    obj = manifest("PyTorchJob")
    containers = obj["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"]
    containers.insert(0, {"name": "sidecar", "image": "busybox", "command": ["sleep"]})
    out = defaulted(obj).spec.replica_specs["Worker"].template["spec"]["containers"]
    assert "ports" not in out[0]
    assert out[1]["ports"] == [{"name": "pytorchjob-port", "containerPort": 23456}]


def test_default_port_falls_back_to_the_first_container() -> None:
    obj = manifest("JAXJob")
    obj["spec"]["jaxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["name"] = "main"
    out = defaulted(obj).spec.replica_specs["Worker"].template["spec"]["containers"]
    assert out[0]["ports"] == [{"name": "jaxjob-port", "containerPort": 6666}]


def test_a_port_with_the_default_name_is_kept_as_the_user_wrote_it() -> None:
    obj = manifest("PaddleJob")
    c = obj["spec"]["paddleReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    c["ports"] = [{"name": "master", "containerPort": 37777}]
    out = defaulted(obj).spec.replica_specs["Worker"].template["spec"]["containers"][0]
    assert out["ports"] == [{"name": "master", "containerPort": 37777}]


def test_mpi_gets_no_default_port() -> None:
    specs = defaulted(manifest("MPIJob")).spec.replica_specs
    assert all("ports" not in s.template["spec"]["containers"][0] for s in specs.values())


def test_defaulting_never_mutates_its_input() -> None:
    obj = manifest("PyTorchJob")
    job = wire.parse_job(obj)
    before = wire.dump_job(job)
    defaults.apply_defaults(job)
    assert wire.dump_job(job) == before


def test_template_without_containers_is_left_for_validation_to_report() -> None:
    obj = manifest("TFJob")
    obj["spec"]["tfReplicaSpecs"]["Worker"]["template"] = {}
    assert defaulted(obj).spec.replica_specs["Worker"].template == {}


@pytest.mark.parametrize(
    ("kind", "key", "canonical"),
    [
        ("TFJob", "worker", "Worker"),
        ("TFJob", "ps", "PS"),
        ("TFJob", "CHIEF", "Chief"),
        ("PyTorchJob", "master", "Master"),
        ("XGBoostJob", "WORKER", "Worker"),
        ("PaddleJob", "worker", "Worker"),
        ("JAXJob", "worker", "Worker"),
        ("MXJob", "scheduler", "Scheduler"),
    ],
)
def test_replica_type_keys_are_normalised_to_canonical_case(
    kind: str, key: str, canonical: str
) -> None:
    info = kind_info(kind)
    obj = manifest(kind)
    specs = obj["spec"][info.replica_specs_field]
    specs[key] = specs.pop(canonical)
    assert canonical in defaulted(obj).spec.replica_specs


def test_mpi_replica_type_keys_are_not_normalised() -> None:
    obj = manifest("MPIJob")
    obj["spec"]["mpiReplicaSpecs"]["worker"] = obj["spec"]["mpiReplicaSpecs"].pop("Worker")
    assert set(defaulted(obj).spec.replica_specs) == {"Launcher", "worker"}


@pytest.mark.parametrize("kind", [k for k in ALL_KINDS if k not in ("MPIJob", "DGLJob")])
@pytest.mark.parametrize(
    ("run_policy", "expected"), [(None, "None"), ({}, "None"), ({"cleanPodPolicy": "All"}, "All")]
)
def test_clean_pod_policy_defaults_to_none(
    kind: str, run_policy: dict[str, Any] | None, expected: str
) -> None:
    obj = manifest(kind) if run_policy is None else manifest(kind, runPolicy=run_policy)
    assert defaulted(obj).run_policy.clean_pod_policy == expected


@pytest.mark.parametrize(
    ("top", "run_policy", "expected"),
    [
        (None, None, "None"),
        ("All", None, "All"),
        (None, "Running", "Running"),
        ("All", "Running", "Running"),
    ],
)
def test_mpi_clean_pod_policy_resolves_both_fields(
    top: str | None, run_policy: str | None, expected: str
) -> None:
    spec: dict[str, Any] = {}
    if top is not None:
        spec["cleanPodPolicy"] = top
    if run_policy is not None:
        spec["runPolicy"] = {"cleanPodPolicy": run_policy}
    job = defaulted(manifest("MPIJob", **spec))
    assert job.run_policy.clean_pod_policy == expected
    assert spec_of(job, MPIJobSpec).clean_pod_policy == expected


@pytest.mark.parametrize(("given", "expected"), [(None, ""), ("AllWorkers", "AllWorkers")])
def test_tf_success_policy_defaults_to_empty(given: str | None, expected: str) -> None:
    spec = {} if given is None else {"successPolicy": given}
    assert spec_of(defaulted(manifest("TFJob", **spec)), TFJobSpec).success_policy == expected


ELASTIC_CASES = [
    ({"minReplicas": 1, "maxReplicas": 4}, (1, 4)),
    ({"maxReplicas": 3}, (3, 3)),
    ({"minReplicas": 2}, (2, 2)),
    ({}, (2, 2)),  # both from Worker replicas
]


@pytest.mark.parametrize("kind", ["PyTorchJob", "PaddleJob"])
@pytest.mark.parametrize(("policy", "bounds"), ELASTIC_CASES)
def test_elastic_min_and_max_replicas_default(
    kind: str, policy: dict[str, int], bounds: tuple[int, int]
) -> None:
    spec = defaulted(manifest(kind, elasticPolicy=policy)).spec
    assert isinstance(spec, PyTorchJobSpec | PaddleJobSpec)
    elastic = spec.elastic_policy
    assert elastic is not None
    assert (elastic.min_replicas, elastic.max_replicas) == bounds


def test_paddle_elastic_policy_without_worker_does_not_crash() -> None:
    obj = manifest("PaddleJob", elasticPolicy={})
    del obj["spec"]["paddleReplicaSpecs"]["Worker"]
    elastic = spec_of(defaulted(obj), PaddleJobSpec).elastic_policy
    assert elastic is not None
    assert (elastic.min_replicas, elastic.max_replicas) == (None, None)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({}, "auto"),
        ({"nprocPerNode": "2"}, "2"),
        ({"elasticPolicy": {}}, "auto"),
        ({"elasticPolicy": {"nProcPerNode": 4}}, None),
    ],
)
def test_pytorch_nproc_per_node_defaults_to_auto_unless_deprecated_field_set(
    spec: dict[str, Any], expected: str | None
) -> None:
    job = defaulted(manifest("PyTorchJob", **spec))
    assert spec_of(job, PyTorchJobSpec).nproc_per_node == expected
