"""Constants with the names and values of upstream ``kubeflow.training.constants``.

Per-kind tables (``JOB_PARAMETERS``, ``*_KIND``, ``*_PLURAL``, ``*_CONTAINER``) are derived
from ``trainop.api.kinds`` so they cannot drift from the API layer; only the base images, which
the API layer has no use for, are stated here. Upstream 1.9's ``JOB_PARAMETERS`` has no MXJob
entry; trainop still serves MXJob, so it is listed too, and the DGL kind, which upstream never had.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from trainop.api import kinds
from trainop.engine import naming

DEFAULT_TIMEOUT = 120
DEFAULT_PIP_INDEX_URL = "https://pypi.org/simple"
DEFAULT_NAMESPACE = "default"
ISTIO_SIDECAR_INJECTION = "sidecar.istio.io/inject"

GROUP = "kubeflow.org"
VERSION = "v1"
API_VERSION = f"{GROUP}/{VERSION}"
POD_KIND = "Pod"
POD_PHASE_PENDING = "Pending"

JOB_CONDITION_CREATED = "Created"
JOB_CONDITION_RUNNING = "Running"
JOB_CONDITION_RESTARTING = "Restarting"
JOB_CONDITION_SUCCEEDED = "Succeeded"
JOB_CONDITION_FAILED = "Failed"
JOB_CONDITIONS = frozenset(
    {
        JOB_CONDITION_CREATED,
        JOB_CONDITION_RUNNING,
        JOB_CONDITION_RESTARTING,
        JOB_CONDITION_SUCCEEDED,
        JOB_CONDITION_FAILED,
    }
)
CONDITION_STATUS_TRUE = "True"

JOB_NAME_LABEL = naming.JOB_NAME_LABEL
JOB_ROLE_LABEL = naming.JOB_ROLE_LABEL
JOB_ROLE_MASTER = "master"
REPLICA_TYPE_LABEL = naming.REPLICA_TYPE_LABEL
REPLICA_INDEX_LABEL = naming.REPLICA_INDEX_LABEL

REPLICA_TYPE_CHIEF = "Chief"
REPLICA_TYPE_PS = "PS"
REPLICA_TYPE_MASTER = "Master"
REPLICA_TYPE_WORKER = "Worker"
REPLICA_TYPE_SCHEDULER = "Scheduler"
REPLICA_TYPE_SERVER = "Server"
REPLICA_TYPE_LAUNCHER = "Launcher"

ENTRYPOINT_TORCH = "torchrun"
ENTRYPOINT_PYTHON = "python -u"
DEFAULT_COMMAND = ("bash", "-c")

TFJOB_KIND = kinds.TFJOB.kind
TFJOB_PLURAL = kinds.TFJOB.plural
TFJOB_CONTAINER = kinds.TFJOB.default_container
TFJOB_REPLICA_TYPES = ("ps", "chief", "worker")
TFJOB_BASE_IMAGE = "docker.io/tensorflow/tensorflow:2.9.1"
TFJOB_BASE_IMAGE_GPU = "docker.io/tensorflow/tensorflow:2.9.1-gpu"

PYTORCHJOB_KIND = kinds.PYTORCHJOB.kind
PYTORCHJOB_PLURAL = kinds.PYTORCHJOB.plural
PYTORCHJOB_CONTAINER = kinds.PYTORCHJOB.default_container
PYTORCHJOB_REPLICA_TYPES = ("master", "worker")
PYTORCHJOB_BASE_IMAGE = "docker.io/pytorch/pytorch:2.1.2-cuda11.8-cudnn8-runtime"

XGBOOSTJOB_KIND = kinds.XGBOOSTJOB.kind
XGBOOSTJOB_PLURAL = kinds.XGBOOSTJOB.plural
XGBOOSTJOB_CONTAINER = kinds.XGBOOSTJOB.default_container
XGBOOSTJOB_REPLICA_TYPES = ("master", "worker")

MPIJOB_KIND = kinds.MPIJOB.kind
MPIJOB_PLURAL = kinds.MPIJOB.plural
MPIJOB_CONTAINER = kinds.MPIJOB.default_container
MPIJOB_REPLICA_TYPES = ("launcher", "worker")

PADDLEJOB_KIND = kinds.PADDLEJOB.kind
PADDLEJOB_PLURAL = kinds.PADDLEJOB.plural
PADDLEJOB_CONTAINER = kinds.PADDLEJOB.default_container
PADDLEJOB_REPLICA_TYPES = ("master", "worker")
PADDLEJOB_BASE_IMAGE = "docker.io/paddlepaddle/paddle:2.4.0rc0-gpu-cuda11.2-cudnn8.1-trt8.0"

JAXJOB_KIND = kinds.JAXJOB.kind
JAXJOB_PLURAL = kinds.JAXJOB.plural
JAXJOB_CONTAINER = kinds.JAXJOB.default_container
JAXJOB_REPLICA_TYPES = "worker"  # a plain string upstream, not a tuple
JAXJOB_BASE_IMAGE = "docker.io/kubeflow/jaxjob-dist-spmd-mnist:latest"

MXJOB_KIND = kinds.MXJOB.kind
MXJOB_PLURAL = kinds.MXJOB.plural
MXJOB_CONTAINER = kinds.MXJOB.default_container

# trainop's own (upstream never had a DGL kind): the Qihoo DGL operator's job in kubeflow.org/v1.
DGLJOB_KIND = kinds.DGLJOB.kind
DGLJOB_PLURAL = kinds.DGLJOB.plural
DGLJOB_CONTAINER = kinds.DGLJOB.default_container
DGLJOB_REPLICA_TYPES = ("launcher", "worker", "partitioner")

# Upstream writes "TODO" for XGBoost and MPI and the literal string "JAXJOB_BASE_IMAGE" for
# JAX; trainop uses the real JAX image and keeps "TODO" where upstream has no image.
_BASE_IMAGES = {
    TFJOB_KIND: TFJOB_BASE_IMAGE,
    PYTORCHJOB_KIND: PYTORCHJOB_BASE_IMAGE,
    PADDLEJOB_KIND: PADDLEJOB_BASE_IMAGE,
    JAXJOB_KIND: JAXJOB_BASE_IMAGE,
}

JOB_PARAMETERS: MappingProxyType[str, dict[str, Any]] = MappingProxyType(
    {
        info.kind: {
            "model": info.model,
            "plural": info.plural,
            "container": info.default_container,
            "base_image": _BASE_IMAGES.get(info.kind, "TODO"),
        }
        for info in kinds.KINDS
    }
)

# Every lower-case replica type any kind has: what ``replica_type`` arguments may name.
REPLICA_TYPES = frozenset(rt.lower() for info in kinds.KINDS for rt in info.replica_types)
