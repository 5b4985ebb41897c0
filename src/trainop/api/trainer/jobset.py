"""The JobSet ``jobset.x-k8s.io/v1alpha2`` subset that a Trainer runtime embeds (JobSet v0.12.0).

A runtime's ``spec.template.spec`` is a ``JobSetSpec``; Trainer turns it into a real JobSet.
The models here carry every field of that spec with the CRD's defaults and limits; the Job
templates inside stay plain mappings typed by the official ``batch/v1`` JobTemplateSpec
(``fields.K8S_DEFINITION``), so unknown pod fields survive a round trip. ``JobSet`` is the whole
kind, for the CRD the embedded cluster installs; its status is typed where Trainer reads it
(``replicatedJobsStatus``, conditions) and kept open elsewhere.

CEL rules of the JobSet schema are declared on the fields (``x-kubernetes-validations``) so the
generated CRDs carry them; ``trainer.validation`` enforces them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from trainop.api.fields import K8S_DEFINITION, Bool, Int32, Mapping, Str, WireModel
from trainop.api.trainer.markers import ATOMIC, NonNegative, immutable, list_map

IMMUTABLE_VALUE = "Value is immutable"
EXCLUSIVE_STARTUP = "StartupPolicy and DependsOn APIs are mutually exclusive"
VCP_NAMESPACE = "namespace cannot be set for VolumeClaimPolicies templates"


class DependsOn(WireModel):
    """A replicatedJob that must reach a status before this one's Jobs are created."""

    name: Str = Field(description="Name of an earlier replicatedJob.")
    status: Literal["Ready", "Complete"] = Field(
        description="Ready: its pods are ready; Complete: its Jobs have succeeded."
    )


class ReplicatedJob(WireModel):
    """A group of identical Jobs made from one Job template."""

    name: Str = Field(description="Name of the group; part of every child Job's name.")
    group_name: Str | None = Field(
        None,
        description="Group this replicatedJob belongs to, for group labels (a DNS-1035 label).",
        json_schema_extra={"default": "default"},
    )
    template: Mapping = Field(
        description="Job template every child Job is made from (batch/v1 JobTemplateSpec).",
        json_schema_extra={K8S_DEFINITION: "io.k8s.api.batch.v1.JobTemplateSpec"},
    )
    replicas: Int32 | None = Field(
        None,
        description="Number of child Jobs made from the template.",
        json_schema_extra={"default": 1},
    )
    depends_on: list[DependsOn] | None = Field(
        None,
        max_length=5,
        description="replicatedJobs that must reach a status first. Immutable.",
        json_schema_extra={**list_map("name"), **immutable(IMMUTABLE_VALUE)},
    )


class Network(WireModel):
    """DNS names of the pods: a headless Service and each pod's subdomain."""

    enable_dns_hostnames: Bool | None = Field(
        None,
        alias="enableDNSHostnames",
        description="Give pods stable hostnames through a headless Service.",
    )
    subdomain: Str | None = Field(
        None, description="Subdomain of the pods and name of the Service; default: the JobSet name."
    )
    publish_not_ready_addresses: Bool | None = Field(
        None, description="Resolve pod names before the pods are ready (default true)."
    )


class SuccessPolicy(WireModel):
    """When the JobSet counts as completed."""

    operator: Literal["All", "Any"] = Field(
        description="All: every targeted Job must succeed; Any: one is enough."
    )
    target_replicated_jobs: list[Str] | None = Field(
        None,
        description="replicatedJobs the operator applies to; empty means all.",
        json_schema_extra=ATOMIC,
    )


FailureAction = Literal[
    "FailJobSet",
    "RestartJobSet",
    "RestartJobSetAndIgnoreMaxRestarts",
    "RestartJob",
    "RestartJobAndIgnoreMaxRestarts",
]


class FailurePolicyRule(WireModel):
    """One rule of the failure policy: which Job failures it matches and what to do."""

    name: Str = Field(description="Name of the rule, used in condition reasons.")
    action: FailureAction = Field(description="What to do when the rule matches.")
    on_job_failure_reasons: list[Str] | None = Field(
        None, description="Job failure reasons the rule matches; empty means any."
    )
    on_job_failure_message_patterns: list[Str] | None = Field(
        None, description="Regular expressions searched in the Job's failure message."
    )
    target_replicated_jobs: list[Str] | None = Field(
        None,
        description="replicatedJobs whose failures the rule matches; empty means all.",
        json_schema_extra=ATOMIC,
    )


class FailurePolicy(WireModel):
    """What a failed child Job does to the JobSet: restart it (up to a limit) or fail it."""

    max_restarts: Int32 | None = Field(
        None, description="Restarts allowed before the JobSet fails (default 0)."
    )
    restart_strategy: Literal["Recreate", "BlockingRecreate", "InPlaceRestart"] | None = Field(
        None,
        description="How Jobs are recreated on a restart.",
        json_schema_extra={"default": "Recreate"},
    )
    rules: list[FailurePolicyRule] | None = Field(
        None, description="Rules tried in order; the first match decides."
    )


class StartupPolicy(WireModel):
    """Whether replicatedJobs start together or one after another (deprecated: dependsOn)."""

    startup_policy_order: Literal["AnyOrder", "InOrder"] = Field(
        description="AnyOrder: all at once; InOrder: each after the previous is ready."
    )


class Coordinator(WireModel):
    """The pod whose stable address every pod is told (a label on all of them)."""

    replicated_job: Str = Field(description="replicatedJob of the coordinator pod.")
    job_index: Int32 | None = Field(None, description="Index of the Job (default 0).")
    pod_index: Int32 | None = Field(None, description="Completion index of the pod (default 0).")


