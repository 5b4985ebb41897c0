"""MXNet (MXJob, as of upstream v1.8.1): ``MX_CONFIG`` and the ``DMLC_*`` variables (7.7).

``MX_CONFIG`` is JSON with ``cluster`` (per type, a list of ``{url, port}`` from the topology),
``labels`` (per type, the template's ``tuner-server-key`` annotation) and ``task``. The
scheduler (or, for a single-worker job, the worker) drives Running and Succeeded; ``MXTune``
jobs have no scheduler and never succeed by themselves.
"""

from __future__ import annotations

import json
from typing import Any

from trainop.api import kinds
from trainop.api.types import Job
from trainop.frameworks import base
from trainop.frameworks.base import EnvVar, FrameworkOptions, Messages, Replica
from trainop.frameworks.topology import Topology

_LABEL_ANNOTATION = "tuner-server-key"


def _label(job: Job, replica_type: str) -> str:
    template = job.spec.replica_specs[replica_type].template
    annotations = (template.get("metadata") or {}).get("annotations") or {}
    return str(annotations.get(_LABEL_ANNOTATION, ""))


def _config(job: Job, replica: Replica, topology: Topology) -> dict[str, Any]:
    types = sorted(job.spec.replica_specs, key=str.lower)
    cluster = {
        rt.lower(): [
            {
                "url": topology.host(job=job, replica_type=rt, index=i),
                "port": topology.port(job=job, replica_type=rt, index=i),
            }
            for i in range(base.replicas_of(job, rt))
        ]
        for rt in types
    }
    labels = {rt.lower(): _label(job, rt) for rt in types}
    task = {"type": replica.type.lower(), "index": replica.position}
    return {"cluster": cluster, "labels": labels, "task": task}


def env(
    *, job: Job, replica: Replica, topology: Topology, options: FrameworkOptions
) -> tuple[EnvVar, ...]:
    """``MX_CONFIG`` plus the DMLC parameter-server variables."""
    del options  # no operator-wide settings
    has_scheduler = "Scheduler" in job.spec.replica_specs
    root_port = topology.port(job=job, replica_type="Scheduler", index=0) if has_scheduler else 0
    root_uri = topology.host(job=job, replica_type="Scheduler", index=0) if has_scheduler else ""
    found = [
        EnvVar("MX_CONFIG", json.dumps(_config(job, replica, topology), separators=(",", ":"))),
        EnvVar("DMLC_PS_ROOT_PORT", str(root_port)),
        EnvVar("DMLC_PS_ROOT_URI", root_uri),
        EnvVar("DMLC_NUM_SERVER", str(base.replicas_of(job, "Server"))),
        EnvVar("DMLC_NUM_WORKER", str(base.replicas_of(job, "Worker"))),
        EnvVar("DMLC_ROLE", replica.type.lower()),
        EnvVar("DMLC_USE_KUBERNETES", "1"),
    ]
    if replica.type == "Worker":
        found.append(EnvVar("DMLC_WORKER_ID", str(replica.position)))
    return tuple(found)


FRAMEWORK = base.Framework(
    info=kinds.MXJOB,
    primary=("Scheduler", "Worker"),
    env=env,
    messages=Messages(
        worker_running="{kind} {name} is running.",
        worker_succeeded="{kind} {name} is successfully completed.",
        failed="mxjob {name} is failed because {count} {rtype} replica(s) failed.",
    ),
)
