"""``convert`` on every job of ``examples/`` (every kind): the TrainJob and the runtime pass the
API's validation and the TrainJob validator, the planner builds them, the JobSet has one
Indexed Job per replica type sized as v1's replicas, and every run-policy field the manifest
sets that v2 cannot express is listed as dropped."""

from __future__ import annotations

from typing import Any

import pytest
from tests.unit.engine.convert.support import example_jobs, planned_jobset, replicas

from trainop.api.trainer import constants
from trainop.api.trainer.validation import runtime_errors, trainjob_errors
from trainop.cluster.apiserver.admission.jobset_create import create_causes
from trainop.engine.convert import convert
from trainop.engine.trainer.validate import validate_trainjob

Wire = dict[str, Any]
JOBS = example_jobs()
KINDS = {"TFJob", "PyTorchJob", "XGBoostJob", "MXJob", "MPIJob", "PaddleJob", "JAXJob", "DGLJob"}
UNEXPRESSED_RUN_POLICY = (
    "cleanPodPolicy",
    "ttlSecondsAfterFinished",
    "backoffLimit",
    "schedulingPolicy",
)


def test_the_examples_cover_every_kind_and_both_mpi_versions() -> None:
    assert {job["kind"] for _, job in JOBS} == KINDS
    assert {job["apiVersion"] for _, job in JOBS if job["kind"] == "MPIJob"} == {
        "kubeflow.org/v1",
        "kubeflow.org/v2beta1",
    }


@pytest.mark.parametrize(("name", "job"), JOBS, ids=[n for n, _ in JOBS])
def test_conversion_is_valid_v2(name: str, job: Wire) -> None:
    conversion = convert(job)
    assert trainjob_errors(conversion.trainjob) == []
    errors, warnings = runtime_errors(constants.TRAINING_RUNTIME, conversion.runtime)
    assert (errors, warnings) == ([], [])
    verdict = validate_trainjob(conversion.trainjob, conversion.runtime, True)
    assert verdict == ([], [])


@pytest.mark.parametrize(("name", "job"), JOBS, ids=[n for n, _ in JOBS])
def test_runtime_is_named_after_the_job_and_referenced(name: str, job: Wire) -> None:
    conversion = convert(job)
    assert conversion.runtime["kind"] == "TrainingRuntime"  # namespaced
    assert conversion.runtime["metadata"]["name"] == job["metadata"]["name"]
    assert conversion.trainjob["metadata"]["name"] == job["metadata"]["name"]
    assert conversion.trainjob["spec"]["runtimeRef"] == {
        "name": job["metadata"]["name"],
        "apiGroup": "trainer.kubeflow.org",
        "kind": "TrainingRuntime",
    }


@pytest.mark.parametrize(("name", "job"), JOBS, ids=[n for n, _ in JOBS])
def test_planned_jobset_has_one_indexed_job_per_replica_type(name: str, job: Wire) -> None:
    _, jobset, _ = planned_jobset(job)
    counts = replicas(job)
    if job["kind"] == "DGLJob" and job["spec"].get("partitionMode", "DGL-API") == "DGL-API":
        counts["Partitioner"] = 1  # v1 derives it from the Worker template (dgljob-spec 2.2)
    found = {}
    for rj in jobset["spec"]["replicatedJobs"]:
        spec = rj["template"]["spec"]
        assert rj["replicas"] == 1
        assert spec["completionMode"] == "Indexed"
        assert spec["parallelism"] == spec["completions"]
        assert spec["template"]["spec"]["restartPolicy"] in ("OnFailure", "Never")
        found[rj["name"]] = spec["parallelism"]
    mpi = {"Launcher": "launcher", "Worker": "node"} if job["kind"] == "MPIJob" else {}
    assert found == {mpi.get(rt, rt.lower()): n for rt, n in counts.items()}
    targets = jobset["spec"]["successPolicy"]["targetReplicatedJobs"]
    assert set(targets) <= set(found)


@pytest.mark.parametrize(("name", "job"), JOBS, ids=[n for n, _ in JOBS])
def test_every_unexpressed_run_policy_field_is_dropped_by_name(name: str, job: Wire) -> None:
    conversion = convert(job)
    paths = {dropped.path for dropped in conversion.dropped}
    run_policy = job["spec"].get("runPolicy", {})
    for field in UNEXPRESSED_RUN_POLICY:
        assert (f"spec.runPolicy.{field}" in paths) == (field in run_policy)
    assert all(dropped.reason for dropped in conversion.dropped)


@pytest.mark.parametrize(("name", "job"), JOBS, ids=[n for n, _ in JOBS])
def test_planned_jobset_passes_jobsets_create_webhook(name: str, job: Wire) -> None:
    """JobSet admits a ``dependsOn`` only on an earlier replicatedJob (JobSet spec 1.5 rule 9):
    an MPI launcher that waits for its workers is listed after them."""
    _, jobset, _ = planned_jobset(job)
    assert create_causes(jobset) == []
    names = [rj["name"] for rj in jobset["spec"]["replicatedJobs"]]
    for index, rj in enumerate(jobset["spec"]["replicatedJobs"]):
        for dependency in rj.get("dependsOn") or []:
            assert names.index(dependency["name"]) < index