class RetentionPolicy(WireModel):
    """What happens to shared claims when the JobSet goes."""

    when_deleted: Literal["Delete", "Retain"] | None = Field(
        None, description="Delete the claims with the JobSet, or keep them."
    )


class VolumeClaimPolicy(WireModel):
    """PersistentVolumeClaims shared by every Job of the JobSet."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "message": VCP_NAMESPACE,
                    "rule": (
                        "!has(self.templates) || self.templates.all(t, !has(t.metadata) "
                        "|| !has(t.metadata.namespace))"
                    ),
                }
            ]
        }
    )

    templates: list[Mapping] | None = Field(
        None,
        max_length=50,
        description="Claims to create (core/v1 PersistentVolumeClaim; no namespace).",
        json_schema_extra={
            K8S_DEFINITION: "io.k8s.api.core.v1.PersistentVolumeClaim",
            "x-trainop-list": True,
        },
    )
    retention_policy: RetentionPolicy | None = Field(
        None, description="Whether the claims outlive the JobSet."
    )


# Spec-level CEL rules of the JobSet schema.
JOBSET_SPEC_RULES = (
    {
        "message": EXCLUSIVE_STARTUP,
        "rule": (
            "!(has(self.startupPolicy) && self.startupPolicy.startupPolicyOrder == 'InOrder' "
            "&& has(self.replicatedJobs) && self.replicatedJobs.exists(x, has(x.dependsOn)))"
        ),
    },
)


class JobSetSpec(WireModel):
    """The desired state of a JobSet: its groups of Jobs and how they start, succeed and fail."""

    model_config = ConfigDict(
        json_schema_extra={"x-kubernetes-validations": [dict(r) for r in JOBSET_SPEC_RULES]}
    )

    replicated_jobs: list[ReplicatedJob] | None = Field(
        None, description="Groups of Jobs.", json_schema_extra=list_map("name")
    )
    network: Network | None = Field(
        None, description="Pod DNS. Immutable.", json_schema_extra=immutable(IMMUTABLE_VALUE)
    )
    success_policy: SuccessPolicy | None = Field(
        None,
        description="When the JobSet succeeds. Immutable.",
        json_schema_extra=immutable(IMMUTABLE_VALUE),
    )
    failure_policy: FailurePolicy | None = Field(
        None,
        description="What a Job failure does. Immutable.",
        json_schema_extra=immutable(IMMUTABLE_VALUE),
    )
    startup_policy: StartupPolicy | None = Field(
        None, description="Start order. Immutable.", json_schema_extra=immutable(IMMUTABLE_VALUE)
    )
    suspend: Bool | None = Field(None, description="True removes the Jobs' pods until resumed.")
    coordinator: Coordinator | None = Field(None, description="The coordinator pod.")
    managed_by: Str | None = Field(None, description="Controller that reconciles the JobSet.")
    ttl_seconds_after_finished: NonNegative | None = Field(
        None, description="Seconds after finishing before the JobSet is deleted."
    )
    volume_claim_policies: list[VolumeClaimPolicy] | None = Field(
        None,
        max_length=50,
        description="Claims shared by the Jobs. Immutable.",
        json_schema_extra={**ATOMIC, **immutable(IMMUTABLE_VALUE)},
    )


class ReplicatedJobStatus(WireModel):
    """Job counts of one replicatedJob, as the JobSet controller reports them."""

    name: Str = Field(description="The replicatedJob.")
    ready: Int32 = Field(description="Jobs whose pods are ready.")
    succeeded: Int32 = Field(description="Jobs that succeeded.")
    failed: Int32 = Field(description="Jobs that failed.")
    active: Int32 = Field(description="Jobs with running pods.")
    suspended: Int32 = Field(description="Jobs that are suspended.")


class JobSetStatus(WireModel):
    """Observed state of a JobSet; fields beyond those Trainer reads are kept as they are."""

    model_config = ConfigDict(extra="allow")

    conditions: list[Mapping] | None = Field(
        None,
        description="Conditions (Completed, Failed, Suspended, StartupPolicy...).",
        json_schema_extra={
            K8S_DEFINITION: "io.k8s.apimachinery.pkg.apis.meta.v1.Condition",
            "x-trainop-list": True,
            **list_map("type"),
        },
    )
    restarts: Int32 | None = Field(None, description="Restarts of the whole JobSet so far.")
    restarts_count_towards_max: Int32 | None = Field(
        None, description="Restarts that count toward failurePolicy.maxRestarts."
    )
    terminal_state: Str | None = Field(None, description="Completed or Failed once finished.")
    replicated_jobs_status: list[ReplicatedJobStatus] | None = Field(
        None, description="Job counts per replicatedJob.", json_schema_extra=list_map("name")
    )


class JobSetMeta(WireModel):
    """Metadata of a JobSet as the CRD sees it (any ObjectMeta)."""

    model_config = ConfigDict(extra="allow")


class JobSet(WireModel):
    """A JobSet: a group of Jobs run as one unit."""

    api_version: Literal["jobset.x-k8s.io/v1alpha2"] = Field(
        description="Always jobset.x-k8s.io/v1alpha2."
    )
    kind: Literal["JobSet"] = Field(description="Always JobSet.")
    metadata: JobSetMeta = Field(default_factory=JobSetMeta, description="Standard metadata.")
    spec: JobSetSpec | None = Field(None, description="Desired state.")
    status: JobSetStatus | None = Field(None, description="Observed state.")
