"""MPIJob ``kubeflow.org/v2beta1``: the SSH-launcher MPIJob of mpi-operator v0.8, beside v1.

One CRD (``mpijobs.kubeflow.org``) serves both versions with conversion strategy ``None``, so
the API server only rewrites ``apiVersion`` between them: a job's *semantics* cannot come from
the version a client happens to read it through. They come from the spec's shape instead:
``spec.sshAuthMountPath`` is present on every job created through v2beta1 (its CRD default) and
on every object mpi-operator ever stored, and on no v1 job (``is_v2beta1_job``). Both versions'
schemas hold the union of the fields, so an object read through either version and written back
loses nothing (docs/design/100-mpijob-v2beta1.md).

This module holds the v2beta1 model, its controller-side defaults (applied in memory, never
written back, as upstream) and its validation (field paths and words of spec section 1.4).
Pure: no I/O, no clock.
"""

from __future__ import annotations

import re
from collections.abc import Mapping as AbstractMapping
from typing import Any, Literal

from pydantic import Field

from trainop.api.fields import Bool, FieldPath, Int32, Str, WireModel
from trainop.api.types import JobStatus, ObjectMeta, ReplicaSpec, RunPolicy
from trainop.errors import FieldError, aggregate

VERSION = "v2beta1"
API_VERSION = f"kubeflow.org/{VERSION}"
SEMANTICS_FIELD = "sshAuthMountPath"  # its presence selects v2beta1 semantics

MPIImplementation = Literal["OpenMPI", "Intel", "MPICH"]
LauncherCreationPolicy = Literal["AtStartup", "WaitForWorkersReady"]
IMPLEMENTATIONS: tuple[str, ...] = ("Intel", "MPICH", "OpenMPI")  # sorted, as upstream lists them

MANAGED_BY_MPI_OPERATOR = "kubeflow.org/mpi-operator"
MANAGED_BY_MULTIKUEUE = "kueue.x-k8s.io/multikueue"
DEFAULT_SSH_AUTH_MOUNT_PATH = "/root/.ssh"
LAUNCHER, WORKER = "Launcher", "Worker"

_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


class MPIJobV2Beta1Spec(WireModel):
    """MPIJob v2beta1: a launcher Job running ``mpirun`` over SSH to workers running sshd."""

    slots_per_worker: Int32 | None = Field(
        None,
        description="Slots per worker in the hostfile (default 1; 0 allowed).",
        json_schema_extra={"default": 1},
    )
    run_launcher_as_worker: Bool | None = Field(
        None,
        description="The launcher is also an MPI host (first hostfile line); default false.",
        json_schema_extra={"default": False},
    )
    run_policy: RunPolicy | None = Field(
        None, description="Cleanup, and the launcher Job's deadline, back-off limit and TTL."
    )
    replica_specs: dict[Str, ReplicaSpec] = Field(
        alias="mpiReplicaSpecs", description="Replica types: Launcher (exactly 1) and Worker."
    )
    ssh_auth_mount_path: Str | None = Field(
        None,
        description=(
            "Directory the job's SSH key Secret is mounted at in the launcher and workers: the "
            "~/.ssh of the user the pods run as. Its presence marks v2beta1 semantics."
        ),
        json_schema_extra={"default": DEFAULT_SSH_AUTH_MOUNT_PATH},
    )
    launcher_creation_policy: LauncherCreationPolicy | None = Field(
        None,
        description=(
            "AtStartup (default): the launcher Job is created with the workers; "
            "WaitForWorkersReady: only once every worker pod is Ready."
        ),
        json_schema_extra={"default": "AtStartup"},
    )
    mpi_implementation: MPIImplementation | None = Field(
        None,
        description="OpenMPI (default), Intel or MPICH: hostfile format and launcher env.",
        json_schema_extra={"default": "OpenMPI"},
    )
    # v1-only fields, kept so that a v1 job read through v2beta1 and written back keeps them.
    clean_pod_policy: Literal["All", "Running", "None"] | None = Field(
        None, description="v1 field (deprecated copy of runPolicy.cleanPodPolicy); unused here."
    )
    main_container: Str | None = Field(None, description="v1 field; unused by v2beta1 jobs.")


class MPIJobV2Beta1(WireModel):
    """An MPIJob of ``kubeflow.org/v2beta1`` (mpi-operator's API)."""

    api_version: Literal["kubeflow.org/v2beta1"] = Field(description="kubeflow.org/v2beta1.")
    kind: Literal["MPIJob"] = Field(description="MPIJob.")
    metadata: ObjectMeta = Field(default_factory=ObjectMeta, description="Standard metadata.")
    spec: MPIJobV2Beta1Spec = Field(description="Desired state of the job.")
    status: JobStatus | None = Field(None, description="Observed state of the job.")

    @property
    def run_policy(self) -> RunPolicy:
        return self.spec.run_policy or RunPolicy()


