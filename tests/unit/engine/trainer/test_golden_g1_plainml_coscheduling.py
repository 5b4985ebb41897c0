"""Golden case G1 of the Trainer v2 spec §8: PlainML + coscheduling + initializers, and its
follow-up (a runtimePatch added while suspended reaches the JobSet; ``trainer.image`` is
immutable). Expected values typed from the spec."""

from __future__ import annotations

import copy

from tests.unit.engine.trainer.builders import (
    R,
    applied,
    env_by_name,
    g1_runtime,
    g1_trainjob,
    main_container,
    owner,
    pod_of,
    replicated,
    run,
)

from trainop.engine.trainer.plan import Observed
from trainop.engine.trainer.validate import validate_trainjob


def test_g1_jobset() -> None:
    jobset = applied(run(g1_trainjob(), g1_runtime()), "JobSet")
    assert jobset["metadata"]["name"] == "alpha"
    assert jobset["metadata"]["ownerReferences"] == [owner()]
    assert jobset["spec"]["suspend"] is True
    assert jobset["metadata"]["labels"] == {"testingKey": "testingVal"}
    assert jobset["metadata"]["annotations"] == {"testingKey": "testingVal"}
    for name, count in (("dataset-initializer", 1), ("model-initializer", 1), ("node", 100)):
        rj = replicated(jobset, name)
        assert rj["replicas"] == 1
        assert (rj["template"]["spec"]["parallelism"], rj["template"]["spec"]["completions"]) == (
            count,
            count,
        )
        assert (
            pod_of(jobset, name)["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "alpha"
        )
    dataset = main_container(jobset, "dataset-initializer", "dataset-initializer")
    assert env_by_name(dataset)["STORAGE_URI"] == "hf://trainjob-dataset"
    model = main_container(jobset, "model-initializer", "model-initializer")
    assert env_by_name(model)["STORAGE_URI"] == "hf://trainjob-model"
    node = main_container(jobset, "node")
    assert node["image"] == "test:trainjob"
    assert node["command"] == ["trainjob"]
    assert node["args"] == ["trainjob"]
    assert node["resources"]["requests"] == R
    assert not [e for e in node.get("env", []) if e["name"].startswith("PET_")]
    assert "ports" not in node


def test_g1_pod_group() -> None:
    pod_group = applied(run(g1_trainjob(), g1_runtime()), "PodGroup")
    assert pod_group["apiVersion"] == "scheduling.x-k8s.io/v1alpha1"
    assert pod_group["metadata"]["name"] == "alpha"
    assert pod_group["metadata"]["ownerReferences"] == [owner()]
    assert pod_group["spec"] == {
        "minMember": 102,
        "minResources": {"cpu": "102", "memory": "408Gi"},
        "scheduleTimeoutSeconds": 100,
    }


def test_g1_patch_added_while_suspended_reaches_the_jobset() -> None:
    first = applied(run(g1_trainjob(), g1_runtime()), "JobSet")
    tj = g1_trainjob()
    tj["spec"]["runtimePatches"].append(
        {
            "manager": "test.io/other",
            "trainingRuntimeSpec": {
                "template": {
                    "spec": {
                        "replicatedJobs": [
                            {
                                "name": "node",
                                "template": {
                                    "spec": {
                                        "template": {
                                            "spec": {"nodeSelector": {"updated": "selector"}}
                                        }
                                    }
                                },
                            }
                        ]
                    }
                }
            },
        }
    )
    observed = Observed(jobset=first)
    jobset = applied(run(tj, g1_runtime(), observed), "JobSet")
    assert pod_of(jobset, "node")["spec"]["nodeSelector"] == {"updated": "selector"}


def test_g1_trainer_image_is_immutable() -> None:
    old = g1_trainjob()
    new = copy.deepcopy(old)
    new["spec"]["trainer"]["image"] = "test:other"
    errors, _ = validate_trainjob(new, g1_runtime(), True, old)
    assert [e.path for e in errors] == ["spec.trainer"]
    assert "field is immutable" in errors[0].detail
