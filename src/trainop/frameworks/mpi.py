"""MPI (MPIJob, legacy kubectl-delivery design): launcher, idle workers, hostfile (spec 7.5).

Workers idle until ``mpirun`` on the launcher reaches them through ``kubexec.sh`` (exec by pod
name: no Services). Extra objects: ConfigMap ``<job>-config`` and the launcher's RBAC. Local
mode differs only through ``FrameworkOptions`` (``container_root``, ``mpi_exec_command``,
``mpi_kubectl_delivery``, ``mpi_launcher_env``).
"""

from __future__ import annotations

from trainop.api import kinds
from trainop.api.types import Job
from trainop.frameworks import base
from trainop.frameworks.base import EnvVar, FrameworkOptions, PodWording, Replica, Wire
from trainop.frameworks.topology import Topology

_CONFIG_VOLUME, _KUBECTL_VOLUME = "mpi-job-config", "mpi-job-kubectl"
_CONFIG_MOUNT = {"name": _CONFIG_VOLUME, "mountPath": "/etc/mpi"}
_KUBECTL_MOUNT = {"name": _KUBECTL_VOLUME, "mountPath": "/opt/kube"}
_RBAC = "rbac.authorization.k8s.io/v1"
_OWNED = (("v1", "ConfigMap"), ("v1", "ServiceAccount"), (_RBAC, "Role"), (_RBAC, "RoleBinding"))
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
    found = [
        EnvVar("OMPI_MCA_plm_rsh_agent", f"{config}/kubexec.sh"),
        EnvVar("OMPI_MCA_orte_default_hostfile", f"{config}/hostfile"),
    ]
    if not _is_gpu_launcher(job):
        found += [EnvVar("NVIDIA_VISIBLE_DEVICES"), EnvVar("NVIDIA_DRIVER_CAPABILITIES")]
    user = {e.get("name") for e in _launcher_container(job).get("env") or []}
    extra = {"I_MPI_HYDRA_BOOTSTRAP": "rsh", "I_MPI_HYDRA_BOOTSTRAP_EXEC": f"{config}/kubexec.sh"}
    extra |= dict(options.mpi_launcher_env)
    found += [EnvVar(name, value) for name, value in extra.items() if name not in user]
    return tuple(found)


def _workers(job: Job) -> list[str]:
    return [base.replica_name_of(job, "Worker", i) for i in range(base.replicas_of(job, "Worker"))]


def _config_map(job: Job, running_pods: frozenset[str], options: FrameworkOptions) -> Wire:
    slots = getattr(job.spec, "slots_per_worker", None) or 1
    launcher = base.replica_name_of(job, "Launcher", None)
    hosts = ([launcher] if _is_gpu_launcher(job) else []) + _workers(job)
    main = getattr(job.spec, "main_container", None)
    data = {
        "hostfile": "".join(f"{host} slots={slots}\n" for host in hosts),
        "kubexec.sh": _KUBEXEC.format(
            exec=options.mpi_exec_command, container=f" --container {main}" if main else ""
        ),
        "discover_hosts.sh": _discover_hosts(job, running_pods, slots),
    }
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(job, "config"), "data": data}


def _discover_hosts(job: Job, running_pods: frozenset[str], slots: int) -> str:
    """Horovod's host discovery: the GPU launcher, then the Running workers sorted by name."""
    script = "#!/bin/sh"
    if _is_gpu_launcher(job):
        script += f"\necho {base.replica_name_of(job, 'Launcher', None)}:{slots}\n"
    workers = sorted(running_pods & {*_workers(job)})
    return script + "".join(f"\necho {pod}:{slots}" for pod in workers)


def _meta(job: Job, suffix: str) -> Wire:
    return {"name": f"{job.metadata.name}-{suffix}", "labels": {"app": job.metadata.name}}


def extra_objects(
    *, job: Job, running_pods: frozenset[str], options: FrameworkOptions
) -> tuple[Wire, ...]:
    """The launcher's ServiceAccount, ConfigMap, Role and RoleBinding.

    The account is the one the launcher template names (else ``<job>-launcher``); as upstream
    it is created when missing and an existing one is used as it is (``reused_kinds``).
    """
    template = job.spec.replica_specs["Launcher"].template.get("spec") or {}
    account = template.get("serviceAccountName") or f"{job.metadata.name}-launcher"
    labels = {"app": job.metadata.name}
    service_account = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": account, "labels": labels},
    }
    return (
        service_account,
        _config_map(job, running_pods, options),
        *base.exec_rbac(
            job=job, metadata=_meta(job, "launcher"), account=account, pods=_workers(job)
        ),
    )


def decorate_pod(*, job: Job, replica: Replica, pod: Wire, options: FrameworkOptions) -> Wire:
    """Workers idle with ``sleep 365d``; the launcher gets the config (and kubectl delivery)."""
    result = base.editable_copy(pod)
    spec, first = result["spec"], (base.containers_of(result) or [{}])[0]
    items = {"kubexec.sh": 0o555}
    if replica.type == "Launcher":
        items |= {"hostfile": 0o444, "discover_hosts.sh": 0o555}
        spec.setdefault("serviceAccountName", f"{job.metadata.name}-launcher")
        if options.mpi_kubectl_delivery:
            base.append_to(spec, "initContainers", [_delivery(job, options)])
            base.append_to(spec, "volumes", [{"name": _KUBECTL_VOLUME, "emptyDir": {}}])
            base.append_to(first, "volumeMounts", [_KUBECTL_MOUNT])
    elif not first.get("command"):
        first["command"], first["args"] = ["sleep"], ["365d"]
    base.append_to(first, "volumeMounts", [_CONFIG_MOUNT])
    keys = [{"key": key, "path": key, "mode": mode} for key, mode in items.items()]
    config = {"name": f"{job.metadata.name}-config", "items": keys}
    base.append_to(spec, "volumes", [{"name": _CONFIG_VOLUME, "configMap": config}])
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
        "volumeMounts": [_KUBECTL_MOUNT, _CONFIG_MOUNT],
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
    extra_objects=extra_objects,
    decorate_pod=decorate_pod,
    creates_services=False,
    unindexed_types=("Launcher",),
    creation_order=("Worker", "Launcher"),
    extra_kinds=_OWNED,
    reused_kinds=("ServiceAccount",),
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
