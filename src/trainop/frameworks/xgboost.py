"""XGBoost (XGBoostJob): Rabit tracker on the master; LightGBM reads ``WORKER_ADDRS`` (7.3).

Every container gets ``MASTER_ADDR``/``MASTER_PORT`` of master 0, ``WORLD_SIZE`` (all replicas),
``RANK`` (master: its index; worker: index + masters) and, when more than one replica runs,
``WORKER_PORT`` and ``WORKER_ADDRS`` (``WORLD_SIZE - 1`` worker hosts, comma-joined). The master
drives Running and Succeeded.
"""

from __future__ import annotations

from trainop.api import kinds
from trainop.api.types import Job
from trainop.frameworks import base
from trainop.frameworks.base import EnvVar, FrameworkOptions, Replica
from trainop.frameworks.topology import Topology


def env(
    *, job: Job, replica: Replica, topology: Topology, options: FrameworkOptions
) -> tuple[EnvVar, ...]:
    """Master address, world size and rank; worker addresses for multi-replica jobs."""
    del options  # no operator-wide settings
    world = base.total_replicas(job)
    offset = base.replicas_of(job, "Master") if replica.type == "Worker" else 0
    found = [
        EnvVar("MASTER_PORT", str(topology.port(job=job, replica_type="Master", index=0))),
        EnvVar("MASTER_ADDR", topology.host(job=job, replica_type="Master", index=0)),
        EnvVar("WORLD_SIZE", str(world)),
        EnvVar("RANK", str(replica.position + offset)),
        EnvVar("PYTHONUNBUFFERED", "1"),
    ]
    if world > 1:
        hosts = [topology.host(job=job, replica_type="Worker", index=i) for i in range(world - 1)]
        port = topology.port(job=job, replica_type="Worker", index=0)
        found += [EnvVar("WORKER_PORT", str(port)), EnvVar("WORKER_ADDRS", ",".join(hosts))]
    return tuple(found)


FRAMEWORK = base.Framework(info=kinds.XGBOOSTJOB, primary=("Master",), env=env)
