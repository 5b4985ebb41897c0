"""Every plugin Validate message of the Trainer v2 spec §3 (upstream's wording), through
``validate_trainjob`` as the webhook calls it."""

from __future__ import annotations

from typing import Any

import pytest
from tests.unit.engine.trainer.builders import container, job, runtime, trainjob, wrapper_jobs

from trainop.engine.trainer.validate import validate_trainjob


def _details(tj: dict[str, Any], rt: dict[str, Any], **extra: Any) -> list[tuple[str, str, str]]:
    errors, _ = validate_trainjob(tj, rt, True, **extra)
    return [(e.path, e.type, e.detail) for e in errors]


def _node_only(**policy: Any) -> dict[str, Any]:
    return runtime("rt", [job("node", "trainer", container("node", image="img"))], ml_policy=policy)


# --- JobSet -------------------------------------------------------------------------------


def test_dataset_initializer_needs_its_job() -> None:
    tj = trainjob("j", "rt", initializer={"dataset": {"storageUri": "hf://x"}})
    assert _details(tj, _node_only()) == [
        (
            "spec.runtimeRef",
            "Invalid",
            "must have dataset-initializer job when trainJob is configured with "
            "input datasetConfig",
        )
    ]


def test_model_initializer_needs_its_container() -> None:
    jobs = [job("model-initializer", "model-initializer", container("other", image="i"))]
    tj = trainjob("j", "rt", initializer={"model": {"storageUri": "hf://x"}})
    assert _details(tj, runtime("rt", jobs)) == [
        (
            "spec.runtimeRef",
            "Invalid",
            "must have container with name - model-initializer in the model-initializer job",
        )
    ]


def test_dataset_initializer_needs_the_initializer_mount() -> None:
    jobs = [
        job(
            "dataset-initializer",
            "dataset-initializer",
            container("dataset-initializer", image="i"),
        )
    ]
    tj = trainjob("j", "rt", initializer={"dataset": {}})
    assert _details(tj, runtime("rt", jobs)) == [
        (
            "spec.runtimeRef",
            "Invalid",
            "must have volumeMount with name - initializer in container dataset-initializer of the "
            "dataset-initializer job",
        )
    ]


def _patch(job_name: str, **pod: Any) -> dict[str, Any]:
    rj = {"name": job_name, "template": {"spec": {"template": {"spec": pod}}}}
    return {
        "manager": "example.com/m",
        "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [rj]}}},
    }


@pytest.mark.parametrize(
    ("patch", "detail"),
    [
        (
            _patch("absent"),
            "must not have replicated job that doesn't exist in the runtime job template",
        ),
        (
            _patch("node", containers=[{"name": "x"}]),
            "must not have container that doesn't exist in the runtime job node",
        ),
        (
            _patch("node", initContainers=[{"name": "x"}]),
            "must not have initContainer that doesn't exist in the runtime job node",
        ),
        (
            _patch("node", containers=[{"name": "node", "env": [{"name": "A", "value": "b"}]}]),
            "must not have envs for the dataset-initializer, model-initializer, node containers",
        ),
    ],
)
def test_runtime_patch_targets(patch: dict[str, Any], detail: str) -> None:
    tj = trainjob("j", "rt", runtimePatches=[patch])
    assert _details(tj, runtime("rt", wrapper_jobs())) == [
        ("spec.runtimePatches", "Invalid", detail)
    ]


def test_runtime_patch_may_set_env_of_other_containers() -> None:
    node_job = job("node", "trainer", container("node", image="i"), container("sidecar", image="i"))
    patch = _patch("node", containers=[{"name": "sidecar", "env": [{"name": "A", "value": "b"}]}])
    assert _details(trainjob("j", "rt", runtimePatches=[patch]), runtime("rt", [node_job])) == []


# --- Torch and TorchTune --------------------------------------------------------------------


def test_env_injection_target_must_exist() -> None:
    rt = _node_only(
        torch={"envInjection": {"targets": [{"jobName": "node", "containerNames": ["sidecar"]}]}}
    )
    assert _details(trainjob("j", "rt"), rt) == [
        (
            "spec.runtimeRef",
            "Invalid",
            'envInjection target podSet "node" container "sidecar" not found in runtime template',
        )
    ]


def _tune(name: str, *args: str, **trainer: Any) -> dict[str, Any]:
    return trainjob("j", name, trainer={"command": ["tune", "run"], "args": list(args), **trainer})


def _tune_runtime(name: str) -> dict[str, Any]:
    return runtime(
        name, [job("node", "trainer", container("node", image="i"))], ml_policy={"torch": {}}
    )


def test_torchtune_unsupported_model() -> None:
    assert _details(_tune("torchtune-mistral-7b"), _tune_runtime("torchtune-mistral-7b")) == [
        (
            "spec.runtimeRef.name",
            "Invalid",
            "must have a supported pretrained model, invalid model configured: mistral/7B",
        )
    ]


