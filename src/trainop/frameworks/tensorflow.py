"""TensorFlow (TFJob): ``TF_CONFIG`` in the default container, chief-or-worker-0 success.

``TF_CONFIG`` (spec 7.1) is compact JSON: ``cluster`` (one sorted key per replica type, each a
list of qualified ``host:port`` addresses from the topology), ``task`` and ``environment``; the
sparse form for ``enableDynamicWorker`` lists only the task's own worker address. A job with
exactly one replica in total gets no ``TF_CONFIG``. Without Chief/Master, the job succeeds when
worker 0 exits 0 (unless ``successPolicy: AllWorkers``) or when every worker succeeded.
"""

from __future__ import annotations

import json
from typing import Any

from trainop.api import kinds
from trainop.api.types import Job
from trainop.frameworks import base
from trainop.frameworks.base import EnvVar, FrameworkOptions, Messages, PodOutcome, Replica
from trainop.frameworks.topology import Topology

_KNOWN_TYPES = kinds.TFJOB.replica_types


def _addresses(job: Job, replica_type: str, topology: Topology) -> list[str]:
    return [
        f"{topology.host(job=job, replica_type=replica_type, index=i, qualified=True)}:"
        f"{topology.port(job=job, replica_type=replica_type, index=i)}"
        for i in range(base.replicas_of(job, replica_type))
    ]


def _dense(job: Job, replica: Replica, topology: Topology) -> dict[str, Any]:
    cluster = {
        rt.lower(): _addresses(job, rt, topology)
        for rt in sorted(job.spec.replica_specs, key=str.lower)
    }
    task = {"type": replica.type.lower(), "index": replica.position}
    return {"cluster": cluster, "task": task, "environment": "cloud"}


def _sparse(job: Job, replica: Replica, topology: Topology) -> dict[str, Any]:
    own = _addresses(job, replica.type, topology)[replica.position]
    ps_type = next((rt for rt in job.spec.replica_specs if rt == "PS"), None)
    cluster: dict[str, Any] = {"worker": {}, "ps": []}
    if replica.type == "PS":
        cluster["ps"] = [own]
    elif replica.type == "Worker":
        cluster["worker"] = {str(replica.position): own}
        cluster["ps"] = _addresses(job, ps_type, topology) if ps_type else None
    return {"cluster": cluster, "task": {"type": replica.type.lower(), "index": replica.position}}


def env(
    *, job: Job, replica: Replica, topology: Topology, options: FrameworkOptions
) -> tuple[EnvVar, ...]:
    """``TF_CONFIG`` for a distributed job; nothing for a single-replica job."""
    del options  # no operator-wide settings
    if sum(base.replicas_of(job, rt) for rt in _KNOWN_TYPES) == 1:
        return ()
    dynamic = bool(getattr(job.spec, "enable_dynamic_worker", False))
    config = (_sparse if dynamic else _dense)(job, replica, topology)
    return (EnvVar("TF_CONFIG", json.dumps(config, separators=(",", ":"))),)


def succeeded(*, job: Job, pods: tuple[PodOutcome, ...]) -> bool:
    """Without a chief, worker 0 exiting 0 completes the job unless successPolicy is AllWorkers."""
    if any(rt in job.spec.replica_specs for rt in ("Chief", "Master")):
        return False
    if getattr(job.spec, "success_policy", "") == "AllWorkers":
        return False
    return any(
        pod.replica == Replica("Worker", 0) and pod.phase == "Succeeded" and pod.exit_code == 0
        for pod in pods
    )


def tolerates_failure(*, job: Job, replica_type: str) -> bool:
    """With ``enableDynamicWorker``, failed workers do not fail the job (other types do)."""
    return replica_type == "Worker" and bool(getattr(job.spec, "enable_dynamic_worker", False))


_NAMESPACED = "{kind} {namespace}/{name}"
FRAMEWORK = base.Framework(
    info=kinds.TFJOB,
    primary=("Chief", "Master", "Worker"),
    env=env,
    env_containers="default",
    messages=Messages(
        running=f"{_NAMESPACED} is running.",
        succeeded=f"{_NAMESPACED} successfully completed.",
        failed=f"{_NAMESPACED} has failed because {{count}} {{rtype}} replica(s) failed.",
    ),
    succeeded=succeeded,
    tolerates_failure=tolerates_failure,
)
