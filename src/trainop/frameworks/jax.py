"""JAX (JAXJob): workers only; worker 0 is the ``jax.distributed`` coordinator (spec 7.6).

Every container gets ``COORDINATOR_ADDRESS`` (host only) and ``COORDINATOR_PORT`` of worker 0,
``NUM_PROCESSES`` (all replicas) and ``PROCESS_ID`` (the replica index). The job succeeds when
every worker succeeded.
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
    """Coordinator address and process numbering for ``jax.distributed.initialize``."""
    del options  # no operator-wide settings
    return (
        EnvVar("PYTHONUNBUFFERED", "1"),
        EnvVar("COORDINATOR_PORT", str(topology.port(job=job, replica_type="Worker", index=0))),
        EnvVar("COORDINATOR_ADDRESS", topology.host(job=job, replica_type="Worker", index=0)),
        EnvVar("NUM_PROCESSES", str(base.total_replicas(job))),
        EnvVar("PROCESS_ID", str(replica.position)),
    )


FRAMEWORK = base.Framework(info=kinds.JAXJOB, primary=("Worker",), env=env)
