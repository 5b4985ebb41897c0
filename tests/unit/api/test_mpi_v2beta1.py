"""MPIJob kubeflow.org/v2beta1 beside v1: model, defaults, validation, one CRD with two versions,
and the version semantics that survive the apiVersion rewrite (design note 100)."""

from __future__ import annotations

import copy
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from trainop.api import crds, manifest, mpi_v2beta1, validation
from trainop.api.kinds import MPIJOB
from trainop.cluster.apiserver.schemas import load_definitions
from trainop.engine import plan as engine
from trainop.engine.observed import Observed
from trainop.frameworks.registry import framework_for
from trainop.frameworks.topology import ClusterTopology

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def v2job(name: str = "pi", **spec: Any) -> dict[str, Any]:
    container = {"name": "mpi", "image": "mpioperator/mpi-pi:openmpi"}
    body: dict[str, Any] = {
        "sshAuthMountPath": "/root/.ssh",
        "mpiReplicaSpecs": {
            "Launcher": {"replicas": 1, "template": {"spec": {"containers": [container]}}},
            "Worker": {"replicas": 2, "template": {"spec": {"containers": [container]}}},
        },
    }
    body |= spec
    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": body,
    }


def test_defaults_are_the_controllers() -> None:
    raw = v2job()
    del raw["spec"]["sshAuthMountPath"]
    del raw["spec"]["mpiReplicaSpecs"]["Launcher"]["replicas"]
    job = mpi_v2beta1.apply_defaults(mpi_v2beta1.parse(raw))
    spec = job.spec
    assert (spec.slots_per_worker, spec.ssh_auth_mount_path) == (1, "/root/.ssh")
    assert (spec.launcher_creation_policy, spec.mpi_implementation) == ("AtStartup", "OpenMPI")
    assert spec.run_launcher_as_worker is False
    assert job.run_policy.clean_pod_policy == "None"
    launcher, worker = spec.replica_specs["Launcher"], spec.replica_specs["Worker"]
    assert (launcher.replicas, launcher.restart_policy) == (1, "OnFailure")
    assert (worker.replicas, worker.restart_policy) == (2, "Never")
    assert mpi_v2beta1.validate(job) == []


def errors_of(raw: dict[str, Any]) -> list[str]:
    return [
        str(e) for e in mpi_v2beta1.validate(mpi_v2beta1.apply_defaults(mpi_v2beta1.parse(raw)))
    ]


def test_validation_uses_upstream_paths_and_words() -> None:
    raw = v2job(slotsPerWorker=-1, sshAuthMountPath="")
    specs = raw["spec"]["mpiReplicaSpecs"]
    specs["Launcher"]["replicas"] = 2
    specs["Worker"]["restartPolicy"] = "Always"
    specs["Worker"]["template"] = {}
    raw["spec"]["runPolicy"] = {"backoffLimit": -2, "managedBy": "someone/else"}
    assert errors_of(raw) == [
        "spec.mpiReplicaSpecs[Launcher].replicas: Invalid value: 2: must be 1",
        'spec.mpiReplicaSpecs[Worker].restartPolicy: Unsupported value: "Always": supported '
        'values: "Never", "OnFailure"',
        "spec.mpiReplicaSpecs[Worker].template.spec.containers: Required value: must define at "
        "least one container",
        "spec.slotsPerWorker: Invalid value: -1: must be greater than or equal to 0",
        "spec.runPolicy.backoffLimit: Invalid value: -2: must be greater than or equal to 0",
        'spec.runPolicy.managedBy: Unsupported value: "someone/else": supported values: '
        '"kubeflow.org/mpi-operator", "kueue.x-k8s.io/multikueue"',
        "spec.sshAuthMountPath: Required value: must have a mount path for SSH credentials",
    ]


def test_a_worker_entry_without_replicas_is_rejected_and_no_launcher_is_required() -> None:
    raw = v2job()
    del raw["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"]
    assert errors_of(raw) == [
        "spec.mpiReplicaSpecs[Worker].replicas: Invalid value: 0: must be greater than or equal "
        "to 1"
    ]
    del raw["spec"]["mpiReplicaSpecs"]["Launcher"]
    assert "spec.mpiReplicaSpecs[Launcher]: Required value: must have Launcher replica spec" in (
        errors_of(raw)
    )


def test_the_longest_worker_name_must_be_a_dns_label() -> None:
    (error,) = errors_of(v2job(name="a" * 60))
    assert error.startswith(
        f'metadata.name: Invalid value: "{"a" * 60}": will not able to create pod and service '
        'with invalid DNS label "' + "a" * 60 + '-worker-1": must be no more than 63 characters'
    )
    assert errors_of(v2job(name="a" * 54)) == []


def test_validation_message_aggregates_and_truncates() -> None:
    errs = mpi_v2beta1.validate(mpi_v2beta1.apply_defaults(mpi_v2beta1.parse(v2job(name="A"))))
    assert mpi_v2beta1.validation_message(errs).startswith("Found validation errors: metadata")
    # 40 different errors: kube's aggregate shows an error listed twice once
    many = [replace(e, path=f"{e.path}{i}") for i in range(40) for e in errs]
    message = mpi_v2beta1.validation_message(many)
    assert message.startswith("Found validation errors: [metadata.name")
    assert len(message.encode()) == 1024
    assert message.endswith("...")


