"""Names, labels, selectors and owner references of everything a job owns (spec 1.2, 4.4-4.6).

Pod and Service names are deterministic (``<job>-<rt>-<i>``, via ``frameworks.topology``), which
is what lets the engine do without upstream's expectations. Neighbours: ``desired`` builds
bodies with these; ``observed`` reads the labels back.
"""

from __future__ import annotations

from typing import Any

from trainop.api.types import Job
from trainop.frameworks.base import Framework, Replica, replica_name_of

OPERATOR_NAME_LABEL = "training.kubeflow.org/operator-name"
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
REPLICA_TYPE_LABEL = "training.kubeflow.org/replica-type"
REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"
JOB_ROLE_LABEL = "training.kubeflow.org/job-role"


def pod_name(job: Job, replica: Replica) -> str:
    """The name of a replica's pod and of its Service."""
    return replica_name_of(job, replica.type, replica.index)


def job_labels(job: Job, framework: Framework) -> dict[str, str]:
    """The two labels every child of the job carries."""
    return {
        OPERATOR_NAME_LABEL: framework.info.controller_name,
        JOB_NAME_LABEL: (job.metadata.name or "").replace("/", "-"),
    }


def replica_labels(job: Job, framework: Framework, replica: Replica) -> dict[str, str]:
    """Job labels plus replica type (lower-cased) and index (when the replica has one)."""
    labels = {**job_labels(job, framework), REPLICA_TYPE_LABEL: replica.type.lower()}
    if replica.index is not None:
        labels[REPLICA_INDEX_LABEL] = str(replica.index)
    return labels


def is_primary(job: Job, framework: Framework, replica: Replica) -> bool:
    """Whether a pod gets ``job-role: master``: index 0 of the framework's primary type."""
    return framework.primary_type(job) == replica.type and replica.position == 0


def selector(job: Job, framework: Framework, replica_type: str) -> str:
    """The string label selector of one replica type's pods (keys sorted, as upstream)."""
    labels = {**job_labels(job, framework), REPLICA_TYPE_LABEL: replica_type.lower()}
    return ",".join(f"{key}={value}" for key, value in sorted(labels.items()))


def owner_reference(job: Job) -> dict[str, Any]:
    """The controller owner reference every child carries."""
    return {
        "apiVersion": job.api_version,
        "kind": job.kind,
        "name": job.metadata.name,
        "uid": job.metadata.uid or "",
        "controller": True,
        "blockOwnerDeletion": True,
    }


def owned_metadata(job: Job, name: str, **extra: Any) -> dict[str, Any]:
    """Metadata of a child object: name, the job's namespace, owner reference, ``extra``."""
    meta = {"name": name, "namespace": job.metadata.namespace or "default"}
    return {**meta, **extra, "ownerReferences": [owner_reference(job)]}
