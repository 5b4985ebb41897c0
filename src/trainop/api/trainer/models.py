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

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from trainop.api.fields import K8S_DEFINITION, Bool, Int32, Int64, Mapping, Str, Time, WireModel
from trainop.api.k8s_schema import OBJECT_META
from trainop.api.trainer import constants as c
from trainop.api.trainer.jobset import ATOMIC, JobSetSpec, immutable, list_map
from trainop.api.types import ObjectMeta

FIELD_IMMUTABLE = "field is immutable"
NAME_FORMAT = "metadata.name must match RFC 1035 DNS label format"
NAME_LENGTH = "metadata.name must be no more than 63 characters"
STORAGE_URI = "storageUri may be empty, or it must be a valid URI (scheme://...)"
STORAGE_URI_PATTERN = r"^[A-Za-z][A-Za-z0-9+.-]*://.+$"
MANAGED_BY = (
    "ManagedBy must be trainer.kubeflow.org/trainjob-controller or kueue.x-k8s.io/multikueue if set"
)
ONE_POLICY = "Only one of the policy can be configured"
NO_NODE_CONTAINER = (
    "containerNames must not include the main node container because PET_* envs are always "
    "injected into it"
)
FLUX_NPROC = "NumProcPerNode in fluxPolicy must be >= 1"
MPI_NPROC = "NumProcPerNode in mpiPolicy must be >= 1"
TRAINER_NPROC = "numProcPerNode must be greater than or equal to 1"
LAST_UPDATED = "lastUpdatedTime is required when trainerStatus is present"

Name = Annotated[Str, Field(min_length=1, max_length=253)]
NonNegative = Annotated[Int32, Field(ge=0)]


def _cel(rule: str, message: str) -> dict[str, Any]:
    return {"x-kubernetes-validations": [{"message": message, "rule": rule}]}


def _fixed(value: object) -> dict[str, Any]:
    return {"default": value}


def _k8s(definition: str, *, many: bool = False) -> dict[str, Any]:
    extra: dict[str, Any] = {K8S_DEFINITION: f"io.k8s.api.core.v1.{definition}"}
    if many:
        extra["x-trainop-list"] = True
    return extra


def _env(limit: int = 128) -> list[Mapping] | None:
    return Field(
        None,
        max_length=limit,
        description="Environment variables (core/v1 EnvVar), merged by name.",
        json_schema_extra={**_k8s("EnvVar", many=True), **list_map("name")},
    )


# ---- TrainJob.spec ------------------------------------------------------------------------


class RuntimeRef(WireModel):
    """Which runtime a TrainJob runs on."""

    name: Name = Field(description="Name of the TrainingRuntime or ClusterTrainingRuntime.")
    api_group: Annotated[Str, Field(max_length=253)] | None = Field(
        None, description="API group of the runtime.", json_schema_extra=_fixed(c.GROUP)
    )
    kind: Annotated[Str, Field(max_length=253)] | None = Field(
        None,
        description="TrainingRuntime or ClusterTrainingRuntime.",
        json_schema_extra=_fixed(c.CLUSTER_TRAINING_RUNTIME),
    )


