"""The Kubeflow Trainer v2 kinds (``trainer.kubeflow.org/v1alpha1``, v2.3.0) as pydantic models.

``TrainJob`` says what to train (image, command, node count, data and model to fetch) and which
runtime to train it on (``runtimeRef``); ``TrainingRuntime`` (namespaced) and
``ClusterTrainingRuntime`` (cluster-wide) are reusable blueprints: an ML policy (torch, MPI,
JAX, XGBoost, Flux), an optional gang-scheduling policy, and a JobSet template. Everything
Kubernetes defines (env, resources, volumes, affinity, pod and Job templates) stays a plain
mapping typed by its official definition (``fields.K8S_DEFINITION``), as in the v1 kinds.

Limits, defaults and CEL rules are declared on the fields (``Field(max_length=...)``,
``json_schema_extra``), so the generated CRDs carry them; ``trainer.validation`` enforces the
same rules on any mapping with upstream's messages. ``None`` means "absent on the wire".
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field

from trainop.api.fields import K8S_DEFINITION, Bool, Int32, Mapping, Str, Time, WireModel
from trainop.api.trainer import constants as c
from trainop.api.trainer.markers import (
    ATOMIC,
    FIELD_IMMUTABLE,
    IMMUTABLE,
    Name,
    NonNegative,
    PositiveInt64,
    cel,
    env_field,
    fixed,
    k8s,
    list_map,
)
from trainop.api.trainer.patches import (
    ContainerPatch,
    JobSetSpecPatch,
    JobSetTemplatePatch,
    JobSpecPatch,
    JobTemplatePatch,
    PodSpecPatch,
    PodTemplatePatch,
    ReplicatedJobPatch,
    RuntimePatch,
    TrainingRuntimeSpecPatch,
)
from trainop.api.trainer.runtime import (
    FLUX_NPROC,
    MPI_NPROC,
    NO_NODE_CONTAINER,
    ONE_POLICY,
    ClusterTrainingRuntime,
    CoschedulingPodGroupPolicySource,
    EmptyPolicy,
    EnvInjection,
    EnvInjectionTarget,
    FluxMLPolicySource,
    JobSetTemplateSpec,
    MLPolicy,
    MPIMLPolicySource,
    NetworkTopology,
    PodGroupPolicy,
    TorchMLPolicySource,
    TrainingRuntime,
    TrainingRuntimeSpec,
    VolcanoPodGroupPolicySource,
)
from trainop.api.types import ObjectMeta

NAME_FORMAT = "metadata.name must match RFC 1035 DNS label format"
NAME_LENGTH = "metadata.name must be no more than 63 characters"
STORAGE_URI = "storageUri may be empty, or it must be a valid URI (scheme://...)"
STORAGE_URI_PATTERN = r"^[A-Za-z][A-Za-z0-9+.-]*://.+$"
MANAGED_BY = (
    "ManagedBy must be trainer.kubeflow.org/trainjob-controller or kueue.x-k8s.io/multikueue if set"
)
TRAINER_NPROC = "numProcPerNode must be greater than or equal to 1"
LAST_UPDATED = "lastUpdatedTime is required when trainerStatus is present"

__all__ = [
    "FIELD_IMMUTABLE",
    "FLUX_NPROC",
    "MPI_NPROC",
    "NO_NODE_CONTAINER",
    "ONE_POLICY",
    "ClusterTrainingRuntime",
    "ContainerPatch",
    "CoschedulingPodGroupPolicySource",
    "EmptyPolicy",
    "EnvInjection",
    "EnvInjectionTarget",
    "FluxMLPolicySource",
    "JobSetSpecPatch",
    "JobSetTemplatePatch",
    "JobSetTemplateSpec",
    "JobSpecPatch",
    "JobTemplatePatch",
    "MLPolicy",
    "MPIMLPolicySource",
    "NetworkTopology",
    "PodGroupPolicy",
    "PodSpecPatch",
    "PodTemplatePatch",
    "ReplicatedJobPatch",
    "RuntimePatch",
    "TorchMLPolicySource",
    "TrainingRuntime",
    "TrainingRuntimeSpec",
    "TrainingRuntimeSpecPatch",
    "VolcanoPodGroupPolicySource",
]


class RuntimeRef(WireModel):
    """Which runtime a TrainJob runs on."""

    name: Name = Field(description="Name of the TrainingRuntime or ClusterTrainingRuntime.")
    api_group: Annotated[Str, Field(max_length=253)] | None = Field(
        None, description="API group of the runtime.", json_schema_extra=fixed(c.GROUP)
    )
    kind: Annotated[Str, Field(max_length=253)] | None = Field(
        None,
        description="TrainingRuntime or ClusterTrainingRuntime.",
        json_schema_extra=fixed(c.CLUSTER_TRAINING_RUNTIME),
    )


class InitializerSource(WireModel):
    """Where an initializer fetches a dataset or a model from."""

    storage_uri: Annotated[Str, Field(max_length=2048)] | None = Field(
        None,
        description="Source of the data, e.g. hf://org/name or s3://bucket/key.",
        json_schema_extra=cel(f"self == '' || self.matches('{STORAGE_URI_PATTERN}')", STORAGE_URI),
    )
    env: list[Mapping] | None = env_field()
    secret_ref: Mapping | None = Field(
        None,
        description="Secret whose keys become env (core/v1 LocalObjectReference).",
        json_schema_extra=k8s("LocalObjectReference"),
    )


class Initializer(WireModel):
    """The dataset and model to download before training. Immutable."""

    dataset: InitializerSource | None = Field(None, description="Dataset to fetch.")
    model: InitializerSource | None = Field(None, description="Model to fetch.")


class Trainer(WireModel):
    """Overrides of the runtime's trainer: image, command, nodes, resources. Immutable."""

    image: Annotated[Str, Field(max_length=500)] | None = Field(
        None, description="Image of the trainer's node container."
    )
    command: list[Annotated[Str, Field(max_length=1048576)]] | None = Field(
        None,
        max_length=128,
        description="Entrypoint of the node container.",
        json_schema_extra=ATOMIC,
    )
    args: list[Annotated[Str, Field(max_length=1048576)]] | None = Field(
        None, max_length=128, description="Arguments of the entrypoint.", json_schema_extra=ATOMIC
    )
    env: list[Mapping] | None = env_field()
    num_nodes: NonNegative | None = Field(
        None, description="Number of training nodes (pods of the trainer job)."
    )
    resources_per_node: Mapping | None = Field(
        None,
        description="Resources of each node's container (core/v1 ResourceRequirements).",
        json_schema_extra=k8s("ResourceRequirements"),
    )
    num_proc_per_node: Int32 | None = Field(
        None,
        description="Processes per node; torch treats absence as auto.",
        json_schema_extra=cel("self >= 1", TRAINER_NPROC),
    )


