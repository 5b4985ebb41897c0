"""The job kinds of kubeflow.org/v1: their specs and the rules only they have.

Each ``<Kind>Spec`` maps its wire field (``tfReplicaSpecs`` ...) onto the generic
``JobSpec.replica_specs`` once, here; nothing above this module spells a per-kind field name.
Kind-specific defaulting and validation are methods of the spec (``with_kind_defaults``,
``kind_errors``, ``kind_warnings``), so callers stay free of kind branching. Rules that are the
same shape for several kinds (required replica types, replica counts) are data in ``kinds``.
"""

from __future__ import annotations

from typing import Annotated, Literal, Self

from pydantic import Field

from trainop.api import mpi_v2beta1
from trainop.api.fields import (
    K8S_DEFINITION,
    Bool,
    FieldPath,
    Int32,
    Mapping,
    Str,
    Suggested,
    WireModel,
)
from trainop.api.types import Job, JobSpec, ReplicaSpec, RunPolicy
from trainop.errors import FieldError

NPROC_KEYWORDS = ("auto", "cpu", "gpu")


def _metric_list_field() -> list[Mapping] | None:
    return Field(
        None,
        description="autoscaling/v2 metrics; when set, an HPA scales the Worker replicas.",
        json_schema_extra={
            K8S_DEFINITION: "io.k8s.api.autoscaling.v2.MetricSpec",
            "x-trainop-list": True,
        },
    )


def _min_max_defaults(
    policy: ElasticPolicy | PaddleElasticPolicy, workers: ReplicaSpec | None
) -> dict[str, int | None]:
    """Upstream's elastic min/max defaulting: fill one from the other, or both from Workers."""
    low, high = policy.min_replicas, policy.max_replicas
    if low is not None and high is not None:
        return {"min_replicas": low, "max_replicas": high}
    if low is None and high is not None:
        return {"min_replicas": high, "max_replicas": high}
    if low is not None:
        return {"min_replicas": low, "max_replicas": low}
    count = workers.replicas if workers is not None else None
    return {"min_replicas": count, "max_replicas": count}


def _min_max_errors(
    policy: ElasticPolicy | PaddleElasticPolicy, path: FieldPath
) -> list[FieldError]:
    low, high = policy.min_replicas, policy.max_replicas
    if low is not None and low < 1:
        where = str(path.child("minReplicas"))
        return [FieldError(where, "Invalid", "must be at least 1", value=low)]
    if low is not None and high is not None and low > high:
        return [
            FieldError(
                str(path.child("minReplicas")),
                "Invalid",
                "must not be greater than maxReplicas",
                value=low,
            )
        ]
    return []


class TFJobSpec(JobSpec):
    """TFJob: parameter servers, workers, chief/master and evaluator."""

    replica_specs: dict[Str, ReplicaSpec] = Field(
        alias="tfReplicaSpecs", description="Replica types: PS, Worker, Chief, Master, Evaluator."
    )
    success_policy: Literal["", "AllWorkers"] | None = Field(
        None,
        description='"" (chief, or worker 0, decides) or AllWorkers (every worker must succeed).',
    )
    enable_dynamic_worker: Bool | None = Field(
        None, description="Sparse TF_CONFIG and tolerated worker failures, for elastic workers."
    )

    def with_kind_defaults(self) -> Self:
        if self.success_policy is not None:
            return self
        return self.model_copy(update={"success_policy": ""})

    def kind_errors(self, *, path: str) -> list[FieldError]:
        chiefs = [rt for rt in self.replica_specs if rt in ("Chief", "Master")]
        if len(chiefs) > 1:
            where = str(FieldPath(path).child("tfReplicaSpecs"))
            return [
                FieldError(where, "Forbidden", "must not have more than 1 Chief or Master role")
            ]
        return []


class RdzvConf(WireModel):
    """One extra rendezvous setting passed to torchrun as key=value."""

    key: Str | None = Field(None, description="Setting name.")
    value: Str | None = Field(None, description="Setting value.")


class ElasticPolicy(WireModel):
    """PyTorch elastic training (torchrun rendezvous) settings."""

    min_replicas: Int32 | None = Field(None, description="Fewest workers to run with.")
    max_replicas: Int32 | None = Field(None, description="Most workers to scale to.")
    rdzv_backend: Str | None = Field(None, description="Rendezvous backend: c10d, etcd, etcd-v2.")
    rdzv_port: Int32 | None = Field(None, description="Rendezvous port (default: the job port).")
    rdzv_host: Str | None = Field(None, description="Rendezvous host (default: the master).")
    rdzv_id: Str | None = Field(None, description="Rendezvous id (default: the job name).")
    rdzv_conf: list[RdzvConf] | None = Field(None, description="Extra rendezvous settings.")
    standalone: Bool | None = Field(None, description="Start a local c10d rendezvous.")
    n_proc_per_node: Int32 | None = Field(
        None, description="Deprecated: use spec.nprocPerNode instead."
    )
    max_restarts: Int32 | None = Field(None, description="Worker group restarts allowed.")
    metrics: list[Mapping] | None = _metric_list_field()


