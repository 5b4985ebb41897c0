"""DGL (DGLJob): partition the graph, then train (``dgljob-spec.md`` 1.4, 2.2-2.4).

``partitionMode: DGL-API``: a Partitioner (the Worker template with the Launcher's command) runs
first, the idle workers and their Services once it Succeeded; the launcher's ``dglrun`` reaches
them through ``kubexec.sh`` and the files (IPs from ``topology.ip_address``). ``Skip``: the
launcher alone. Qihoo's labels, init containers and paths stay, so its images work unchanged.
Local mode: other ``FrameworkOptions`` (``exec_command``, no init containers; note 060).
"""

from __future__ import annotations

import copy

from trainop.api import kinds
from trainop.api.types import Job, ReplicaSpec
from trainop.frameworks import base, container_templates
from trainop.frameworks.base import EnvVar, ExecAccess, FrameworkOptions, Peers, Replica, Stage
from trainop.frameworks.topology import Topology, ip_address

Wire = base.Wire
_CONFIG = ("config-volume", "/etc/dgl")  # the files' volume and mountPath
_KUBE = {"name": "kube-volume", "mountPath": "/opt/kube"}
_DATASET = {"name": "dataset-volume", "mountPath": "/dgl_workspace/dataset"}
_SHM = {"name": "shm-volume", "mountPath": "/dev/shm"}
_KUBEXEC = '#!/bin/sh\nset -x\nPOD_NAME=$1; shift\n{exec} ${{POD_NAME}} -- /bin/sh -c "$*"'
_MOUNTS = {"Launcher": [_KUBE, _DATASET], "Partitioner": [_SHM, _KUBE], "Worker": [_SHM]}
_FILES = (("kubexec.sh", 0o555), ("hostfile", 0o444), ("partfile", 0o444), ("leadfile", 0o444))
_ITEMS = {"Launcher": _FILES[:3], "Partitioner": _FILES, "Worker": _FILES}
_INITS = {"Launcher": 3, "Partitioner": 1}  # of ``dgl_init_container_template``'s containers
_ENV = {  # by replica type ("Skip": the launcher of a Skip job); {root}: the mode's root
    "Launcher": (("DGL_OPERATOR_KUBEXEC_PATH", "{root}/etc/dgl/kubexec.sh"),
                 ("DGL_OPERATOR_HOSTFILE_PATH", "{root}/etc/dgl/hostfile"),
                 ("DGL_OPERATOR_KUBECTL_PATH", "{root}/opt/kube/kubectl"),
                 ("DGL_OPERATOR_ENV", "1")),
    "Skip": (("DGL_OPERATOR_PHASE_ENV", "Launcher_Workload"),),
    "Partitioner": (("DGL_OPERATOR_ENV", "1"), ("DGL_OPERATOR_PHASE_ENV", "Partitioner")),
    "Worker": (("DGL_OPERATOR_ENV", "1"),),
}  # fmt: skip


def _role(job: Job, replica_type: str) -> str:
    """The replica type, or ``Skip`` for the launcher of a job that skips partitioning."""
    skips = getattr(job.spec, "partition_mode", None) == "Skip"
    return "Skip" if skips and replica_type == "Launcher" else replica_type


def env(
    *, job: Job, replica: Replica, topology: Topology, options: FrameworkOptions
) -> tuple[EnvVar, ...]:
    """``DGL_OPERATOR_*``: the launcher's paths (Skip: its workload phase), the phase flags."""
    pairs = _ENV.get(_role(job, replica.type), ())
    return tuple(EnvVar(name, value.format(root=options.container_root)) for name, value in pairs)


def files(*, job: Job, peers: Peers, topology: Topology, options: FrameworkOptions) -> Wire:
    """``kubexec.sh``; ``hostfile`` once every worker has an IP; ``partfile``, ``leadfile``."""

    def line(replica_type: str, index: int | None, port: int, tail: str = "") -> str | None:
        found = ip_address(topology, job=job, replica_type=replica_type, index=index,
                           pod_ips=peers.ips)  # fmt: skip
        name = base.replica_name_of(job, replica_type, index)
        return f"{found} {port} {name}{tail}\n" if found else None

    slots = getattr(job.spec, "slots_per_worker", None) or 1
    hosts = [
        line("Worker", k, topology.port(job=job, replica_type="Worker", index=k), f" slots={slots}")
        for k in range(base.replicas_of(job, "Worker"))
    ]
    port, specs = kinds.DGLJOB.default_port, job.spec.replica_specs
    single = {"partfile": "Partitioner", "leadfile": "Launcher"}
    found = {key: line(rt, None, port) if rt in specs else "" for key, rt in single.items()}
    hostfile = "".join(h for h in hosts if h) if all(hosts) else ""
    kubexec = _KUBEXEC.format(exec=options.exec_command)
    return {"kubexec.sh": kubexec, "hostfile": hostfile, **{k: v or "" for k, v in found.items()}}