class InitializerSource(WireModel):
    """Where an initializer fetches a dataset or a model from."""

    storage_uri: Annotated[Str, Field(max_length=2048)] | None = Field(
        None,
        description="Source of the data, e.g. hf://org/name or s3://bucket/key.",
        json_schema_extra=_cel(f"self == '' || self.matches('{STORAGE_URI_PATTERN}')", STORAGE_URI),
    )
    env: list[Mapping] | None = _env()
    secret_ref: Mapping | None = Field(
        None,
        description="Secret whose keys become env (core/v1 LocalObjectReference).",
        json_schema_extra=_k8s("LocalObjectReference"),
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
    env: list[Mapping] | None = _env()
    num_nodes: NonNegative | None = Field(
        None, description="Number of training nodes (pods of the trainer job)."
    )
    resources_per_node: Mapping | None = Field(
        None,
        description="Resources of each node's container (core/v1 ResourceRequirements).",
        json_schema_extra=_k8s("ResourceRequirements"),
    )
    num_proc_per_node: Int32 | None = Field(
        None,
        description="Processes per node; torch treats absence as auto.",
        json_schema_extra=_cel("self >= 1", TRAINER_NPROC),
    )


class ContainerPatch(WireModel):
    """Changes to one container of the runtime's pod template."""

    name: Name = Field(description="Container to patch; it must exist in the runtime.")
    env: list[Mapping] | None = _env()
    volume_mounts: list[Mapping] | None = Field(
        None,
        max_length=128,
        description="Volume mounts (core/v1 VolumeMount), merged by name.",
        json_schema_extra={**_k8s("VolumeMount", many=True), **list_map("name")},
    )
    security_context: Mapping | None = Field(
        None,
        description="Container security context (core/v1 SecurityContext).",
        json_schema_extra=_k8s("SecurityContext"),
    )


def _patch_field(description: str, extra: dict[str, Any], max_length: int | None = None) -> Any:
    return Field(None, description=description, json_schema_extra=extra, max_length=max_length)


_IMMUTABLE = immutable(FIELD_IMMUTABLE)


class PodSpecPatch(WireModel):
    """Changes to the pod spec of one replicatedJob of the runtime."""

    service_account_name: Annotated[Str, Field(max_length=253)] | None = _patch_field(
        "Service account of the pods. Immutable.", _IMMUTABLE
    )
    volumes: list[Mapping] | None = _patch_field(
        "Volumes (core/v1 Volume), merged by name. Immutable.",
        {**_k8s("Volume", many=True), **list_map("name"), **_IMMUTABLE},
        max_length=128,
    )
    init_containers: list[ContainerPatch] | None = _patch_field(
        "Init containers to patch, by name. Immutable.",
        {**list_map("name"), **_IMMUTABLE},
        max_length=64,
    )
    containers: list[ContainerPatch] | None = _patch_field(
        "Containers to patch, by name. Immutable.",
        {**list_map("name"), **_IMMUTABLE},
        max_length=64,
    )
    image_pull_secrets: list[Mapping] | None = _patch_field(
        "Image pull secrets (core/v1 LocalObjectReference). Immutable.",
        {**_k8s("LocalObjectReference", many=True), **list_map("name"), **_IMMUTABLE},
        max_length=64,
    )
    security_context: Mapping | None = _patch_field(
        "Pod security context (core/v1 PodSecurityContext). Immutable.",
        {**_k8s("PodSecurityContext"), **_IMMUTABLE},
    )
    node_selector: dict[str, Str] | None = Field(
        None, description="Node labels the pods must match."
    )
    affinity: Mapping | None = Field(
        None,
        description="Scheduling affinity (core/v1 Affinity).",
        json_schema_extra=_k8s("Affinity"),
    )
    tolerations: list[Mapping] | None = Field(
        None,
        max_length=128,
        description="Tolerations (core/v1 Toleration); replaces the whole list.",
        json_schema_extra={**_k8s("Toleration", many=True), **ATOMIC},
    )
    scheduling_gates: list[Mapping] | None = Field(
        None,
        max_length=16,
        description="Scheduling gates (core/v1 PodSchedulingGate), merged by name.",
        json_schema_extra={**_k8s("PodSchedulingGate", many=True), **list_map("name")},
    )
    termination_grace_period_seconds: Annotated[Int64, Field(ge=0)] | None = _patch_field(
        "Seconds a pod gets to stop. Immutable.", _IMMUTABLE
    )


def _meta_field(what: str) -> Mapping | None:
    return Field(
        None,
        description=f"Labels and annotations merged into the {what} (ObjectMeta).",
        json_schema_extra={K8S_DEFINITION: OBJECT_META},
    )


class PodTemplatePatch(WireModel):
    """Changes to a Job's pod template."""

    metadata: Mapping | None = _meta_field("pod template")
    spec: PodSpecPatch | None = Field(None, description="Changes to the pod spec.")


class JobSpecPatch(WireModel):
    """Changes to a Job spec: only its pod template."""

    template: PodTemplatePatch | None = Field(None, description="Changes to the pod template.")


class JobTemplatePatch(WireModel):
    """Changes to the Job template of one replicatedJob."""

    metadata: Mapping | None = _meta_field("Job template")
    spec: JobSpecPatch | None = Field(None, description="Changes to the Job spec.")


class ReplicatedJobPatch(WireModel):
    """Changes to one replicatedJob of the runtime, found by name."""

    name: Name = Field(description="replicatedJob to patch; it must exist in the runtime.")
    template: JobTemplatePatch | None = Field(None, description="Changes to its Job template.")


class JobSetSpecPatch(WireModel):
    """Changes to the runtime's JobSet spec: only its replicatedJobs."""

    replicated_jobs: list[ReplicatedJobPatch] | None = Field(
        None,
        max_length=100,
        description="replicatedJobs to patch.",
        json_schema_extra=list_map("name"),
    )


class JobSetTemplatePatch(WireModel):
    """Changes to the runtime's JobSet template."""

    metadata: Mapping | None = _meta_field("JobSet")
    spec: JobSetSpecPatch | None = Field(None, description="Changes to the JobSet spec.")


class TrainingRuntimeSpecPatch(WireModel):
    """Changes to the runtime's spec: only its template."""

    template: JobSetTemplatePatch | None = Field(
        None, description="Changes to the JobSet template."
    )


class RuntimePatch(WireModel):
    """Changes one manager (a user, Kueue, the SDK) makes to the runtime for this TrainJob."""

    manager: Name = Field(
        description=(
            "Who owns this patch: a domain-prefixed path such as kueue.x-k8s.io/manager. Immutable."
        ),
        json_schema_extra=_IMMUTABLE,
    )
    time: Time | None = Field(None, description="When the patch last changed (set on admission).")
    training_runtime_spec: TrainingRuntimeSpecPatch | None = Field(
        None, description="Changes to the runtime's spec."
    )


class TrainJobSpec(WireModel):
    """What to train and on which runtime."""

    runtime_ref: RuntimeRef = Field(
        description="The runtime to train on. Immutable.", json_schema_extra=_IMMUTABLE
    )
    initializer: Initializer | None = Field(
        None,
        description="Dataset and model to fetch first. Immutable.",
        json_schema_extra=_IMMUTABLE,
    )
    trainer: Trainer | None = Field(
        None,
        description="Overrides of the runtime's trainer. Immutable.",
        json_schema_extra=_IMMUTABLE,
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
        json_schema_extra=_fixed(False),
    )
    active_deadline_seconds: Annotated[Int64, Field(ge=1)] | None = Field(
        None,
        description="Seconds after start (or resume) after which the TrainJob fails. Immutable.",
        json_schema_extra=_IMMUTABLE,
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

    model_config = ConfigDict(json_schema_extra=_cel("has(self.lastUpdatedTime)", LAST_UPDATED))

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


# ---- runtimes -----------------------------------------------------------------------------


class EnvInjectionTarget(WireModel):
    """Side containers of one job that also get the PET_* env."""

    job_name: Name = Field(description="replicatedJob whose containers get the env.")
    container_names: list[Annotated[Str, Field(max_length=63)]] = Field(
        min_length=1,
        max_length=8,
        description="Containers (other than node) that get the env.",
        json_schema_extra={
            "x-kubernetes-list-type": "set",
            **_cel("!self.exists(n, n == 'node')", NO_NODE_CONTAINER),
        },
    )


class EnvInjection(WireModel):
    """Where the torch env goes besides the node container."""

    targets: list[EnvInjectionTarget] | None = Field(
        None, max_length=16, description="Extra targets.", json_schema_extra=list_map("jobName")
    )


class TorchMLPolicySource(WireModel):
    """PyTorch distributed (torchrun) policy."""

    env_injection: EnvInjection | None = Field(None, description="Extra containers for PET_* env.")


class MPIMLPolicySource(WireModel):
    """MPI policy: an SSH-launched mpirun over the nodes (OpenMPI)."""

    num_proc_per_node: Int32 | None = Field(
        None,
        description="Slots per node in the hostfile.",
        json_schema_extra={"default": 1, **_cel("self >= 1", MPI_NPROC)},
    )
    mpi_implementation: Literal["OpenMPI", ""] | None = Field(
        None,
        description="MPI implementation (only OpenMPI).",
        json_schema_extra=_fixed(c.MPI_OPENMPI),
    )
    ssh_auth_mount_path: Annotated[Str, Field(max_length=4096)] | None = Field(
        None,
        description="Where the SSH keys are mounted.",
        json_schema_extra=_fixed(c.DEFAULT_SSH_AUTH_MOUNT_PATH),
    )
    run_launcher_as_node: Bool | None = Field(
        None,
        description="The launcher also trains as one of the nodes.",
        json_schema_extra=_fixed(False),
    )


class FluxMLPolicySource(WireModel):
    """Flux framework policy (HPC scheduler inside the job)."""

    num_proc_per_node: Int32 | None = Field(
        None,
        description="Tasks per node.",
        json_schema_extra={"default": 1, **_cel("self >= 1", FLUX_NPROC)},
    )


class EmptyPolicy(WireModel):
    """A policy without settings (JAX, XGBoost)."""


class MLPolicy(WireModel):
    """The framework a runtime trains with, and its node count."""

    model_config = ConfigDict(
        json_schema_extra=_cel(
            "[has(self.torch), has(self.mpi), has(self.jax), has(self.xgboost), has(self.flux)]"
            ".filter(x, x).size() <= 1",
            ONE_POLICY,
        )
    )

    num_nodes: Int32 | None = Field(
        None, description="Nodes, unless the TrainJob says (default 1)."
    )
    torch: TorchMLPolicySource | None = Field(None, description="PyTorch distributed.")
    mpi: MPIMLPolicySource | None = Field(None, description="MPI.")
    jax: EmptyPolicy | None = Field(None, description="JAX distributed.")
    xgboost: EmptyPolicy | None = Field(None, description="XGBoost (Rabit tracker).")
    flux: FluxMLPolicySource | None = Field(None, description="Flux framework.")


class CoschedulingPodGroupPolicySource(WireModel):
    """Gang scheduling with the scheduler-plugins coscheduler."""

    schedule_timeout_seconds: Int32 | None = Field(
        None, description="Seconds to wait for the whole gang.", json_schema_extra=_fixed(60)
    )


class NetworkTopology(WireModel):
    """Volcano network-topology constraint of the gang."""

    mode: Literal["hard", "soft"] | None = Field(
        None, description="hard: must hold; soft: best effort.", json_schema_extra=_fixed("hard")
    )
    highest_tier_allowed: Int32 | None = Field(
        None, description="Highest network tier the gang may span.", json_schema_extra=_fixed(1)
    )


class VolcanoPodGroupPolicySource(WireModel):
    """Gang scheduling with Volcano."""

    network_topology: NetworkTopology | None = Field(
        None, description="Network-topology constraint."
    )


class PodGroupPolicy(WireModel):
    """How the runtime's pods are gang-scheduled."""

    coscheduling: CoschedulingPodGroupPolicySource | None = Field(None, description="Coscheduler.")
    volcano: VolcanoPodGroupPolicySource | None = Field(None, description="Volcano.")


class JobSetTemplateSpec(WireModel):
    """The JobSet a TrainJob on this runtime becomes."""

    model_config = ConfigDict(json_schema_extra={"minProperties": 1})

    metadata: Mapping | None = Field(
        None,
        description="Labels and annotations of the JobSet (ObjectMeta).",
        json_schema_extra={K8S_DEFINITION: OBJECT_META},
    )
    spec: JobSetSpec | None = Field(None, description="The JobSet spec (jobset.x-k8s.io/v1alpha2).")


class TrainingRuntimeSpec(WireModel):
    """A runtime: ML policy, gang-scheduling policy and JobSet template."""

    model_config = ConfigDict(json_schema_extra={"minProperties": 1})

    ml_policy: MLPolicy | None = Field(None, description="Framework and node count.")
    pod_group_policy: PodGroupPolicy | None = Field(None, description="Gang scheduling.")
    template: JobSetTemplateSpec | None = Field(None, description="The JobSet template.")


class TrainingRuntime(WireModel):
    """A runtime TrainJobs of its namespace can use."""

    api_version: Literal["trainer.kubeflow.org/v1alpha1"] = Field(
        description="Always trainer.kubeflow.org/v1alpha1."
    )
    kind: Literal["TrainingRuntime"] = Field(description="Always TrainingRuntime.")
    metadata: ObjectMeta = Field(default_factory=ObjectMeta, description="Standard metadata.")
    spec: TrainingRuntimeSpec | None = Field(None, description="The runtime.")


class ClusterTrainingRuntime(WireModel):
    """A runtime TrainJobs of every namespace can use."""

    api_version: Literal["trainer.kubeflow.org/v1alpha1"] = Field(
        description="Always trainer.kubeflow.org/v1alpha1."
    )
    kind: Literal["ClusterTrainingRuntime"] = Field(description="Always ClusterTrainingRuntime.")
    metadata: ObjectMeta = Field(default_factory=ObjectMeta, description="Standard metadata.")
    spec: TrainingRuntimeSpec | None = Field(None, description="The runtime.")


MODELS: dict[str, type[WireModel]] = {
    c.TRAINJOB: TrainJob,
    c.TRAINING_RUNTIME: TrainingRuntime,
    c.CLUSTER_TRAINING_RUNTIME: ClusterTrainingRuntime,
}