def is_v2beta1_job(obj: AbstractMapping[str, Any]) -> bool:
    """Whether the MPIJob mapping ``obj`` has v2beta1 (SSH) semantics, whatever its apiVersion."""
    spec = obj.get("spec")
    return isinstance(spec, AbstractMapping) and spec.get(SEMANTICS_FIELD) is not None


def parse(obj: AbstractMapping[str, Any]) -> MPIJobV2Beta1:
    """The typed v2beta1 job of a mapping read through either version (apiVersion rewritten)."""
    return MPIJobV2Beta1.model_validate({**obj, "apiVersion": API_VERSION})


def as_v1_manifest(obj: AbstractMapping[str, Any]) -> dict[str, Any]:
    """A v2beta1 MPIJob manifest as the API server stores it and v1 reads it: the v2beta1
    CRD's marking default (``sshAuthMountPath``) applied, ``apiVersion`` v1. Any other
    manifest is returned as a copy, unchanged. For clients that submit through v1
    (``trainop run``)."""
    result = dict(obj)
    if obj.get("apiVersion") != API_VERSION or obj.get("kind") != "MPIJob":
        return result
    spec = obj.get("spec")
    if spec is not None and not isinstance(spec, AbstractMapping):
        return {**result, "apiVersion": "kubeflow.org/v1"}  # not a spec: parsing says so
    defaulted = dict(spec or {})
    if defaulted.get(SEMANTICS_FIELD) is None:  # the CRD drops a null, then defaults it
        defaulted[SEMANTICS_FIELD] = DEFAULT_SSH_AUTH_MOUNT_PATH
    return {**result, "apiVersion": "kubeflow.org/v1", "spec": defaulted}


def apply_defaults(job: MPIJobV2Beta1) -> MPIJobV2Beta1:
    """The controller's in-memory defaults (spec 1.2/1.3); the input is not changed."""
    spec = job.spec
    specs = dict(spec.replica_specs)
    for rtype, replicas, restart in ((LAUNCHER, 1, "OnFailure"), (WORKER, 0, "Never")):
        if rtype in specs:
            current = specs[rtype]
            specs[rtype] = current.model_copy(
                update={
                    "replicas": replicas if current.replicas is None else current.replicas,
                    "restart_policy": current.restart_policy or restart,
                }
            )
    policy = spec.run_policy or RunPolicy()
    if policy.clean_pod_policy is None:
        policy = policy.model_copy(update={"clean_pod_policy": "None"})
    return job.model_copy(
        update={
            "spec": spec.model_copy(
                update={
                    "replica_specs": specs,
                    "run_policy": policy,
                    "slots_per_worker": 1
                    if spec.slots_per_worker is None
                    else spec.slots_per_worker,
                    "run_launcher_as_worker": bool(spec.run_launcher_as_worker),
                    "ssh_auth_mount_path": (
                        DEFAULT_SSH_AUTH_MOUNT_PATH
                        if spec.ssh_auth_mount_path is None
                        else spec.ssh_auth_mount_path
                    ),
                    "launcher_creation_policy": spec.launcher_creation_policy or "AtStartup",
                    "mpi_implementation": spec.mpi_implementation or "OpenMPI",
                }
            )
        }
    )


def workers(job: MPIJobV2Beta1) -> int:
    """The Worker replica count (0 without a Worker entry)."""
    spec = job.spec.replica_specs.get(WORKER)
    return 0 if spec is None or spec.replicas is None else spec.replicas


def validate(job: MPIJobV2Beta1) -> list[FieldError]:
    """Problems of a *defaulted* job, in upstream's order and words (spec 1.4)."""
    return _name_errors(job) + spec_errors(job.spec)


def wire_spec_errors(spec: AbstractMapping[str, Any]) -> list[FieldError]:
    """The spec rules of ``validate`` for a spec read through v1 (admission, ``trainop
    validate``): defaulted as the controller defaults it, then checked."""
    job = MPIJobV2Beta1.model_validate({"apiVersion": API_VERSION, "kind": "MPIJob", "spec": spec})
    return spec_errors(apply_defaults(job).spec)


