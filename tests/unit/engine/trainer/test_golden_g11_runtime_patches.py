"""Golden case G11 of the Trainer v2 spec §8 (runtimePatches merge), and the strategic-merge
rules of §3.2 step 2."""

from __future__ import annotations

from typing import Any

from tests.unit.engine.trainer.builders import (
    applied,
    container,
    job,
    pod_of,
    replicated,
    run,
    runtime,
    trainjob,
    wrapper_jobs,
)

from trainop.engine.trainer.patches import apply_runtime_patches, merge


def _pod_patch(manager: str, job_name: str, pod: dict[str, Any]) -> dict[str, Any]:
    replicated_job = {"name": job_name, "template": {"spec": {"template": {"spec": pod}}}}
    return {
        "manager": manager,
        "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [replicated_job]}}},
    }


def test_g11_later_patch_wins_on_the_same_job() -> None:
    rt = runtime("rt", wrapper_jobs())
    key = "node.kubernetes.io/instance-type"
    tj = trainjob(
        "test-job",
        "rt",
        runtimePatches=[
            _pod_patch("example.com/manager-1", "node", {"nodeSelector": {key: "p5.48xlarge"}}),
            _pod_patch("example.com/manager-2", "node", {"nodeSelector": {key: "p5en.48xlarge"}}),
        ],
    )
    jobset = applied(run(tj, rt), "JobSet")
    assert pod_of(jobset, "node")["spec"]["nodeSelector"] == {key: "p5en.48xlarge"}
    for name in ("dataset-initializer", "model-initializer", "node"):
        spec = replicated(jobset, name)["template"]["spec"]
        assert (spec["parallelism"], spec["completions"]) == (1, 1)


def test_g11_num_nodes_from_the_trainjob_and_labels_from_the_patch() -> None:
    rt = runtime(
        "rt",
        wrapper_jobs(resources={"requests": {"cpu": "1"}}),
        ml_policy={"numNodes": 100},
        pod_group_policy={"coscheduling": {"scheduleTimeoutSeconds": 120}},
        labels={"conflictLabel": "overridden"},
        template_labels={"conflictLabel": "overridden"},
    )
    patch = {
        "manager": "example.com/manager",
        "trainingRuntimeSpec": {
            "template": {"metadata": {"labels": {"conflictLabel": "override"}}}
        },
    }
    tj = trainjob("test-job", "rt", runtimePatches=[patch], trainer={"numNodes": 30})
    result = run(tj, rt)
    jobset = applied(result, "JobSet")
    assert jobset["metadata"]["labels"] == {"conflictLabel": "override"}
    assert replicated(jobset, "node")["template"]["spec"]["parallelism"] == 30
    assert applied(result, "PodGroup")["spec"] == {
        "minMember": 32,
        "minResources": {"cpu": "32"},
        "scheduleTimeoutSeconds": 120,
    }


def test_g11_init_container_env_patch_merges_by_name() -> None:
    init = container(
        "prepare",
        image="img",
        env=[{"name": "INIT_ENV", "value": "old"}, {"name": "DATASET_PATH", "value": "/data"}],
    )
    node_job = job(
        "node", "trainer", container("node", image="img"), pod={"initContainers": [init]}
    )
    rt = runtime("rt", [node_job])
    patched = {
        "name": "prepare",
        "env": [{"name": "INIT_ENV", "value": "patched"}, {"name": "NEW_VALUE", "value": "v"}],
    }
    tj = trainjob(
        "test-job",
        "rt",
        runtimePatches=[_pod_patch("example.com/m", "node", {"initContainers": [patched]})],
    )
    got = pod_of(applied(run(tj, rt), "JobSet"), "node")["spec"]["initContainers"][0]["env"]
    assert got == [
        {"name": "INIT_ENV", "value": "patched"},
        {"name": "DATASET_PATH", "value": "/data"},
        {"name": "NEW_VALUE", "value": "v"},
    ]


def test_g11_termination_grace_period_patch() -> None:
    rt = runtime("rt", wrapper_jobs())
    tj = trainjob(
        "test-job",
        "rt",
        runtimePatches=[
            _pod_patch("example.com/m", "node", {"terminationGracePeriodSeconds": 300})
        ],
    )
    assert (
        pod_of(applied(run(tj, rt), "JobSet"), "node")["spec"]["terminationGracePeriodSeconds"]
        == 300
    )


def test_strategic_merge_rules() -> None:
    base = {
        "tolerations": [{"key": "a"}],
        "volumeMounts": [{"name": "x", "mountPath": "/a"}],
        "affinity": {"nodeAffinity": {"x": 1}},
        "drop": 1,
    }
    patch = {
        "tolerations": [{"key": "b"}],
        "volumeMounts": [{"name": "y", "mountPath": "/a"}, {"name": "z", "mountPath": "/b"}],
        "affinity": {"podAffinity": {"y": 2}},
        "drop": None,
    }
    assert merge(base, patch) == {
        "tolerations": [{"key": "b"}],
        "volumeMounts": [{"name": "y", "mountPath": "/a"}, {"name": "z", "mountPath": "/b"}],
        "affinity": {"nodeAffinity": {"x": 1}, "podAffinity": {"y": 2}},
    }
    assert base["drop"] == 1  # inputs unchanged


def test_patched_jobs_keep_the_runtime_order() -> None:
    spec = {"replicatedJobs": [{"name": "a"}, {"name": "b"}]}
    patch = {
        "trainingRuntimeSpec": {
            "template": {"spec": {"replicatedJobs": [{"name": "b", "x": 1}, {"name": "a", "y": 2}]}}
        }
    }
    merged = apply_runtime_patches(spec, [patch])
    assert merged["replicatedJobs"] == [{"name": "a", "y": 2}, {"name": "b", "x": 1}]
