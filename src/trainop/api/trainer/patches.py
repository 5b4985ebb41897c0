"""``TrainJob.spec.runtimePatches``: what a manager (a user, Kueue, the SDK) changes in the
runtime for one TrainJob (spec section 1.3).

A patch reaches only the JobSet's labels and annotations and, per replicatedJob (by name), the
Job and pod template metadata and a fixed subset of the pod spec (``PodSpecPatch``). Most pod
fields of a patch are immutable once the same manager has set them for the same replicatedJob
(CEL ``self == oldSelf``); ``trainer.validation`` enforces that, comparing deeply.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from trainop.api.fields import K8S_DEFINITION, Mapping, Str, Time, WireModel
from trainop.api.k8s_schema import OBJECT_META
from trainop.api.trainer.markers import (
    ATOMIC,
    IMMUTABLE,
    Name,
    NonNegativeInt64,
    env_field,
    k8s,
    list_map,
)


class ContainerPatch(WireModel):
    """Changes to one container of the runtime's pod template."""

    name: Name = Field(description="Container to patch; it must exist in the runtime.")
    env: list[Mapping] | None = env_field()
    volume_mounts: list[Mapping] | None = Field(
        None,
        max_length=128,
        description="Volume mounts (core/v1 VolumeMount), merged by name.",
        json_schema_extra={**k8s("VolumeMount", many=True), **list_map("name")},
    )
    security_context: Mapping | None = Field(
        None,
        description="Container security context (core/v1 SecurityContext).",
        json_schema_extra=k8s("SecurityContext"),
    )


def _patch_field(description: str, extra: dict[str, Any], max_length: int | None = None) -> Any:
    return Field(None, description=description, json_schema_extra=extra, max_length=max_length)


class PodSpecPatch(WireModel):
    """Changes to the pod spec of one replicatedJob of the runtime."""

    service_account_name: Annotated[Str, Field(max_length=253)] | None = _patch_field(
        "Service account of the pods. Immutable.", IMMUTABLE
    )
    volumes: list[Mapping] | None = _patch_field(
        "Volumes (core/v1 Volume), merged by name. Immutable.",
        {**k8s("Volume", many=True), **list_map("name"), **IMMUTABLE},
        max_length=128,
    )
    init_containers: list[ContainerPatch] | None = _patch_field(
        "Init containers to patch, by name. Immutable.",
        {**list_map("name"), **IMMUTABLE},
        max_length=64,
    )
    containers: list[ContainerPatch] | None = _patch_field(
        "Containers to patch, by name. Immutable.",
        {**list_map("name"), **IMMUTABLE},
        max_length=64,
    )
    image_pull_secrets: list[Mapping] | None = _patch_field(
        "Image pull secrets (core/v1 LocalObjectReference). Immutable.",
        {**k8s("LocalObjectReference", many=True), **list_map("name"), **IMMUTABLE},
        max_length=64,
    )
    security_context: Mapping | None = _patch_field(
        "Pod security context (core/v1 PodSecurityContext). Immutable.",
        {**k8s("PodSecurityContext"), **IMMUTABLE},
    )
    node_selector: dict[str, Str] | None = Field(
        None, description="Node labels the pods must match."
    )
    affinity: Mapping | None = Field(
        None,
        description="Scheduling affinity (core/v1 Affinity).",
        json_schema_extra=k8s("Affinity"),
    )
    tolerations: list[Mapping] | None = Field(
        None,
        max_length=128,
        description="Tolerations (core/v1 Toleration); replaces the whole list.",
        json_schema_extra={**k8s("Toleration", many=True), **ATOMIC},
    )
    scheduling_gates: list[Mapping] | None = Field(
        None,
        max_length=16,
        description="Scheduling gates (core/v1 PodSchedulingGate), merged by name.",
        json_schema_extra={**k8s("PodSchedulingGate", many=True), **list_map("name")},
    )
    termination_grace_period_seconds: NonNegativeInt64 | None = _patch_field(
        "Seconds a pod gets to stop. Immutable.", IMMUTABLE
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
        json_schema_extra=IMMUTABLE,
    )
    time: Time | None = Field(None, description="When the patch last changed (set on admission).")
    training_runtime_spec: TrainingRuntimeSpecPatch | None = Field(
        None, description="Changes to the runtime's spec."
    )
