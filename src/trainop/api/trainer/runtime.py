"""The runtime kinds: ``TrainingRuntime`` (namespaced) and ``ClusterTrainingRuntime`` (spec 1.5).

A runtime is a reusable blueprint: an ML policy (torch, MPI, JAX, XGBoost, Flux) with a default
node count, an optional gang-scheduling policy (coscheduling, Volcano), and the JobSet template a
TrainJob becomes (``jobset.JobSetSpec``). CEL rules and defaults are declared on the fields.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field

from trainop.api.fields import K8S_DEFINITION, Bool, Int32, Mapping, Str, WireModel
from trainop.api.k8s_schema import OBJECT_META
from trainop.api.trainer import constants as c
from trainop.api.trainer.jobset import JobSetSpec
from trainop.api.trainer.markers import Name, cel, fixed, list_map
from trainop.api.types import ObjectMeta

ONE_POLICY = "Only one of the policy can be configured"
NO_NODE_CONTAINER = (
    "containerNames must not include the main node container because PET_* envs are always "
    "injected into it"
)
FLUX_NPROC = "NumProcPerNode in fluxPolicy must be >= 1"
MPI_NPROC = "NumProcPerNode in mpiPolicy must be >= 1"


class EnvInjectionTarget(WireModel):
    """Side containers of one job that also get the PET_* env."""

    job_name: Name = Field(description="replicatedJob whose containers get the env.")
    container_names: list[Annotated[Str, Field(max_length=63)]] = Field(
        min_length=1,
        max_length=8,
        description="Containers (other than node) that get the env.",
        json_schema_extra={
            "x-kubernetes-list-type": "set",
            **cel("!self.exists(n, n == 'node')", NO_NODE_CONTAINER),
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
        json_schema_extra={"default": 1, **cel("self >= 1", MPI_NPROC)},
    )
    mpi_implementation: Literal["OpenMPI", ""] | None = Field(
        None,
        description="MPI implementation (only OpenMPI).",
        json_schema_extra=fixed(c.MPI_OPENMPI),
    )
    ssh_auth_mount_path: Annotated[Str, Field(max_length=4096)] | None = Field(
        None,
        description="Where the SSH keys are mounted.",
        json_schema_extra=fixed(c.DEFAULT_SSH_AUTH_MOUNT_PATH),
    )
    run_launcher_as_node: Bool | None = Field(
        None,
        description="The launcher also trains as one of the nodes.",
        json_schema_extra=fixed(False),
    )


class FluxMLPolicySource(WireModel):
    """Flux framework policy (HPC scheduler inside the job)."""

    num_proc_per_node: Int32 | None = Field(
        None,
        description="Tasks per node.",
        json_schema_extra={"default": 1, **cel("self >= 1", FLUX_NPROC)},
    )


class EmptyPolicy(WireModel):
    """A policy without settings (JAX, XGBoost)."""


class MLPolicy(WireModel):
    """The framework a runtime trains with, and its node count."""

    model_config = ConfigDict(
        json_schema_extra=cel(
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
        None, description="Seconds to wait for the whole gang.", json_schema_extra=fixed(60)
    )


class NetworkTopology(WireModel):
    """Volcano network-topology constraint of the gang."""

    mode: Literal["hard", "soft"] | None = Field(
        None, description="hard: must hold; soft: best effort.", json_schema_extra=fixed("hard")
    )
    highest_tier_allowed: Int32 | None = Field(
        None, description="Highest network tier the gang may span.", json_schema_extra=fixed(1)
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
