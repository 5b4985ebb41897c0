"""Golden cases G2 (Torch TrainJob → JobSet) and G3 (``numProcPerNode: auto``) of the Trainer
v2 spec §8; expected values typed from the spec."""

from __future__ import annotations

from typing import Any

import pytest
from tests.unit.engine.trainer.builders import (
    FIELD_REF,
    R,
    applied,
    container,
    env_by_name,
    job,
    main_container,
    owner,
    replicated,
    run,
    runtime,
    trainjob,
    wrapper_jobs,
)


def test_g2_torch_trainjob_gets_the_jobset_with_pet_env_and_port() -> None:
    rt = runtime(
        "alpha", wrapper_jobs(resources={"requests": R}), ml_policy={"numNodes": 100, "torch": {}}
    )
    tj = trainjob(
        "alpha",
        "alpha",
        trainer={
            "image": "test:trainjob",
            "command": ["trainjob"],
            "args": ["trainjob"],
            "resourcesPerNode": {"requests": R},
            "env": [{"name": "TRAIN_JOB", "value": "value"}],
        },
    )
    jobset = applied(run(tj, rt), "JobSet")
    assert jobset["metadata"]["ownerReferences"] == [owner()]
    assert jobset["spec"]["suspend"] is False
    node_job = replicated(jobset, "node")["template"]["spec"]
    assert (node_job["parallelism"], node_job["completions"]) == (100, 100)
    node = main_container(jobset, "node")
    assert node["image"] == "test:trainjob"
    assert node["ports"] == [{"containerPort": 29500, "protocol": "TCP"}]
    assert node["env"] == [
        {"name": "TRAIN_JOB", "value": "value"},
        {"name": "PET_NNODES", "value": "100"},
        {"name": "PET_NPROC_PER_NODE", "value": "1"},
        {"name": "PET_NODE_RANK", "valueFrom": FIELD_REF},
        {"name": "PET_MASTER_ADDR", "value": "alpha-node-0-0.alpha"},
        {"name": "PET_MASTER_PORT", "value": "29500"},
    ]


@pytest.mark.parametrize(
    ("case", "requests", "expected"),
    [
        ("nproc_per_node=auto with CPU limit", {"cpu": "4"}, "4"),
        ("nproc_per_node=auto with no CPU resources", None, "1"),
        ("nproc_per_node=auto with low CPU limit", {"cpu": "2"}, "2"),
        ("nproc_per_node=auto with millicore CPU limit", {"cpu": "2.5"}, "3"),
        ("nproc_per_node=auto with fractional CPU limit", {"cpu": "0.7"}, "1"),
        (
            "nproc_per_node=auto with GPU request should remain auto",
            {"example.com/gpu": "2"},
            "auto",
        ),
    ],
)
def test_g3_auto_procs_per_node(case: str, requests: dict[str, Any] | None, expected: str) -> None:
    rt = runtime(
        "torch", [job("node", "trainer", container("node", image="img"))], ml_policy={"torch": {}}
    )
    trainer: dict[str, Any] = (
        {} if requests is None else {"resourcesPerNode": {"requests": requests}}
    )
    jobset = applied(run(trainjob("test-job", "torch", trainer=trainer), rt), "JobSet")
    node = main_container(jobset, "node")
    env = env_by_name(node)
    assert env["PET_NPROC_PER_NODE"] == expected, case
    assert env["PET_NNODES"] == "1"
    assert env["PET_MASTER_ADDR"] == "test-job-node-0-0.test-job"
    assert env["PET_MASTER_PORT"] == "29500"
    assert [p["containerPort"] for p in node["ports"]] == [29500]
    assert replicated(jobset, "node")["template"]["spec"]["parallelism"] == 1


def test_millicores_round_up_to_one_process() -> None:
    rt = runtime(
        "torch", [job("node", "trainer", container("node", image="img"))], ml_policy={"torch": {}}
    )
    tj = trainjob("test-job", "torch", trainer={"resourcesPerNode": {"requests": {"cpu": "500m"}}})
    assert (
        env_by_name(main_container(applied(run(tj, rt), "JobSet"), "node"))["PET_NPROC_PER_NODE"]
        == "1"
    )


def test_without_trainer_the_node_container_gets_no_pet_env_or_port() -> None:
    rt = runtime(
        "torch", [job("node", "trainer", container("node", image="img"))], ml_policy={"torch": {}}
    )
    node = main_container(applied(run(trainjob("test-job", "torch"), rt), "JobSet"), "node")
    assert "env" not in node
    assert "ports" not in node
