"""PaddlePaddle (PaddleJob): ``PADDLE_MASTER`` endpoint in collective or PS mode (spec 7.4).

Every container gets ``PADDLE_JOB_ID`` and ``PADDLE_NNODES``. The endpoint is master 0 when a
Master exists (PS mode) and worker 0 otherwise (collective mode); the endpoint replica itself
learns its address from the downward API (``POD_IP_DUMMY``), every other replica gets the
endpoint's host. PS mode adds ``PADDLE_SERVER_NUM``/``PADDLE_TRAINER_NUM``. The elastic policy is
accepted but unused, as upstream.
"""

from __future__ import annotations

from trainop.api import kinds
from trainop.api.types import Job
from trainop.frameworks import base
from trainop.frameworks.base import EnvVar, FrameworkOptions, Replica
from trainop.frameworks.topology import Topology


def _endpoint(job: Job, replica: Replica, topology: Topology) -> list[EnvVar]:
    leader = "Master" if "Master" in job.spec.replica_specs else "Worker"
    port = topology.port(job=job, replica_type=leader, index=0)
    if replica == Replica(leader, 0):
        return [
            EnvVar("POD_IP_DUMMY", field_path="status.podIP"),
            EnvVar("PADDLE_MASTER", f"$(POD_IP_DUMMY):{port}"),
        ]
    host = topology.host(job=job, replica_type=leader, index=0)
    return [EnvVar("PADDLE_MASTER", f"{host}:{port}")]


def env(
    *, job: Job, replica: Replica, topology: Topology, options: FrameworkOptions
) -> tuple[EnvVar, ...]:
    """Job id, node count and the master endpoint for ``paddle.distributed.launch``."""
    del options  # no operator-wide settings
    found = [
        EnvVar("PYTHONUNBUFFERED", "1"),
        EnvVar("PADDLE_JOB_ID", job.metadata.name or ""),
        EnvVar("PADDLE_NNODES", str(base.total_replicas(job))),
        *_endpoint(job, replica, topology),
    ]
    if "Master" in job.spec.replica_specs:
        role = "PADDLE_SERVER_NUM" if replica.type == "Master" else "PADDLE_TRAINER_NUM"
        found.append(EnvVar(role, "1"))
    return tuple(found)


FRAMEWORK = base.Framework(info=kinds.PADDLEJOB, primary=("Master", "Worker"), env=env)