class PyTorchJobSpec(JobSpec):
    """PyTorchJob: one optional master and workers, plain or elastic (torchrun)."""

    replica_specs: dict[Str, ReplicaSpec] = Field(
        alias="pytorchReplicaSpecs", description="Replica types: Master, Worker."
    )
    elastic_policy: ElasticPolicy | None = Field(
        None, description="Elastic training settings; requires a Worker replica type."
    )
    nproc_per_node: Str | None = Field(
        None, description='Processes per node: "auto", "cpu", "gpu" or a number (default auto).'
    )

    def with_kind_defaults(self) -> Self:
        update: dict[str, object] = {}
        policy = self.elastic_policy
        if policy is not None:
            bounds = _min_max_defaults(policy, self.replica_specs.get("Worker"))
            update["elastic_policy"] = policy.model_copy(update=bounds)
        if self.nproc_per_node is None and (policy is None or policy.n_proc_per_node is None):
            update["nproc_per_node"] = "auto"
        return self.model_copy(update=update) if update else self

    def kind_errors(self, *, path: str) -> list[FieldError]:
        spec = FieldPath(path)
        errors: list[FieldError] = []
        nproc = self.nproc_per_node
        if nproc is not None and nproc not in NPROC_KEYWORDS and not nproc.isdigit():
            errors.append(
                FieldError(
                    str(spec.child("nprocPerNode")),
                    "Invalid",
                    'must be "auto", "cpu", "gpu" or a positive integer',
                    value=nproc,
                )
            )
        policy = self.elastic_policy
        if policy is None:
            return errors
        if "Worker" not in self.replica_specs:
            where = spec.child("pytorchReplicaSpecs").key("Worker")
            errors.append(
                FieldError(str(where), "Required", "must be configured if elastic policy is used")
            )
        if policy.n_proc_per_node is not None and self.nproc_per_node is not None:
            where = spec.child("elasticPolicy").child("nProcPerNode")
            errors.append(
                FieldError(str(where), "Forbidden", "must not be used with spec.nprocPerNode")
            )
        errors += _min_max_errors(policy, spec.child("elasticPolicy"))
        return errors

    def kind_warnings(self) -> list[str]:
        if self.elastic_policy is not None and self.elastic_policy.n_proc_per_node is not None:
            return ["spec.elasticPolicy.nProcPerNode is deprecated, use spec.nprocPerNode instead"]
        return []


class XGBoostJobSpec(JobSpec):
    """XGBoostJob: one master and workers (Rabit tracker on the master)."""

    replica_specs: dict[Str, ReplicaSpec] = Field(
        alias="xgbReplicaSpecs", description="Replica types: Master, Worker."
    )