def test_torchtune_multi_node_only_for_70b() -> None:
    name = "torchtune-llama3.2-1b"
    assert _details(_tune(name, numNodes=2), _tune_runtime(name)) == [
        ("spec.trainer.numNodes", "Invalid", "must be 1 for llama3_2/1B model")
    ]


def test_torchtune_qlora_not_for_qwen() -> None:
    name = "torchtune-qwen2.5-1.5b"
    tj = _tune(name, "model.quantize_base=True", numProcPerNode=1)
    assert _details(tj, _tune_runtime(name)) == [
        ("spec.runtimeRef.name", "Invalid", "QLoRA is not supported for qwen2_5/1.5B model")
    ]


def test_torchtune_qlora_on_llama_needs_a_single_device() -> None:
    name = "torchtune-llama3.2-3b"
    tj = _tune(name, "model.quantize_base=true", numProcPerNode=4)
    assert _details(tj, _tune_runtime(name)) == [
        (
            "spec.trainer.numProcPerNode",
            "Invalid",
            "must be auto or 1 for llama3_2/3B model when using QLoRA",
        ),
        (
            "spec.trainer.resourcesPerNode",
            "Invalid",
            "must have gpu resource with value 1 for llama3_2/3B model when using QLoRA",
        ),
    ]


def test_torchtune_lora_is_single_node() -> None:
    name = "torchtune-llama3.3-70b"
    tj = _tune(name, "model.lora_attn_modules=[q_proj]", numNodes=2)
    assert _details(tj, _tune_runtime(name)) == [
        (
            "spec.trainer.numNodes",
            "Invalid",
            "LoRA fine-tuning is not supported for multi-node training in TorchTune",
        )
    ]


def test_torchtune_runtime_managed_args() -> None:
    name = "torchtune-llama3.2-1b"
    tj = _tune(name, "epochs=1", "output_dir=/tmp")
    assert _details(tj, _tune_runtime(name)) == [
        (
            "spec.trainer.args[1]",
            "Invalid",
            'must not set immutable config "output_dir" in trainer args; it is '
            "managed by the runtime",
        )
    ]


# --- MPI, XGBoost ---------------------------------------------------------------------------


def test_mpi_reserved_env() -> None:
    rt = _node_only(mpi={"numProcPerNode": 1})
    env = [
        {"name": "OMPI_MCA_plm_rsh_args", "value": "x"},
        {"name": "OMPI_MCA_orte_keep_fqdn_hostnames", "value": "y"},
    ]
    assert _details(trainjob("j", "rt", trainer={"env": env}), rt) == [
        (
            "spec.trainer.env",
            "Invalid",
            "must not have reserved envs, invalid envs configured: "
            "[OMPI_MCA_orte_keep_fqdn_hostnames OMPI_MCA_plm_rsh_args]",
        )
    ]


def test_mpi_run_launcher_as_node_needs_both_jobs_for_several_nodes() -> None:
    rt = _node_only(mpi={"runLauncherAsNode": True})
    assert _details(trainjob("j", "rt", trainer={"numNodes": 2}), rt) == [
        (
            "spec.trainer.numNodes",
            "Invalid",
            "must have 1 when MPI trainingRuntime with enabled runLauncherAsNode "
            "does not have either "
            "launcher and node",
        )
    ]


def test_xgboost_reserved_env_is_forbidden_per_entry() -> None:
    env = [{"name": "A", "value": "1"}, {"name": "DMLC_TASK_ID", "value": "2"}]
    assert _details(trainjob("j", "rt", trainer={"env": env}), _node_only(xgboost={})) == [
        ("spec.trainer.env[1]", "Forbidden", "DMLC_TASK_ID is reserved for the XGBoost runtime")
    ]


# --- Volcano --------------------------------------------------------------------------------


def _volcano(*classes: str, queue: str | None = None) -> dict[str, Any]:
    jobs = [
        job(f"j{i}", None, container("c", image="i"), pod={"priorityClassName": c})
        for i, c in enumerate(classes)
    ]
    rt = runtime("rt", jobs, pod_group_policy={"volcano": {}})
    if queue is not None:
        rt["spec"]["template"]["metadata"] = {
            "annotations": {"scheduling.volcano.sh/queue-name": queue}
        }
    return rt


def test_volcano_empty_queue() -> None:
    assert _details(trainjob("j", "rt"), _volcano(queue="")) == [
        (
            "spec.annotations[scheduling.volcano.sh/queue-name]",
            "Invalid",
            "Volcano queue name must not be empty",
        )
    ]


def test_volcano_priority_class_must_exist_until_a_system_class() -> None:
    rt = _volcano("high", "system-node-critical", "missing-too")
    assert _details(trainjob("j", "rt"), rt, priority_classes={"low"}) == [
        (
            "spec.templateSpec.priorityClassName",
            "Invalid",
            'PriorityClass "high" doesn\'t exist: '
            'priorityclasses.scheduling.k8s.io "high" not found',
        )
    ]
    assert _details(trainjob("j", "rt"), rt) == []  # classes unknown: not checked
