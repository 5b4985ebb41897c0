"""The common kubeflow.org/v1 types shared by every job kind.

``Job`` and ``JobSpec`` are the generic job model: later layers read ``job.spec.replica_specs``
and ``job.spec.run_policy`` without knowing the kind, because each kind's spec class (in
``jobs``) maps its own wire field (``tfReplicaSpecs``, ``pytorchReplicaSpecs`` ...) onto
``replica_specs`` once. Pod templates and other embedded Kubernetes objects stay plain mappings,
so fields this model does not know survive a parse → dump round trip unchanged.

Invariants: models are frozen; ``None`` means "absent on the wire" and is never dumped.
"""

from __future__ import annotations

from typing import Literal, Self

from pydantic import ConfigDict, Field

from trainop.api.fields import (
    K8S_DEFINITION,
    Bool,
    Int32,
    Int64,
    Mapping,
    Quantity,
    Str,
    Time,
    WireModel,
)
from trainop.errors import FieldError

API_GROUP = "kubeflow.org"
API_VERSION = "kubeflow.org/v1"

RestartPolicy = Literal["Always", "OnFailure", "Never", "ExitCode"]
CleanPodPolicy = Literal["All", "Running", "None"]
ConditionStatus = Literal["True", "False", "Unknown"]

# Condition types, exactly as upstream spells them.
CREATED = "Created"
RUNNING = "Running"
RESTARTING = "Restarting"
SUCCEEDED = "Succeeded"
SUSPENDED = "Suspended"
FAILED = "Failed"
CONDITION_TYPES = (CREATED, RUNNING, RESTARTING, SUCCEEDED, SUSPENDED, FAILED)

# Reserved values of runPolicy.managedBy.
MANAGED_BY_TRAINING_OPERATOR = "kubeflow.org/training-operator"
MANAGED_BY_MULTIKUEUE = "kueue.x-k8s.io/multikueue"
MANAGED_BY_VALUES = (MANAGED_BY_TRAINING_OPERATOR, MANAGED_BY_MULTIKUEUE)


class ObjectMeta(WireModel):
    """Standard object metadata; the fields trainop reads are typed, the rest kept as they are."""

    model_config = ConfigDict(extra="allow")

    name: Str | None = Field(None, description="Name of the job, unique in its namespace.")
    generate_name: Str | None = Field(None, description="Prefix for a server-generated name.")
    namespace: Str | None = Field(None, description="Namespace of the job.")
    uid: Str | None = Field(None, description="Unique id set by the API server.")
    resource_version: Str | None = Field(None, description="Opaque version for concurrency.")
    generation: Int64 | None = Field(None, description="Sequence number of spec changes.")
    creation_timestamp: Str | None = Field(None, description="When the object was created.")
    deletion_timestamp: Str | None = Field(None, description="When deletion was requested.")
    labels: dict[str, Str] | None = Field(None, description="Labels of the job.")
    annotations: dict[str, Str] | None = Field(None, description="Annotations of the job.")
    owner_references: list[Mapping] | None = Field(None, description="Owners of the job.")
    finalizers: list[Str] | None = Field(None, description="Finalizers blocking deletion.")


class SchedulingPolicy(WireModel):
    """Gang-scheduling parameters handed to Volcano or the scheduler-plugins coscheduler."""

    min_available: Int32 | None = Field(
        None, description="Pods that must be schedulable together; default: all replicas."
    )
    queue: Str | None = Field(
        None, description="Scheduler queue (Volcano) for the PodGroup. Immutable once set."
    )
    min_resources: dict[str, Quantity] | None = Field(
        None, description="Resources the gang needs as a whole; default: summed from the pods."
    )
    priority_class: Str | None = Field(None, description="PriorityClass name for the PodGroup.")
    schedule_timeout_seconds: Int32 | None = Field(
        None, description="Seconds the coscheduler waits for the gang before giving up."
    )


class RunPolicy(WireModel):
    """Policies shared by every kind: cleanup, deadlines, retries, scheduling, ownership."""

    clean_pod_policy: CleanPodPolicy | None = Field(
        None, description="Pods to delete when the job finishes: All, Running or None."
    )
    ttl_seconds_after_finished: Int32 | None = Field(
        None, description="Seconds after completion before the job itself is deleted."
    )
    active_deadline_seconds: Int64 | None = Field(
        None, description="Seconds since start after which the job is failed."
    )
    backoff_limit: Int32 | None = Field(
        None, description="Restarts allowed before the job is marked Failed."
    )
    scheduling_policy: SchedulingPolicy | None = Field(
        None, description="Gang-scheduling parameters."
    )
    suspend: Bool | None = Field(
        None,
        description="True deletes the job's pods and keeps it until resumed (default false).",
        json_schema_extra={"default": False},
    )
    managed_by: Str | None = Field(
        None,
        description=(
            "Controller responsible for the job: kubeflow.org/training-operator (default) or "
            "kueue.x-k8s.io/multikueue. Immutable."
        ),
    )