class MPIJobSpec(JobSpec):
    """MPIJob (legacy kubectl-delivery design): one launcher running mpirun over the workers."""

    slots_per_worker: Int32 | None = Field(
        None, description="MPI slots per worker in the hostfile (default 1)."
    )
    clean_pod_policy: Literal["All", "Running", "None"] | None = Field(
        None, description="Deprecated copy of runPolicy.cleanPodPolicy."
    )
    replica_specs: dict[Str, ReplicaSpec] = Field(
        alias="mpiReplicaSpecs", description="Replica types: Launcher, Worker."
    )
    main_container: Str | None = Field(
        None, description="Container the launcher executes MPI processes in (default: mpi)."
    )
    # kubeflow.org/v2beta1 fields: one CRD serves both versions (conversion None), so both
    # schemas hold every field and a job read through either version round-trips unchanged.
    # ``sshAuthMountPath`` present = v2beta1 (SSH) semantics (api.mpi_v2beta1, design 100).
    run_launcher_as_worker: Bool | None = Field(
        None, description="v2beta1 field: the launcher is also an MPI host."
    )
    ssh_auth_mount_path: Str | None = Field(
        None,
        description=(
            "v2beta1 field: mount path of the job's SSH keys. Present on every job created "
            "through v2beta1; a job that has it runs with v2beta1 semantics."
        ),
    )
    launcher_creation_policy: Literal["AtStartup", "WaitForWorkersReady"] | None = Field(
        None, description="v2beta1 field: AtStartup or WaitForWorkersReady."
    )
    mpi_implementation: Literal["OpenMPI", "Intel", "MPICH"] | None = Field(
        None, description="v2beta1 field: OpenMPI, Intel or MPICH."
    )

    def with_kind_defaults(self) -> Self:
        run_policy = self.run_policy or RunPolicy()
        effective = run_policy.clean_pod_policy or self.clean_pod_policy or "None"
        return self.model_copy(
            update={
                "clean_pod_policy": effective,
                "run_policy": run_policy.model_copy(update={"clean_pod_policy": effective}),
            }
        )

    def kind_errors(self, *, path: str) -> list[FieldError]:
        if self.ssh_auth_mount_path is not None:  # a v2beta1 job: its own rules (design 100)
            wire = self.model_dump(by_alias=True, exclude_none=True, mode="json")
            return mpi_v2beta1.wire_spec_errors(wire)
        if self.slots_per_worker is not None and self.slots_per_worker < 1:
            where = FieldPath(path).child("slotsPerWorker")
            return [
                FieldError(str(where), "Invalid", "must be at least 1", value=self.slots_per_worker)
            ]
        return []

    def kind_update_errors(self, old: JobSpec, *, path: str) -> list[FieldError]:
        # The version semantics a job was created with never change (design 100).
        before = getattr(old, "ssh_auth_mount_path", None) is not None
        if before != (self.ssh_auth_mount_path is not None):
            where = FieldPath(path).child("sshAuthMountPath")
            detail = (
                "cannot be added to or removed from an existing MPIJob: it fixes whether the "
                "job has v1 or v2beta1 semantics; recreate the job instead"
            )
            return [FieldError(str(where), "Forbidden", detail)]
        return []


class PaddleElasticPolicy(WireModel):
    """PaddlePaddle elastic settings (accepted and defaulted; not otherwise used, as upstream)."""

    min_replicas: Int32 | None = Field(None, description="Fewest workers to run with.")
    max_replicas: Int32 | None = Field(None, description="Most workers to scale to.")
    max_restarts: Int32 | None = Field(None, description="Restarts allowed.")
    metrics: list[Mapping] | None = _metric_list_field()


class PaddleJobSpec(JobSpec):
    """PaddleJob: optional master and workers running paddle.distributed."""

    elastic_policy: PaddleElasticPolicy | None = Field(
        None, description="Elastic settings (defaulted, otherwise unused)."
    )
    replica_specs: dict[Str, ReplicaSpec] = Field(
        alias="paddleReplicaSpecs", description="Replica types: Master, Worker."
    )

    def with_kind_defaults(self) -> Self:
        policy = self.elastic_policy
        if policy is None:
            return self
        bounds = _min_max_defaults(policy, self.replica_specs.get("Worker"))
        return self.model_copy(update={"elastic_policy": policy.model_copy(update=bounds)})

    def kind_errors(self, *, path: str) -> list[FieldError]:
        if self.elastic_policy is None:
            return []
        return _min_max_errors(self.elastic_policy, FieldPath(path).child("elasticPolicy"))


class JAXJobSpec(JobSpec):
    """JAXJob: workers running jax.distributed; worker 0 is the coordinator."""

    replica_specs: dict[Str, ReplicaSpec] = Field(
        alias="jaxReplicaSpecs", description="Replica types: Worker."
    )


class MXJobSpec(JobSpec):
    """MXJob (as of v1.8.1): MXNet parameter-server training or tuning."""

    job_mode: Annotated[Str, Suggested("MXTrain")] = Field(
        description="MXTrain or MXTune; not interpreted (any string, empty included, is accepted)."
    )
    replica_specs: dict[Str, ReplicaSpec] = Field(
        alias="mxReplicaSpecs",
        description="Replica types: Scheduler, Server, Worker, TunerTracker, TunerServer, Tuner.",
    )

    def kind_warnings(self) -> list[str]:
        return ["MXJob was removed from Kubeflow Training Operator v1.9; trainop still runs it"]


DGL_PARTITION_MODES = ("DGL-API", "Skip")
# Modes of the Qihoo operator and the Kubeflow proposal that were never implemented.
_UNIMPLEMENTED_PARTITION_MODES = ("ParMETIS", "DistParMETIS")


