"""The v1 fields a TrainJob and its runtime cannot express, each named with what happens instead.

A conversion never drops a field silently: every v1 setting whose behaviour v2 does not keep
exactly is a ``DroppedField`` (its wire path and why), printed by ``trainop convert`` as a YAML
comment and on stderr. Settings v2 keeps (``suspend``, ``activeDeadlineSeconds``, the
MultiKueue ``managedBy``, a restart policy a Job expresses) are not listed.

The job read here is the one the user wrote, before defaulting: a default the user never set
(``cleanPodPolicy: None``) is not reported as dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

from trainop.api.kinds import info_of
from trainop.api.trainer import constants
from trainop.api.types import Job, RunPolicy
from trainop.frameworks.base import Framework

MANAGED_BY_V1_OPERATOR = "kubeflow.org/training-operator"


@dataclass(frozen=True, slots=True)
class DroppedField:
    """One v1 field v2 cannot express: its path in the v1 manifest and what v2 does instead."""

    path: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


_RUN_POLICY = {
    "clean_pod_policy": (
        "cleanPodPolicy",
        "v2 has no pod cleanup policy: when the JobSet finishes it deletes the Jobs still "
        "running and keeps the finished pods until the TrainJob is deleted",
    ),
    "ttl_seconds_after_finished": (
        "ttlSecondsAfterFinished",
        "a finished TrainJob is never deleted by the controller; delete it yourself",
    ),
    "backoff_limit": (
        "backoffLimit",
        "counted per replica type: each replicatedJob's Job gets this backoffLimit (its failed "
        "pods plus the in-place restarts of its running OnFailure pods), not one count over "
        "the whole job",
    ),
    "scheduling_policy": (
        "schedulingPolicy",
        "gang scheduling is not converted: a runtime's podGroupPolicy needs the scheduler "
        "plugin configured on the cluster; add one to the runtime if you use it",
    ),
}


def run_policy_fields(job: Job) -> list[DroppedField]:
    """The run-policy settings of ``job`` (as written) that v2 cannot express."""
    policy = job.spec.run_policy or RunPolicy()
    base = "spec.runPolicy"
    found = [
        DroppedField(f"{base}.{wire}", reason)
        for field, (wire, reason) in _RUN_POLICY.items()
        if getattr(policy, field) is not None
    ]
    managed_by = policy.managed_by
    if managed_by not in (None, MANAGED_BY_V1_OPERATOR) and managed_by != _MULTIKUEUE:
        detail = f"{managed_by!r} is not a TrainJob managedBy value; the TrainJob leaves it unset"
        found.append(DroppedField(f"{base}.managedBy", detail))
    if getattr(job.spec, "clean_pod_policy", None) is not None:  # MPIJob's, DGLJob's old copy
        found.append(DroppedField("spec.cleanPodPolicy", _RUN_POLICY["clean_pod_policy"][1]))
    return found


_MULTIKUEUE = constants.MANAGED_BY_MULTIKUEUE


def replica_path(job: Job, replica_type: str, rest: str = "") -> str:
    """The wire path of a replica type's field: ``spec.pytorchReplicaSpecs[Worker].<rest>``."""
    field = info_of(job).replica_specs_field
    return f"spec.{field}[{replica_type}]" + (f".{rest}" if rest else "")


def framework_fields(job: Job, framework: Framework, *, mpi: bool) -> list[DroppedField]:
    """What the kind's plugin does in v1 that a runtime cannot: elastic scaling, ignored worker
    failures, generated files and exec into peers (MPI's have their v2 counterparts), and
    replica types without pods."""
    found = []
    if getattr(job.spec, "elastic_policy", None) is not None:
        found.append(DroppedField("spec.elasticPolicy", _ELASTIC))
    if getattr(job.spec, "enable_dynamic_worker", None):
        found.append(DroppedField("spec.enableDynamicWorker", _DYNAMIC))
    if not mpi and framework.config_files is not None:
        for rt, files in framework.config_files.items.items():
            if rt in job.spec.replica_specs:
                names = ", ".join(name for name, _ in files)
                found.append(DroppedField(replica_path(job, rt), _FILES.format(names)))
    for access in () if mpi else framework.exec_access:
        if access.source in job.spec.replica_specs:
            found.append(DroppedField(replica_path(job, access.source), _EXEC))
    for rt, spec in job.spec.replica_specs.items():
        if spec.replicas == 0:
            found.append(DroppedField(replica_path(job, rt, "replicas"), _NO_PODS))
    return found


_ELASTIC = (
    "the replica count is fixed at the Worker replicas: no scaling between minReplicas and "
    "maxReplicas and no HorizontalPodAutoscaler (metrics); the rendezvous env it sets is kept"
)
_DYNAMIC = "a failed worker fails the JobSet: v2 cannot ignore one replicatedJob's failures"
_FILES = (
    "v1 mounts files it generates ({}) from a ConfigMap; a runtime cannot create them, so "
    "the pods find no such files"
)
_EXEC = (
    "v1 lets it exec into its peers' pods (a ServiceAccount, Role and RoleBinding); a "
    "runtime cannot grant that, so its remote commands fail"
)
_NO_PODS = "0: no replicatedJob (a v2 job runs at least one pod), so this type runs no pod"
