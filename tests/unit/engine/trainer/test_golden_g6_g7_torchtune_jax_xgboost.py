"""Golden cases G6 (TorchTune command rewrite) and G7 (JAX, XGBoost) of the Trainer v2 spec §8;
expected values typed from the spec."""

from __future__ import annotations

from typing import Any

from tests.unit.engine.trainer.builders import (
    FIELD_REF,
    applied,
    container,
    env_by_name,
    job,
    main_container,
    replicated,
    run,
    runtime,
    trainjob,
    wrapper_jobs,
)

RUNTIME_COMMAND = [
    "tune",
    "run",
    "full_finetune_distributed",
    "--config",
    "llama3_3/70B_full_multinode",
    "output_dir=/workspace/model/llama3_3/70B",
    "tokenizer.path=/workspace/model/original/tokenizer.model",
    "checkpointer.checkpoint_dir=/workspace/model",
]
ARGS = [
    "dtype=fp16",
    "batch_size=32",
    "epochs=10",
    "loss=torchtune.modules.loss.CEWithChunkedOutputLoss",
]


def test_g6_torchtune_command_rewrite() -> None:
    jobs = wrapper_jobs(resources={"requests": {"cpu": "1"}})
    node_job = jobs[2]
    node_job["dependsOn"] = [
        {"name": "dataset-initializer", "status": "Complete"},
        {"name": "model-initializer", "status": "Complete"},
    ]
    node = node_job["template"]["spec"]["template"]["spec"]["containers"][0]
    node["command"], node["args"] = list(RUNTIME_COMMAND), ["runtime"]
    rt = runtime("torchtune-llama3.3-70b", jobs, ml_policy={"numNodes": 100, "torch": {}})
    tj = trainjob(
        "test-job",
        "torchtune-llama3.3-70b",
        trainer={
            "image": "test:trainjob",
            "command": ["tune", "run"],
            "args": list(ARGS),
            "numNodes": 30,
            "numProcPerNode": 3,
            "resourcesPerNode": {"requests": {"cpu": "1"}},
        },
    )
    jobset = applied(run(tj, rt), "JobSet")
    assert replicated(jobset, "node")["template"]["spec"]["parallelism"] == 30
    got = main_container(jobset, "node")
    assert got["command"] == [
        "tune",
        "run",
        "--rdzv_endpoint=test-job-node-0-0.test-job:29500",
        "full_finetune_distributed",
        "--config",
        "llama3_3/70B_full_multinode",
        "output_dir=/workspace/model/llama3_3/70B",
        "tokenizer.path=/workspace/model/original/tokenizer.model",
        "checkpointer.checkpoint_dir=/workspace/model",
    ]
    assert got["args"] == ARGS
    assert env_by_name(got) == {
        "PET_NNODES": "30",
        "PET_NPROC_PER_NODE": "3",
        "PET_NODE_RANK": FIELD_REF,
    }
    assert [p["containerPort"] for p in got["ports"]] == [29500]


def _single_node(framework: str) -> dict[str, Any]:
    return runtime(
        "rt",
        [job("node", "trainer", container("node", image="test:runtime"))],
        ml_policy={"numNodes": 1, framework: {}},
    )


def test_g7_jax() -> None:
    tj = trainjob("alpha", "rt", trainer={"numNodes": 2, "image": "test:trainjob"})
    jobset = applied(run(tj, _single_node("jax")), "JobSet")
    assert replicated(jobset, "node")["template"]["spec"]["parallelism"] == 2
    node = main_container(jobset, "node")
    assert env_by_name(node) == {
        "JAX_NUM_PROCESSES": "2",
        "JAX_PROCESS_ID": FIELD_REF,
        "JAX_COORDINATOR_ADDRESS": "alpha-node-0-0.alpha:29500",
    }
    assert node["ports"] == [{"containerPort": 29500, "protocol": "TCP"}]


def test_g7_xgboost_with_gpus() -> None:
    requests = {"cpu": "8", "memory": "32Gi", "example.com/gpu": "4"}
    tj = trainjob(
        "gpu-job", "rt", trainer={"numNodes": 2, "resourcesPerNode": {"requests": requests}}
    )
    jobset = applied(run(tj, _single_node("xgboost")), "JobSet")
    assert replicated(jobset, "node")["template"]["spec"]["parallelism"] == 2
    node = main_container(jobset, "node")
    assert env_by_name(node) == {
        "DMLC_TRACKER_URI": "gpu-job-node-0-0.gpu-job",
        "DMLC_TRACKER_PORT": "29500",
        "DMLC_TASK_ID": FIELD_REF,
        "DMLC_NUM_WORKER": "8",
    }
    assert [p["containerPort"] for p in node["ports"]] == [29500]


def test_g7_xgboost_on_cpus_counts_one_worker_per_node() -> None:
    tj = trainjob("cpu-job", "rt", trainer={"numNodes": 3, "env": [{"name": "A", "value": "b"}]})
    node = main_container(applied(run(tj, _single_node("xgboost")), "JobSet"), "node")
    assert env_by_name(node)["DMLC_NUM_WORKER"] == "3"
    assert env_by_name(node)["A"] == "b"
