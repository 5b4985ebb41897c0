"""The pods a Job creates (spec §3.3, §4 G15 "every created pod"): names, hostname, index
annotation and label, ``JOB_COMPLETION_INDEX``, tracking finalizer, owner, selector labels."""

from __future__ import annotations

from tests.unit.cluster.controllers.jobs_fixtures import job, run
from trainop.cluster.controllers.jobs import pods

INDEX = "batch.kubernetes.io/job-completion-index"
INDEX_ENV = {
    "name": "JOB_COMPLETION_INDEX",
    "valueFrom": {
        "fieldRef": {
            "apiVersion": "v1",
            "fieldPath": "metadata.labels['batch.kubernetes.io/job-completion-index']",
        }
    },
}


def test_an_indexed_pod_carries_its_index_everywhere_kube_puts_it() -> None:
    the_job = job("train", completions=2, parallelism=2)
    the_job["spec"]["template"]["spec"]["subdomain"] = "train-svc"
    created = run(the_job, []).create
    assert [p["metadata"]["generateName"] for p in created] == ["train-0-", "train-1-"]
    first = created[1]
    meta, spec = first["metadata"], first["spec"]
    assert meta["annotations"][INDEX] == "1"
    assert meta["labels"][INDEX] == "1"
    assert meta["labels"]["app"] == "demo"
    assert meta["labels"]["batch.kubernetes.io/job-name"] == "train"
    assert meta["labels"]["controller-uid"] == "uid-train"
    assert spec["hostname"] == "train-1"
    assert spec["subdomain"] == "train-svc"
    assert spec["containers"][0]["env"] == [INDEX_ENV]
    assert spec["initContainers"][0]["env"] == [INDEX_ENV]
    assert meta["finalizers"] == ["batch.kubernetes.io/job-tracking"]
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": "train",
            "uid": "uid-train",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert ("Normal", "SuccessfulCreate") not in {e[:2] for e in run(the_job, []).events}, (
        "creation Events name the pod, so the controller records them after the create"
    )


def test_a_container_that_sets_the_index_env_keeps_its_own() -> None:
    the_job = job(completions=1)
    own = {"name": "JOB_COMPLETION_INDEX", "value": "7"}
    the_job["spec"]["template"]["spec"]["containers"][0]["env"] = [own]
    [created] = run(the_job, []).create
    assert created["spec"]["containers"][0]["env"] == [own]


def test_long_job_names_are_cut_so_the_index_survives() -> None:
    name = "j" * 60
    assert pods.pod_for(job(name, completions=12), 11)["metadata"]["generateName"] == (
        "j" * 54 + "-11-"
    )
    assert len(pods.pod_for(job(name, completions=1), 0)["metadata"]["generateName"]) == 58


def test_a_non_indexed_pod_has_no_index_and_no_hostname() -> None:
    [created] = run(job(indexed=False, completions=1), []).create
    assert created["metadata"]["generateName"] == "job-"
    assert INDEX not in created["metadata"]["labels"]
    assert "hostname" not in created["spec"]
    assert "env" not in created["spec"]["containers"][0]