class TrainJobSpec(WireModel):
    """What to train and on which runtime."""

    runtime_ref: RuntimeRef = Field(
        description="The runtime to train on. Immutable.", json_schema_extra=IMMUTABLE
    )
    initializer: Initializer | None = Field(
        None,
        description="Dataset and model to fetch first. Immutable.",
        json_schema_extra=IMMUTABLE,
    )
    trainer: Trainer | None = Field(
        None,
        description="Overrides of the runtime's trainer. Immutable.",
        json_schema_extra=IMMUTABLE,
    )
    runtime_patches: list[RuntimePatch] | None = Field(
        None,
        max_length=16,
        description=(
            "Changes to the runtime for this TrainJob, one entry per manager (user, Kueue, SDK), "
            "applied in order; may change only while the TrainJob is suspended."
        ),
        json_schema_extra=list_map("manager"),
    )
    suspend: Bool | None = Field(
        None,
        description="True stops the training pods until resumed.",
        json_schema_extra=fixed(False),
    )
    active_deadline_seconds: PositiveInt64 | None = Field(
        None,
        description="Seconds after start (or resume) after which the TrainJob fails. Immutable.",
        json_schema_extra=IMMUTABLE,
    )
    managed_by: Annotated[Str, Field(max_length=253)] | None = Field(
        None,
        description=(
            "Controller that reconciles the TrainJob: trainer.kubeflow.org/trainjob-controller or "
            "kueue.x-k8s.io/multikueue. Immutable."
        ),
        json_schema_extra={
            "default": c.MANAGED_BY_TRAINER,
            "x-kubernetes-validations": [
                {"message": MANAGED_BY, "rule": f"self in {list(c.MANAGED_BY_VALUES)!r}"},
                {"message": FIELD_IMMUTABLE, "rule": "self == oldSelf"},
            ],
        },
    )