@pytest.fixture(scope="module")
def crd() -> dict[str, Any]:
    return crds.build_crd(MPIJOB, definitions=load_definitions())


def test_one_crd_serves_v1_stored_and_v2beta1(crd: dict[str, Any]) -> None:
    versions = {v["name"]: v for v in crd["spec"]["versions"]}
    assert list(versions) == ["v1", "v2beta1"]
    assert [(v["served"], v["storage"]) for v in versions.values()] == [(True, True), (True, False)]
    assert "conversion" not in crd["spec"]  # strategy None: the API server rewrites apiVersion
    assert versions["v2beta1"]["subresources"] == {"status": {}}
    v1_spec, v2_spec = (
        versions[name]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        for name in ("v1", "v2beta1")
    )
    # Both schemas hold every field, so nothing is pruned whichever version writes a job.
    assert set(v1_spec) == set(v2_spec)
    assert {"sshAuthMountPath", "mainContainer", "mpiImplementation"} <= set(v1_spec)
    # Only v2beta1 defaults the fields: a v1 job never gains v2beta1 semantics on a v1 write.
    assert v2_spec["sshAuthMountPath"]["default"] == "/root/.ssh"
    assert v2_spec["mpiImplementation"]["enum"] == ["OpenMPI", "Intel", "MPICH"]
    assert "default" not in v1_spec["sshAuthMountPath"]


def test_reading_through_the_other_version_and_back_loses_nothing() -> None:
    raw = v2job(
        slotsPerWorker=4,
        runLauncherAsWorker=True,
        launcherCreationPolicy="WaitForWorkersReady",
        mpiImplementation="Intel",
        runPolicy={"cleanPodPolicy": "Running", "backoffLimit": 3},
    )
    as_v1 = {**copy.deepcopy(raw), "apiVersion": "kubeflow.org/v1"}
    v1_job = manifest.parse_job(as_v1)
    back = {**manifest.dump_job(v1_job), "apiVersion": "kubeflow.org/v2beta1"}
    assert back == raw
    assert mpi_v2beta1.parse(back).model_dump(by_alias=True, exclude_none=True, mode="json") == raw

    v1_raw = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "MPIJob",
        "metadata": {"name": "old", "namespace": "default"},
        "spec": {
            "slotsPerWorker": 2,
            "cleanPodPolicy": "All",
            "mainContainer": "mpi",
            "mpiReplicaSpecs": v2job()["spec"]["mpiReplicaSpecs"],
        },
    }
    as_v2 = mpi_v2beta1.parse(v1_raw)
    dumped = as_v2.model_dump(by_alias=True, exclude_none=True, mode="json")
    assert {**dumped, "apiVersion": "kubeflow.org/v1"} == v1_raw
    assert not mpi_v2beta1.is_v2beta1_job(v1_raw)
    assert mpi_v2beta1.is_v2beta1_job(raw)


def test_the_semantics_field_cannot_be_added_or_removed_by_an_update() -> None:
    old = manifest.parse_job({**v2job(), "apiVersion": "kubeflow.org/v1"})
    raw = manifest.dump_job(old)
    del raw["spec"]["sshAuthMountPath"]
    new = manifest.parse_job(raw)
    for before, after in ((old, new), (new, old)):
        errors = validation.validate_update(before, after).errors
        assert [(e.path, e.type) for e in errors] == [("spec.sshAuthMountPath", "Forbidden")]
    assert validation.validate_update(old, old).ok


def test_the_v1_plugin_leaves_v2beta1_jobs_alone() -> None:
    framework = framework_for("MPIJob")
    job = manifest.parse_job({**v2job(), "apiVersion": "kubeflow.org/v1"})
    result = engine.plan(job, Observed(), framework, ClusterTopology(), NOW)
    assert result.skipped
    assert result.actions == ()
    assert result.events == ()
    v1 = manifest.parse_job(
        {
            **v2job(),
            "apiVersion": "kubeflow.org/v1",
            "spec": {"mpiReplicaSpecs": v2job()["spec"]["mpiReplicaSpecs"]},
        }
    )
    assert engine.plan(v1, Observed(), framework, ClusterTopology(), NOW).actions


def test_admission_and_trainop_validate_apply_the_v2beta1_rules() -> None:
    """A v2beta1 job read through v1 (manifest.check_job: the webhook, the embedded API server
    and ``trainop validate``) is judged by its own rules: 0 slots pass, -1 does not."""
    assert manifest.check_job(v2job(slotsPerWorker=0)).ok
    result = manifest.check_job(v2job(slotsPerWorker=-1))
    assert [str(e) for e in result.errors] == [
        "spec.slotsPerWorker: Invalid value: -1: must be greater than or equal to 0"
    ]
    replicas = v2job()["spec"]["mpiReplicaSpecs"]
    v1_raw = {**v2job(), "apiVersion": "kubeflow.org/v1"}
    v1_raw["spec"] = {"mpiReplicaSpecs": replicas, "slotsPerWorker": 0}
    v1 = manifest.check_job(v1_raw)
    assert [e.path for e in v1.errors] == ["spec.slotsPerWorker"]  # v1: at least 1
