"""The shipped runtimes and the public ConfigMap (spec section 4): each runtime passes the
runtime validation (CEL and webhook rules) and its CRD's schema, and has the shape the spec
lists; expected values are the spec's."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from trainop.api.trainer import crds
from trainop.api.trainer.validation import runtime_errors
from trainop.cli import manifests as manifests_cli

ROOT = Path(__file__).resolve().parents[4]
OVERLAY = ROOT / "manifests/trainer/overlays/runtimes"
ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"
TORCH_IMAGE = "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime"
TORCHTUNE = ("torchtune-llama3.2-1b", "torchtune-llama3.2-3b", "torchtune-qwen2.5-1.5b")
NAMES = (
    "torch-distributed",
    "deepspeed-distributed",
    "mlx-distributed",
    "jax-distributed",
    "xgboost-distributed",
    *TORCHTUNE,
)


def _documents() -> list[dict[str, Any]]:
    found = []
    for path in sorted(OVERLAY.glob("*.yaml")):
        if path.name != "kustomization.yaml":
            found += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return found


RUNTIMES = {d["metadata"]["name"]: d for d in _documents() if d["kind"] == "ClusterTrainingRuntime"}


def _jobs(name: str) -> list[dict[str, Any]]:
    jobs: list[dict[str, Any]] = RUNTIMES[name]["spec"]["template"]["spec"]["replicatedJobs"]
    return jobs


def _container(job: dict[str, Any], name: str = "node") -> dict[str, Any]:
    pod = job["template"]["spec"]["template"]["spec"]
    return next(c for c in pod["containers"] if c["name"] == name)


def test_the_shipped_runtimes_are_all_there() -> None:
    assert sorted(RUNTIMES) == sorted(NAMES)


def test_kustomization_lists_every_file() -> None:
    listed = yaml.safe_load((OVERLAY / "kustomization.yaml").read_text())["resources"]
    files = sorted(p.name for p in OVERLAY.glob("*.yaml") if p.name != "kustomization.yaml")
    assert sorted(listed) == files


@pytest.mark.parametrize("name", NAMES)
def test_runtime_passes_validation_with_and_without_the_webhook(name: str) -> None:
    obj = RUNTIMES[name]
    assert obj["metadata"]["labels"]["trainer.kubeflow.org/webhook-validation"] == "disabled"
    assert runtime_errors("ClusterTrainingRuntime", obj) == ([], [])
    checked = copy.deepcopy(obj)
    del checked["metadata"]["labels"]["trainer.kubeflow.org/webhook-validation"]
    assert runtime_errors("ClusterTrainingRuntime", checked) == ([], [])


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    crd = crds.build_crd(
        crds.CLUSTER_TRAINING_RUNTIME, definitions=manifests_cli.load_definitions()
    )
    result: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return result


@pytest.mark.parametrize("name", NAMES)
def test_runtime_matches_its_crd_schema(name: str, schema: dict[str, Any]) -> None:
    jsonschema.Draft202012Validator(schema).validate(RUNTIMES[name])


@pytest.mark.parametrize(
    ("name", "framework", "policy", "image"),
    [
        ("torch-distributed", "torch", {"numNodes": 1, "torch": {}}, TORCH_IMAGE),
        ("jax-distributed", "jax", {"numNodes": 1, "jax": {}}, "nvcr.io/nvidia/jax:25.10-py3"),
        (
            "xgboost-distributed",
            "xgboost",
            {"numNodes": 1, "xgboost": {}},
            "ghcr.io/kubeflow/trainer/xgboost-runtime:v2.3.0",
        ),
    ],
)
def test_single_job_runtimes(name: str, framework: str, policy: dict[str, Any], image: str) -> None:
    runtime = RUNTIMES[name]
    assert runtime["metadata"]["labels"]["trainer.kubeflow.org/framework"] == framework
    assert runtime["spec"]["mlPolicy"] == policy
    (job,) = _jobs(name)
    assert job["name"] == "node"
    assert job["template"]["metadata"]["labels"][ANCESTOR] == "trainer"
    assert _container(job)["image"] == image
    assert "command" not in _container(job)


@pytest.mark.parametrize("framework", ["deepspeed", "mlx"])
def test_mpi_runtimes(framework: str) -> None:
    name = f"{framework}-distributed"
    runtime = RUNTIMES[name]
    assert runtime["metadata"]["labels"]["trainer.kubeflow.org/framework"] == framework
    assert runtime["spec"]["mlPolicy"] == {
        "numNodes": 1,
        "mpi": {
            "numProcPerNode": 1,
            "mpiImplementation": "OpenMPI",
            "sshAuthMountPath": "/home/mpiuser/.ssh",
            "runLauncherAsNode": True,
        },
    }
    template = runtime["spec"]["template"]["spec"]
    assert template["network"] == {"publishNotReadyAddresses": True}
    assert template["successPolicy"] == {"operator": "All", "targetReplicatedJobs": ["launcher"]}
    node, launcher = _jobs(name)
    assert (node["name"], launcher["name"]) == ("node", "launcher")
    assert ANCESTOR not in node["template"].get("metadata", {}).get("labels", {})
    assert launcher["template"]["metadata"]["labels"][ANCESTOR] == "trainer"
    assert launcher["dependsOn"] == [{"name": "node", "status": "Ready"}]
    sshd = _container(node)
    assert sshd["command"] == ["/usr/sbin/sshd"]
    assert sshd["args"] == ["-De", "-f", "/home/mpiuser/.sshd_config"]
    assert sshd["readinessProbe"] == {"tcpSocket": {"port": 2222}, "initialDelaySeconds": 5}
    for job in (node, launcher):
        assert job["template"]["spec"]["template"]["spec"]["securityContext"] == {"fsGroup": 1000}
        container = _container(job)
        assert container["securityContext"] == {"runAsUser": 1000}
        assert container["image"] == f"ghcr.io/kubeflow/trainer/{framework}-runtime:v2.3.0"
    assert "command" not in _container(launcher)


@pytest.mark.parametrize(
    ("name", "model", "config", "tokenizer"),
    [
        (
            "torchtune-llama3.2-1b",
            "hf://meta-llama/Llama-3.2-1B-Instruct",
            "llama3_2/1B_full",
            ["tokenizer.path=/workspace/model/original/tokenizer.model"],
        ),
        (
            "torchtune-llama3.2-3b",
            "hf://meta-llama/Llama-3.2-3B-Instruct",
            "llama3_2/3B_full",
            ["tokenizer.path=/workspace/model/original/tokenizer.model"],
        ),
        (
            "torchtune-qwen2.5-1.5b",
            "hf://Qwen/Qwen2.5-1.5B-Instruct",
            "qwen2_5/1.5B_full",
            [
                "tokenizer.path=/workspace/model/vocab.json",
                "tokenizer.merges_file=/workspace/model/merges.txt",
            ],
        ),
    ],
)
def test_torchtune_runtimes(name: str, model: str, config: str, tokenizer: list[str]) -> None:
    runtime = RUNTIMES[name]
    assert runtime["metadata"]["labels"]["trainer.kubeflow.org/framework"] == "torchtune"
    assert runtime["spec"]["mlPolicy"] == {"numNodes": 1, "torch": {}}
    dataset, weights, node = _jobs(name)
    assert [j["name"] for j in (dataset, weights, node)] == [
        "dataset-initializer",
        "model-initializer",
        "node",
    ]
    for job, ancestor in ((dataset, "dataset-initializer"), (weights, "model-initializer")):
        assert job["template"]["metadata"]["labels"][ANCESTOR] == ancestor
        container = _container(job, ancestor)
        assert container["image"] == f"ghcr.io/kubeflow/trainer/{ancestor}:v2.3.0"
        assert container["volumeMounts"] == [{"name": "initializer", "mountPath": "/workspace"}]
    assert _container(dataset, "dataset-initializer")["env"] == [
        {"name": "STORAGE_URI", "value": "hf://tatsu-lab/alpaca"}
    ]
    assert _container(weights, "model-initializer")["env"] == [
        {"name": "STORAGE_URI", "value": model}
    ]
    assert node["dependsOn"] == [
        {"name": "dataset-initializer", "status": "Complete"},
        {"name": "model-initializer", "status": "Complete"},
    ]
    trainer = _container(node)
    assert trainer["image"] == "ghcr.io/kubeflow/trainer/torchtune-trainer:v2.3.0"
    assert trainer["resources"] == {"limits": {"nvidia.com/gpu": 2}}
    assert trainer["command"] == [
        "tune",
        "run",
        "--rdzv_endpoint=localhost:29500",
        "full_finetune_distributed",
        "--config",
        config,
        "dataset=torchtune.datasets.instruct_dataset",
        "dataset.source=parquet",
        "dataset.data_dir=/workspace/dataset/data",
        "output_dir=/workspace/output",
        *tokenizer,
        "checkpointer.checkpoint_dir=/workspace/model",
    ]
    (policy,) = runtime["spec"]["template"]["spec"]["volumeClaimPolicies"]
    (claim,) = policy["templates"]
    assert claim["metadata"] == {"name": "initializer"}
    assert claim["spec"] == {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "20Gi"}},
    }


@pytest.mark.parametrize("name", NAMES)
def test_the_sdk_can_read_each_runtime(name: str) -> None:
    """SDK 0.5 parsing (spec 5.2): mlPolicy, the framework label, and a trainer container:
    the first ``node`` container among the jobs whose Job template has the ancestor label."""
    runtime = RUNTIMES[name]
    assert runtime["spec"]["mlPolicy"]
    assert runtime["metadata"]["labels"]["trainer.kubeflow.org/framework"]
    labelled = [
        j for j in _jobs(name) if ANCESTOR in j["template"].get("metadata", {}).get("labels", {})
    ]
    pods = [j["template"]["spec"]["template"]["spec"] for j in labelled]
    nodes = [c for pod in pods for c in pod["containers"] if c["name"] == "node"]
    assert nodes
    assert nodes[0]["image"]


def test_public_configmap() -> None:
    by_kind = {d["kind"]: d for d in _documents() if d["kind"] != "ClusterTrainingRuntime"}
    assert set(by_kind) == {"Namespace", "ConfigMap", "Role", "RoleBinding"}
    configmap = by_kind["ConfigMap"]
    assert configmap["metadata"] == {
        "name": "kubeflow-trainer-public",
        "namespace": "kubeflow-system",
    }
    assert configmap["data"] == {"kubeflow_trainer_version": "v2.3.0"}
    (rule,) = by_kind["Role"]["rules"]
    assert rule == {
        "apiGroups": [""],
        "resources": ["configmaps"],
        "resourceNames": ["kubeflow-trainer-public"],
        "verbs": ["get", "list", "watch"],
    }
    binding = by_kind["RoleBinding"]
    assert binding["roleRef"]["name"] == "kubeflow-trainer-public"
    assert binding["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:authenticated"}
    ]
