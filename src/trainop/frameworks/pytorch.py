"""PyTorch (PyTorchJob): torchrun env, elastic ``PET_*`` settings and the elastic HPA (7.2, 9).

With a Master, every container gets ``MASTER_ADDR``/``MASTER_PORT`` (and ``PET_`` twins),
``WORLD_SIZE`` = replicas x nprocPerNode (1 unless an integer), ``RANK``/``PET_NODE_RANK``
(worker: index + 1); then ``PET_NPROC_PER_NODE`` and either the elastic ``PET_RDZV_*`` block or
``PET_NNODES``. Worker pods of a job with a Master wait for it in an ``init-pytorch`` container.
Without a Master the job succeeds as soon as one elastic worker succeeded.
"""

from __future__ import annotations

import copy
from typing import Any

from trainop.api import kinds
from trainop.api.jobs import ElasticPolicy
from trainop.api.types import Job
from trainop.frameworks import base, container_templates
from trainop.frameworks.base import EnvVar, FrameworkOptions, PodOutcome, Replica, Wire
from trainop.frameworks.topology import Topology


def _elastic(job: Job) -> ElasticPolicy | None:
    policy = getattr(job.spec, "elastic_policy", None)
    return policy if isinstance(policy, ElasticPolicy) else None


def _master_env(job: Job, replica: Replica, topology: Topology) -> list[EnvVar]:
    nproc = str(getattr(job.spec, "nproc_per_node", None) or "")
    world = base.total_replicas(job) * (int(nproc) if nproc.isdigit() else 1)
    rank = str(replica.position + (1 if replica.type == "Worker" else 0))
    port = str(topology.port(job=job, replica_type="Master", index=0))
    host = topology.host(job=job, replica_type="Master", index=0)
    return [
        *(EnvVar(name, port) for name in ("MASTER_PORT", "PET_MASTER_PORT")),
        *(EnvVar(name, host) for name in ("MASTER_ADDR", "PET_MASTER_ADDR")),
        EnvVar("WORLD_SIZE", str(world)),
        *(EnvVar(name, rank) for name in ("RANK", "PET_NODE_RANK")),
    ]


def _elastic_env(job: Job, policy: ElasticPolicy, topology: Topology) -> list[EnvVar]:
    host = policy.rdzv_host or topology.host(job=job, replica_type="Worker", index=0)
    port = policy.rdzv_port or topology.port(job=job, replica_type="Worker", index=0)
    found = [
        EnvVar("PET_RDZV_ENDPOINT", f"{host}:{port}"),
        EnvVar("PET_RDZV_BACKEND", policy.rdzv_backend or "c10d"),
        EnvVar("PET_NNODES", f"{policy.min_replicas}:{policy.max_replicas}"),
    ]
    optional = {
        "PET_MAX_RESTARTS": policy.max_restarts,
        "PET_NPROC_PER_NODE": policy.n_proc_per_node,
        "PET_RDZV_ID": policy.rdzv_id,
    }
    found += [EnvVar(name, str(value)) for name, value in optional.items() if value is not None]
    if policy.rdzv_conf is not None:
        conf = ",".join(f"{c.key}={c.value}" for c in policy.rdzv_conf)
        found.append(EnvVar("PET_RDZV_CONF", conf))
    if policy.standalone:
        found.append(EnvVar("PET_STANDALONE", ""))
    return found


def env(
    *, job: Job, replica: Replica, topology: Topology, options: FrameworkOptions
) -> tuple[EnvVar, ...]:
    """torchrun's environment for one replica (spec 7.2, in upstream's order)."""
    del options  # no operator-wide settings
    found = [EnvVar("PYTHONUNBUFFERED", "1")]
    if "Master" in job.spec.replica_specs:
        found += _master_env(job, replica, topology)
    nproc = getattr(job.spec, "nproc_per_node", None)
    if nproc is not None:
        found.append(EnvVar("PET_NPROC_PER_NODE", str(nproc)))
    policy = _elastic(job)
    if policy is not None:
        found += _elastic_env(job, policy, topology)
    else:
        found.append(EnvVar("PET_NNODES", str(base.total_replicas(job))))
    return tuple(found)


def succeeded(*, job: Job, pods: tuple[PodOutcome, ...]) -> bool:
    """Elastic without a Master: one succeeded worker completes the job."""
    if "Master" in job.spec.replica_specs or _elastic(job) is None:
        return False
    return any(pod.replica.type == "Worker" and pod.phase == "Succeeded" for pod in pods)


def render_init_containers(template: str, *, master: str, image: str, max_tries: int) -> list[Wire]:
    """The init containers ``template`` (upstream's fields ``MasterAddr``,
    ``InitContainerImage``, ``MaxTries``) describes for a job whose master is ``master``;
    ``InvalidTemplateError`` as ``container_templates.render``."""
    values = {"MasterAddr": master, "InitContainerImage": image, "MaxTries": str(max_tries)}
    return container_templates.render(template, values)


def decorate_pod(*, job: Job, replica: Replica, pod: Wire, options: FrameworkOptions) -> Wire:
    """Worker pods of a job with a Master first wait until the master's name resolves."""
    if replica.type != "Worker" or "Master" not in job.spec.replica_specs:
        return pod
    if not options.wait_for_peer_dns:
        return pod
    result = base.editable(pod)
    master = base.replica_name_of(job, "Master", 0)
    containers = render_init_containers(
        options.pytorch_init_container_template,
        master=master,
        image=options.pytorch_init_container_image,
        max_tries=options.pytorch_init_container_max_tries,
    )
    base.append_to(result["spec"], "initContainers", containers)
    return result


def extra_objects(
    *, job: Job, running_pods: frozenset[str], options: FrameworkOptions
) -> tuple[Wire, ...]:
    """An autoscaling/v2 HPA over the Worker replicas when ``elasticPolicy.metrics`` is set."""
    policy = _elastic(job)
    if policy is None or policy.metrics is None:
        return ()
    name = job.metadata.name
    spec: dict[str, Any] = {
        "scaleTargetRef": {"kind": job.kind, "name": name, "apiVersion": job.api_version},
        "minReplicas": policy.min_replicas,
        "maxReplicas": policy.max_replicas,
        "metrics": copy.deepcopy([dict(metric) for metric in policy.metrics]),  # not the job's
    }
    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler"}
    return ({**hpa, "metadata": {"name": name}, "spec": spec},)


FRAMEWORK = base.Framework(
    info=kinds.PYTORCHJOB,
    primary=("Master", "Worker"),
    env=env,
    succeeded=succeeded,
    decorate_pod=decorate_pod,
    extra_objects=extra_objects,
    deletes_extras_on_suspend=True,
    extra_object_kinds=(("autoscaling/v2", "HorizontalPodAutoscaler"),),
)
