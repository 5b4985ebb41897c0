"""MPI (MPIJob, legacy kubectl-delivery design): launcher, idle workers, hostfile (spec 7.5).

Workers idle until ``mpirun`` on the launcher reaches them through ``kubexec.sh`` (exec by pod
name: no Services). The plugin writes the launcher's env and its files; the engine mounts them
from the ConfigMap ``<job>-config`` (``config_files``) and gives the launcher its account and
RBAC (``exec_access``). Local mode differs only through ``FrameworkOptions`` (``container_root``,
``exec_command``, ``mpi_kubectl_delivery``, ``mpi_launcher_env``).
"""

from __future__ import annotations

from trainop.api import kinds
from trainop.api.types import Job
from trainop.frameworks import base, mpirun
from trainop.frameworks.base import EnvVar, FrameworkOptions, PodWording, Replica, Wire
from trainop.frameworks.topology import Topology

_CONFIG_MOUNT = {"name": "mpi-job-config", "mountPath": "/etc/mpi"}
_KUBECTL_MOUNT = {"name": "mpi-job-kubectl", "mountPath": "/opt/kube"}
# Byte for byte upstream's scripts (no trailing newline; a GPU launcher's discover line is
# followed by an empty line), so tools that compare or checksum them see no difference.
_KUBEXEC = (
    '#!/bin/sh\nset -x\nPOD_NAME=$1\nshift\n{exec} ${{POD_NAME}}{container} -- /bin/sh -c "$*"'
)


def _launcher_container(job: Job) -> Wire:
    return (base.containers_of(job.spec.replica_specs["Launcher"].template) or [{}])[0]


def _is_gpu_launcher(job: Job) -> bool:
    limits = (_launcher_container(job).get("resources") or {}).get("limits") or {}
    return any("gpu" in key for key in limits)


def env(
    *, job: Job, replica: Replica, topology: Topology, options: FrameworkOptions
) -> tuple[EnvVar, ...]:
    """The launcher's rsh agent, hostfile and ``mpi_launcher_env``; workers get nothing."""
    del topology  # peers are reached by pod name through kubectl exec, not by address
    if replica.type != "Launcher":
        return ()
    config = options.container_root + _CONFIG_MOUNT["mountPath"]
    agent = f"{config}/kubexec.sh"
    found = mpirun.remote_shell(mpirun.OPEN_MPI, agent=agent)
    found.append(("OMPI_MCA_orte_default_hostfile", f"{config}/hostfile"))
    if not _is_gpu_launcher(job):
        found += mpirun.NO_GPUS
    user = {e.get("name") for e in _launcher_container(job).get("env") or []}
    extra = dict(mpirun.remote_shell("Intel", agent=agent, bootstrap="rsh"))
    extra |= dict(options.mpi_launcher_env)
    found += [(name, value) for name, value in extra.items() if name not in user]
    return tuple(EnvVar(name, value) for name, value in found)


def files(*, job: Job, peers: base.Peers, topology: Topology, options: FrameworkOptions) -> Wire:
    """``hostfile`` (GPU launcher, then workers, by pod name), ``kubexec.sh``, the discovery."""
    slots = getattr(job.spec, "slots_per_worker", None) or 1
    launcher = base.replica_name_of(job, "Launcher", None)
    hosts = ([launcher] if _is_gpu_launcher(job) else []) + base.replica_names_of(job, "Worker")
    main = getattr(job.spec, "main_container", None)
    return {
        "hostfile": mpirun.hostfile(hosts, slots),
        "kubexec.sh": _KUBEXEC.format(
            exec=options.exec_command, container=f" --container {main}" if main else ""
        ),
        "discover_hosts.sh": _discover_hosts(job, peers.running, slots),
    }


def _discover_hosts(job: Job, running_pods: frozenset[str], slots: int) -> str:
    """Horovod's host discovery: the GPU launcher, then the Running workers sorted by name."""
    script = "#!/bin/sh"
    if _is_gpu_launcher(job):
        script += f"\necho {base.replica_name_of(job, 'Launcher', None)}:{slots}\n"
    workers = sorted(running_pods & {*base.replica_names_of(job, "Worker")})
    return script + "".join(f"\necho {pod}:{slots}" for pod in workers)


def decorate_pod(*, job: Job, replica: Replica, pod: Wire, options: FrameworkOptions) -> Wire:
    """Workers idle with ``sleep 365d``; the launcher gets kubectl (``mpi_kubectl_delivery``)."""
    result = base.editable(pod)
    spec, first = result["spec"], (base.containers_of(result) or [{}])[0]
    if replica.type == "Launcher":
        if options.mpi_kubectl_delivery:
            base.append_to(spec, "initContainers", [_delivery(job, options)])
            base.append_to(spec, "volumes", [{"name": _KUBECTL_MOUNT["name"], "emptyDir": {}}])
            base.append_to(first, "volumeMounts", [dict(_KUBECTL_MOUNT)])
    elif not first.get("command"):
        first["command"], first["args"] = ["sleep"], ["365d"]
    return result


def _delivery(job: Job, options: FrameworkOptions) -> Wire:
    resources = {"cpu": "100m", "memory": "512Mi", "ephemeral-storage": "5Gi"}
    return {
        "name": "kubectl-delivery",
        "image": options.mpi_kubectl_delivery_image,
        "imagePullPolicy": "IfNotPresent",
        "env": [
            EnvVar("TARGET_DIR", "/opt/kube").to_wire(),
            EnvVar("NAMESPACE", job.metadata.namespace or "").to_wire(),
        ],
        "volumeMounts": [dict(_KUBECTL_MOUNT), dict(_CONFIG_MOUNT)],
        "resources": {"limits": dict(resources), "requests": dict(resources)},
    }


def handles(*, job: Job) -> bool:
    """v1 semantics only: a job with ``sshAuthMountPath`` is a v2beta1 job (design 100)."""
    return getattr(job.spec, "ssh_auth_mount_path", None) is None


FRAMEWORK = base.Framework(
    info=kinds.MPIJOB,
    primary=("Launcher",),
    env=env,
    env_containers="first",
    validate=base.api_validation_errors,
    handles=handles,
    decorate_pod=decorate_pod,
    config_files=base.ConfigFiles(
        render=files,
        volume=_CONFIG_MOUNT["name"],
        mount_path=_CONFIG_MOUNT["mountPath"],
        items={
            "Launcher": (("kubexec.sh", 0o555), ("hostfile", 0o444), ("discover_hosts.sh", 0o555)),
            "Worker": (("kubexec.sh", 0o555),),
        },
    ),
    exec_access=(base.ExecAccess(source="Launcher", target="Worker"),),
    name_label="app",
    creates_services=False,
    unindexed_types=("Launcher",),
    creation_order=("Worker", "Launcher"),
    pod_wording={
        "Worker": PodWording(
            created=("SuccessfulCreatePod", "Created worker pod: {name}"),
            create_failed=("MPIJobFailed", "worker pod created failed: {error}"),
            restart_policy_warning=None,
            scheduler_name_warning="SettedPodTemplateSchedulerName",
        ),
        "Launcher": PodWording(
            created=("MPIJobRunning", "launcher pod created success: {name}"),
            create_failed=("MPIJobFailed", "launcher pod created failed: {error}"),
            restart_policy_warning="SettedPodTemplateRestartPolicy",
            scheduler_name_warning="SettedPodTemplateSchedulerName",
        ),
    },
)