class ReplicaSpec(WireModel):
    """How to run one replica type: how many, which pod template, and how to restart it."""

    replicas: Int32 | None = Field(
        None, description="Number of replicas of this type (default 1; MPI Worker 0)."
    )
    template: Mapping = Field(
        default_factory=dict,
        description="Pod template for every replica of this type (core/v1 PodTemplateSpec).",
        json_schema_extra={K8S_DEFINITION: "io.k8s.api.core.v1.PodTemplateSpec"},
    )
    restart_policy: RestartPolicy | None = Field(
        None, description="Always, OnFailure, Never or ExitCode (default per kind)."
    )


class JobCondition(WireModel):
    """One observed state of the job; conditions form an append-ordered history."""

    type: Str = Field(description="Created, Running, Restarting, Succeeded, Suspended or Failed.")
    status: ConditionStatus = Field(description="True, False or Unknown.")
    reason: Str | None = Field(None, description="One-word CamelCase reason, e.g. TFJobRunning.")
    message: Str | None = Field(None, description="Human-readable detail.")
    last_update_time: Time | None = Field(None, description="When this condition last changed.")
    last_transition_time: Time | None = Field(
        None, description="When the status last moved between True, False and Unknown."
    )


class ReplicaStatus(WireModel):
    """Pod counts of one replica type."""

    active: Int32 | None = Field(None, description="Running pods.")
    succeeded: Int32 | None = Field(None, description="Pods that succeeded.")
    failed: Int32 | None = Field(None, description="Pods that failed.")
    label_selector: Mapping | None = Field(
        None,
        description="Deprecated structured selector of this type's pods.",
        json_schema_extra={K8S_DEFINITION: "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector"},
    )
    selector: Str | None = Field(
        None, description="Label selector of this type's pods, for the scale subresource."
    )


class JobStatus(WireModel):
    """Observed state of a job, written by the operator through the status subresource."""

    model_config = ConfigDict(extra="allow")

    conditions: list[JobCondition] | None = Field(
        None, description="Condition history; the last entry is the job's state."
    )
    replica_statuses: dict[Str, ReplicaStatus] | None = Field(
        None, description="Pod counts per replica type."
    )
    start_time: Time | None = Field(None, description="When the operator started the job.")
    completion_time: Time | None = Field(None, description="When the job finished.")
    last_reconcile_time: Time | None = Field(
        None, description="Last reconcile while gang scheduling held pod creation back."
    )
    restarts: Int32 | None = Field(
        None,
        description=(
            "trainop extension: pod restarts the operator performed so far (with the container "
            "restarts of the pods it replaced); counts toward runPolicy.backoffLimit."
        ),
    )


class JobSpec(WireModel):
    """What every kind's spec has. Each kind subclasses it and names its replica-spec field."""

    run_policy: RunPolicy | None = Field(
        None, description="Policies shared by every kind (cleanup, deadlines, scheduling)."
    )
    replica_specs: dict[Str, ReplicaSpec] = Field(
        description="Replica types of the job, each with its pod template."
    )

    def with_kind_defaults(self) -> Self:
        """This spec with the kind-specific defaults of spec section 2 applied (none here)."""
        return self

    def kind_errors(self, *, path: str) -> list[FieldError]:
        """Kind-specific validation problems of this (defaulted) spec; ``path`` is ``spec``."""
        del path
        return []

    def kind_update_errors(self, old: JobSpec, *, path: str) -> list[FieldError]:
        """Kind-specific problems of changing ``old`` into this spec (immutable fields)."""
        del old, path
        return []

    def kind_warnings(self) -> list[str]:
        """Kind-specific admission warnings (deprecations)."""
        return []


class Job(WireModel):
    """A kubeflow.org/v1 job of any kind; each kind narrows ``kind`` and ``spec``."""

    api_version: Literal["kubeflow.org/v1"] = Field(description="Always kubeflow.org/v1.")
    kind: Str = Field(description="The job kind.")
    metadata: ObjectMeta = Field(default_factory=ObjectMeta, description="Standard metadata.")
    spec: JobSpec = Field(description="Desired state of the job.")
    status: JobStatus | None = Field(None, description="Observed state of the job.")

    @property
    def run_policy(self) -> RunPolicy:
        """The run policy, or an empty one when the spec has none."""
        return self.spec.run_policy or RunPolicy()