def derive_replicas(*, job: Job) -> dict[str, ReplicaSpec]:
    """DGL-API: the Partitioner, the Worker template with the Launcher's command and no ports."""
    specs = job.spec.replica_specs
    if _role(job, "Launcher") == "Skip" or "Worker" not in specs or "Launcher" not in specs:
        return {}
    template = copy.deepcopy(specs["Worker"].template)
    first = base.first_container(template)
    launcher = base.first_container(specs["Launcher"].template)
    for key in ("command", "args", "ports"):
        first.pop(key, None)
        if key in launcher and key != "ports":
            first[key] = copy.deepcopy(launcher[key])
    own = specs.get("Partitioner")
    policy = (own.restart_policy if own else None) or "Never"
    return {"Partitioner": ReplicaSpec(replicas=1, template=template, restart_policy=policy)}


def decorate_pod(*, job: Job, replica: Replica, pod: Wire, options: FrameworkOptions) -> Wire:
    """Qihoo's labels, launcher resources, init containers and volumes (none for a Skip
    launcher); workers idle with ``sleep 365d`` unless they have a command."""
    result = base.editable(pod)
    spec, meta, first = result["spec"], result["metadata"], base.first_container(result)
    meta["labels"] |= {"dgl-replica-name": meta["name"], "dgl-replica-type": replica.type}
    meta["annotations"] = {**(meta.get("annotations") or {}), "dgl-replica": replica.type}
    if replica.type == "Launcher" and not first.get("resources"):
        first["resources"] = {key: {"cpu": "1", "memory": "2Gi"} for key in ("requests", "limits")}
    if replica.type == "Worker" and not first.get("command"):
        first["command"], first["args"] = ["sleep"], ["365d"]
    role = _role(job, replica.type)
    mounts = _MOUNTS.get(role, [])
    volumes = [_shm(job) if m is _SHM else {"name": m["name"], "emptyDir": {}} for m in mounts]
    inits = _init_containers(job, options)[: _INITS[role]] if role in _INITS else []
    base.append_to(spec, "initContainers", inits)
    base.append_to(spec, "volumes", volumes)
    base.append_to(first, "volumeMounts", mounts)
    return copy.deepcopy(result)  # no object twice in the body (YAML dumps stay alias-free)


def _shm(job: Job) -> Wire:
    """Memory-backed ``/dev/shm``: half the Worker's memory limit in whole G (none: no limit)."""
    worker = base.first_container(job.spec.replica_specs["Worker"].template)
    size = base.quantity_bytes(((worker.get("resources") or {}).get("limits") or {}).get("memory"))
    limit = {} if size is None else {"sizeLimit": f"{size // 10**9 // 2}G"}
    return {"name": _SHM["name"], "emptyDir": {"medium": "Memory", **limit}}


def _init_containers(job: Job, options: FrameworkOptions) -> list[Wire]:
    """The launcher's: kubectl, then the watchers (the partitioner takes kubectl only)."""
    values = {"Namespace": job.metadata.namespace or "default"}
    values["KubectlDownloadImage"] = options.dgl_kubectl_download_image
    values["WatcherLoopImage"] = options.dgl_watcher_loop_image
    return container_templates.render(options.dgl_init_container_template, values)


FRAMEWORK = base.Framework(
    info=kinds.DGLJOB,
    primary=("Launcher",),
    env=env,
    env_containers="first",
    decorate_pod=decorate_pod,
    config_files=base.ConfigFiles(files, *_CONFIG, _ITEMS, {"Launcher": "Worker"}),
    exec_access=(ExecAccess("Launcher", "Worker"), ExecAccess("Partitioner", "Launcher")),
    name_label="app",
    service_types=("Worker",),
    unindexed_types=("Launcher", "Partitioner"),
    starts_after={"Worker": "Partitioner"},
    derive_replicas=derive_replicas,
    running_types=("Partitioner",),
    stages=(
        Stage("Partitioning", "{kind} {name} is partitioning its graph.", started=("Partitioner",)),
        Stage("Partitioned", "{kind} {name} partitioned its graph.", succeeded=("Partitioner",)),
        Stage("Training", "{kind} {name} is training.", started=("Launcher", "Worker")),
    ),
)