# ---- TrainJob.status ----------------------------------------------------------------------


class JobStatus(WireModel):
    """Job counts of one replicatedJob, copied from the JobSet."""

    name: Name = Field(description="The replicatedJob.")
    ready: NonNegative = Field(description="Jobs whose pods are ready.")
    succeeded: NonNegative = Field(description="Jobs that succeeded.")
    failed: NonNegative = Field(description="Jobs that failed.")
    active: NonNegative = Field(description="Jobs with running pods.")
    suspended: NonNegative = Field(description="Jobs that are suspended.")


Short = Annotated[Str, Field(min_length=1, max_length=64)]


class Metric(WireModel):
    """One training metric reported by the trainer."""

    name: Short = Field(description="Metric name.")
    value: Short = Field(description="Metric value, as text.")


class TrainerStatus(WireModel):
    """Training progress reported by the trainer (alpha, gate TrainJobStatus)."""

    model_config = ConfigDict(json_schema_extra=cel("has(self.lastUpdatedTime)", LAST_UPDATED))

    progress_percentage: Annotated[Int32, Field(ge=0, le=100)] | None = Field(
        None, description="Percent of training done."
    )
    estimated_remaining_seconds: NonNegative | None = Field(
        None, description="Seconds of training left, as estimated."
    )
    metrics: list[Metric] | None = Field(
        None, max_length=256, description="Latest metrics.", json_schema_extra=ATOMIC
    )
    last_updated_time: Time | None = Field(None, description="When this status was reported.")


class TrainJobStatus(WireModel):
    """Observed state of a TrainJob."""

    model_config = ConfigDict(json_schema_extra={"minProperties": 1})

    conditions: list[Mapping] | None = Field(
        None,
        max_length=8,
        description="Conditions: Suspended, Complete, Failed; the last is the TrainJob's state.",
        json_schema_extra={
            K8S_DEFINITION: "io.k8s.apimachinery.pkg.apis.meta.v1.Condition",
            "x-trainop-list": True,
            **list_map("type"),
        },
    )
    jobs_status: list[JobStatus] | None = Field(
        None,
        max_length=100,
        description="Job counts per replicatedJob.",
        json_schema_extra=list_map("name"),
    )
    trainer_status: TrainerStatus | None = Field(None, description="Progress of the training.")


class TrainJob(WireModel):
    """A training job on a Trainer runtime."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "message": NAME_FORMAT,
                    "rule": "self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",
                },
                {"message": NAME_LENGTH, "rule": "size(self.metadata.name) <= 63"},
            ]
        }
    )

    api_version: Literal["trainer.kubeflow.org/v1alpha1"] = Field(
        description="Always trainer.kubeflow.org/v1alpha1."
    )
    kind: Literal["TrainJob"] = Field(description="Always TrainJob.")
    metadata: ObjectMeta = Field(default_factory=ObjectMeta, description="Standard metadata.")
    spec: TrainJobSpec = Field(description="What to train and on which runtime.")
    status: TrainJobStatus | None = Field(None, description="Observed state.")


MODELS: dict[str, type[WireModel]] = {
    c.TRAINJOB: TrainJob,
    c.TRAINING_RUNTIME: TrainingRuntime,
    c.CLUSTER_TRAINING_RUNTIME: ClusterTrainingRuntime,
}