def spec_errors(spec: MPIJobV2Beta1Spec) -> list[FieldError]:
    """The spec part of ``validate`` (a defaulted spec)."""
    errors: list[FieldError] = []
    path = FieldPath("spec")
    specs_path = path.child("mpiReplicaSpecs")
    if not spec.replica_specs:
        errors.append(FieldError(str(specs_path), "Required", "must have replica specs"))
    else:
        errors += _replica_errors(spec.replica_specs, specs_path)
    slots = spec.slots_per_worker
    if slots is None:
        errors.append(
            FieldError(
                str(path.child("slotsPerWorker")),
                "Required",
                "must have number of slots per worker",
            )
        )
    elif slots < 0:
        errors.append(_at_least(path.child("slotsPerWorker"), slots, 0))
    errors += _run_policy_errors(spec.run_policy or RunPolicy(), path.child("runPolicy"))
    if not spec.ssh_auth_mount_path:
        errors.append(
            FieldError(
                str(path.child("sshAuthMountPath")),
                "Required",
                "must have a mount path for SSH credentials",
            )
        )
    return errors


def validation_message(errors: list[FieldError]) -> str:
    """The ``ValidationError`` event message: upstream's aggregate, cut to 1024 bytes."""
    message = f"Found validation errors: {aggregate(errors)}"
    encoded = message.encode()
    if len(encoded) > 1024:
        message = encoded[:1021].decode(errors="ignore") + "..."
    return message


def _name_errors(job: MPIJobV2Beta1) -> list[FieldError]:
    name = job.metadata.name or ""
    label = f"{name}-worker-{max(workers(job), 1) - 1}"
    problems = []
    if len(label) > 63:
        problems.append("must be no more than 63 characters")
    if not _DNS1035.match(label):
        problems.append(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
            "with an alphabetic character, and end with an alphanumeric character"
        )
    if not problems:
        return []
    detail = (
        f'will not able to create pod and service with invalid DNS label "{label}": '
        + ", ".join(problems)
    )
    return [FieldError("metadata.name", "Invalid", detail, value=name)]


def _replica_errors(specs: dict[str, ReplicaSpec], path: FieldPath) -> list[FieldError]:
    errors: list[FieldError] = []
    if LAUNCHER not in specs:
        errors.append(
            FieldError(str(path.key(LAUNCHER)), "Required", "must have Launcher replica spec")
        )
    for rtype in (LAUNCHER, WORKER):
        spec = specs.get(rtype)
        if spec is None:
            continue
        where = path.key(rtype)
        if spec.replicas is None:
            errors.append(
                FieldError(
                    str(where.child("replicas")), "Required", "must define number of replicas"
                )
            )
        if spec.restart_policy not in ("Never", "OnFailure"):
            detail = f'"{spec.restart_policy}": supported values: "Never", "OnFailure"'
            errors.append(FieldError(str(where.child("restartPolicy")), "NotSupported", detail))
        template_spec = spec.template.get("spec")
        containers = template_spec.get("containers") if isinstance(template_spec, dict) else None
        if not containers:
            errors.append(
                FieldError(
                    str(where.child("template").child("spec").child("containers")),
                    "Required",
                    "must define at least one container",
                )
            )
        if rtype == LAUNCHER and spec.replicas is not None and spec.replicas != 1:
            errors.append(
                FieldError(
                    str(where.child("replicas")), "Invalid", "must be 1", value=spec.replicas
                )
            )
        if rtype == WORKER and spec.replicas is not None and spec.replicas <= 0:
            errors.append(_at_least(where.child("replicas"), spec.replicas, 1))
    return errors


def _run_policy_errors(policy: RunPolicy, path: FieldPath) -> list[FieldError]:
    errors: list[FieldError] = []
    if policy.clean_pod_policy is None:
        errors.append(
            FieldError(str(path.child("cleanPodPolicy")), "Required", "must have clean Pod policy")
        )
    for name, value in (
        ("ttlSecondsAfterFinished", policy.ttl_seconds_after_finished),
        ("activeDeadlineSeconds", policy.active_deadline_seconds),
        ("backoffLimit", policy.backoff_limit),
    ):
        if value is not None and value < 0:
            errors.append(_at_least(path.child(name), value, 0))
    managed = policy.managed_by
    if managed is not None and managed not in (MANAGED_BY_MPI_OPERATOR, MANAGED_BY_MULTIKUEUE):
        detail = (
            f'"{managed}": supported values: "{MANAGED_BY_MPI_OPERATOR}", "{MANAGED_BY_MULTIKUEUE}"'
        )
        errors.append(FieldError(str(path.child("managedBy")), "NotSupported", detail))
    return errors


def _at_least(path: FieldPath, value: int, bound: int) -> FieldError:
    return FieldError(str(path), "Invalid", f"{value}: must be greater than or equal to {bound}")