class DGLJobSpec(JobSpec):
    """DGLJob: a launcher trains over idle workers once a derived Partitioner split the graph."""

    slots_per_worker: Int32 | None = Field(
        None, description="Slots per worker in the launcher's hostfile (default 1)."
    )
    partition_mode: Str | None = Field(
        None,
        description=(
            "DGL-API (default: a Partitioner pod partitions the graph before the workers "
            "start) or Skip (the launcher alone runs the workload)."
        ),
        json_schema_extra={"enum": list(DGL_PARTITION_MODES)},
    )
    clean_pod_policy: Literal["All", "Running", "None"] | None = Field(
        None, description="Deprecated copy of runPolicy.cleanPodPolicy."
    )
    replica_specs: dict[Str, ReplicaSpec] = Field(
        alias="dglReplicaSpecs",
        description="Replica types: Launcher, Worker (and Partitioner, derived: no template).",
    )

    def with_kind_defaults(self) -> Self:
        run_policy = self.run_policy or RunPolicy()
        effective = run_policy.clean_pod_policy or self.clean_pod_policy
        return self.model_copy(
            update={
                "slots_per_worker": 1 if self.slots_per_worker is None else self.slots_per_worker,
                "partition_mode": self.partition_mode or DGL_PARTITION_MODES[0],
                "clean_pod_policy": effective,
                "run_policy": run_policy.model_copy(update={"clean_pod_policy": effective}),
            }
        )

    def kind_errors(self, *, path: str) -> list[FieldError]:
        spec = FieldPath(path)
        errors: list[FieldError] = []
        if self.slots_per_worker is not None and self.slots_per_worker < 1:
            errors.append(
                FieldError(
                    str(spec.child("slotsPerWorker")),
                    "Invalid",
                    "must be at least 1",
                    value=self.slots_per_worker,
                )
            )
        mode = self.partition_mode
        if mode is not None and mode not in DGL_PARTITION_MODES:
            never = "was never implemented; " if mode in _UNIMPLEMENTED_PARTITION_MODES else ""
            detail = f'{never}supported values: "DGL-API", "Skip"'
            where = str(spec.child("partitionMode"))
            errors.append(FieldError(where, "NotSupported", detail, value=mode))
        return errors + self._replica_errors(spec.child("dglReplicaSpecs"))

    def _replica_errors(self, root: FieldPath) -> list[FieldError]:
        workers = self.replica_specs.get("Worker")
        count = 0 if workers is None else (1 if workers.replicas is None else workers.replicas)
        if self.partition_mode == "Skip":
            errors = []
            if count > 0:
                detail = "must be 0 with partitionMode Skip (the launcher runs alone)"
                errors.append(
                    FieldError(str(root.key("Worker").child("replicas")), "Forbidden", detail)
                )
            if "Partitioner" in self.replica_specs:
                detail = "must not be set with partitionMode Skip (nothing is partitioned)"
                errors.append(FieldError(str(root.key("Partitioner")), "Forbidden", detail))
            return errors
        if count < 1:
            detail = "at least 1 Worker is required with partitionMode DGL-API"
            return [FieldError(str(root.key("Worker").child("replicas")), "Required", detail)]
        return []


class TFJob(Job):
    """A distributed TensorFlow job."""

    kind: Literal["TFJob"] = Field(description="TFJob.")
    spec: TFJobSpec = Field(description="Desired state of the job.")


class PyTorchJob(Job):
    """A distributed PyTorch job."""

    kind: Literal["PyTorchJob"] = Field(description="PyTorchJob.")
    spec: PyTorchJobSpec = Field(description="Desired state of the job.")


class XGBoostJob(Job):
    """A distributed XGBoost job."""

    kind: Literal["XGBoostJob"] = Field(description="XGBoostJob.")
    spec: XGBoostJobSpec = Field(description="Desired state of the job.")


class MPIJob(Job):
    """An MPI job."""

    kind: Literal["MPIJob"] = Field(description="MPIJob.")
    spec: MPIJobSpec = Field(description="Desired state of the job.")


class PaddleJob(Job):
    """A distributed PaddlePaddle job."""

    kind: Literal["PaddleJob"] = Field(description="PaddleJob.")
    spec: PaddleJobSpec = Field(description="Desired state of the job.")


class JAXJob(Job):
    """A distributed JAX job."""

    kind: Literal["JAXJob"] = Field(description="JAXJob.")
    spec: JAXJobSpec = Field(description="Desired state of the job.")


class MXJob(Job):
    """A distributed MXNet job."""

    kind: Literal["MXJob"] = Field(description="MXJob.")
    spec: MXJobSpec = Field(description="Desired state of the job.")


class DGLJob(Job):
    """A distributed DGL (graph neural network) job; its cleanPodPolicy defaults to Running."""

    kind: Literal["DGLJob"] = Field(description="DGLJob.")
    spec: DGLJobSpec = Field(description="Desired state of the job.")
