"""MPI plugin (spec §3.5, OpenMPI only): slots, SSH and the hostfile for ``mpirun``.

Active when ``mlPolicy.mpi`` is set. Enforce: the PodSet named ``node`` gets ``trainer.numNodes``
(minus one when the launcher also runs as a node); slots per host = the TrainJob's
``numProcPerNode``, else the GPU count when the runtime says 1 and there are several GPUs, else
the runtime's value; both ``node`` and ``launcher`` mount the SSH Secret, the launcher also the
hostfile ConfigMap at ``/etc/mpi`` and gets the four ``OMPI_MCA_*`` vars, then the pod
network's ``launcher_env`` (a local session's remote shell, note 133; only containers named
``node`` are touched). Build: the SSH Secret ``<tj>-mpi-ssh-auth`` (only when absent; its key pair
from ``new_ssh_keys``, the controller's generator) and the hostfile ``<tj>-mpi-hostfile``, one
``<host> slots=<n>`` line per host pod in template order.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping

from trainop.api.trainer import constants as c
from trainop.engine.trainer import containers as k
from trainop.engine.trainer.containers import Raw, Wire
from trainop.engine.trainer.info import RuntimeInfo
from trainop.engine.trainer.plugins import torch
from trainop.engine.trainer.plugins.base import (
    BuildContext,
    PlanError,
    Plugin,
    ValidateContext,
    Validation,
    object_meta,
)
from trainop.errors import FieldError

SSH_VOLUME, HOSTFILE_VOLUME = "mpi-ssh-auth", "mpi-hostfile"
HOSTFILE_DIR, HOSTFILE_KEY = "/etc/mpi", "hostfile"
SSH_SECRET_TYPE = "kubernetes.io/ssh-auth"
PRIVATE_KEY, PUBLIC_KEY = "ssh-privatekey", "ssh-publickey"


def policy(info: RuntimeInfo) -> Raw | None:
    mpi = info.ml_policy.get("mpi")
    return mpi if isinstance(mpi, Mapping) else None


def secret_name(info: RuntimeInfo) -> str:
    return f"{info.name}-mpi-ssh-auth"


def hostfile_name(info: RuntimeInfo) -> str:
    return f"{info.name}-mpi-hostfile"


def launcher_as_node(info: RuntimeInfo) -> bool:
    return bool((policy(info) or {}).get("runLauncherAsNode"))


def slots(info: RuntimeInfo) -> int:
    """Processes per host (§3.5 step 2)."""
    value = (info.trainer or {}).get("numProcPerNode")
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    runtime_value = (policy(info) or {}).get("numProcPerNode", 1)
    runtime_value = runtime_value if isinstance(runtime_value, int) else 1
    gpus = k.gpu_count(torch.runtime_resources(info))
    return gpus if runtime_value == 1 and gpus > 1 else runtime_value


def _ssh_volume(info: RuntimeInfo) -> Wire:
    items = [
        {"key": PRIVATE_KEY, "path": "id_rsa", "mode": 0o640},
        {"key": PUBLIC_KEY, "path": "id_rsa.pub", "mode": 0o644},
        {"key": PUBLIC_KEY, "path": "authorized_keys", "mode": 0o644},
    ]
    source = {"secretName": secret_name(info), "defaultMode": 0o400, "items": items}
    return {"name": SSH_VOLUME, "secret": source}


def _hostfile_volume(info: RuntimeInfo) -> Wire:
    items = [{"key": HOSTFILE_KEY, "path": HOSTFILE_KEY, "mode": 0o444}]
    return {"name": HOSTFILE_VOLUME, "configMap": {"name": hostfile_name(info), "items": items}}


def _launcher_env(slot_count: int) -> list[Wire]:
    return [
        k.env("OMPI_MCA_orte_default_hostfile", f"{HOSTFILE_DIR}/{HOSTFILE_KEY}"),
        k.env("OMPI_MCA_orte_keep_fqdn_hostnames", "true"),
        k.env("OMPI_MCA_orte_set_default_slots", str(slot_count)),
        k.env("OMPI_MCA_plm_rsh_args", "-o ConnectionAttempts=10"),
    ]


def enforce(info: RuntimeInfo) -> None:
    """§3.5 EnforceMLPolicy."""
    mpi = policy(info)
    if mpi is None:
        return
    implementation = mpi.get("mpiImplementation", c.MPI_OPENMPI)
    if implementation != c.MPI_OPENMPI:
        raise PlanError(f"MPI implementation for {implementation!r} doesn't supported")
    num_nodes = (info.trainer or {}).get("numNodes")
    node_set = info.pod_set(c.NODE)
    if node_set is not None and isinstance(num_nodes, int):
        node_set.count = max(num_nodes - 1, 1) if launcher_as_node(info) else num_nodes
    slot_count = slots(info)
    mount_path = str(mpi.get("sshAuthMountPath") or c.DEFAULT_SSH_AUTH_MOUNT_PATH)
    for pod_set in info.pod_sets:
        if pod_set.name not in (c.NODE, c.LAUNCHER):
            continue
        k.upsert(pod_set.volumes, _ssh_volume(info), "name")
        is_launcher = pod_set.name == c.LAUNCHER
        if is_launcher:
            k.upsert(pod_set.volumes, _hostfile_volume(info), "name")
        for container in pod_set.containers:
            if container.get("name") != c.NODE:
                continue
            k.upsert_mount(container, {"name": SSH_VOLUME, "mountPath": mount_path})
            if is_launcher:
                k.upsert_mount(container, {"name": HOSTFILE_VOLUME, "mountPath": HOSTFILE_DIR})
                k.upsert_env(container, _launcher_env(slot_count))
                k.upsert_env(container, [k.env(n, v) for n, v in info.network.launcher_env])


def hostfile(info: RuntimeInfo) -> str:
    """One ``<endpoint> slots=<n>`` line per host pod, PodSets in template order."""
    hosts = (c.NODE, c.LAUNCHER) if launcher_as_node(info) else (c.NODE,)
    slot_count = slots(info)
    lines = [
        f"{endpoint} slots={slot_count}\n"
        for pod_set in info.pod_sets
        if pod_set.name in hosts
        for endpoint in pod_set.endpoints()
    ]
    return "".join(lines)


def build(info: RuntimeInfo, context: BuildContext) -> list[Wire]:
    """The SSH Secret (only when absent) and the hostfile ConfigMap (every pass)."""
    if policy(info) is None:
        return []
    objects: list[Wire] = []
    if context.mpi_secret is None:
        private, public = context.new_ssh_keys()
        data = {
            PRIVATE_KEY: base64.b64encode(private.encode()).decode(),
            PUBLIC_KEY: base64.b64encode(public.encode()).decode(),
        }
        meta = object_meta(info, secret_name(info))
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": meta,
                "type": SSH_SECRET_TYPE,
                "immutable": True,
                "data": data,
            }
        )
    meta = object_meta(info, hostfile_name(info))
    objects.append(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": meta,
            "data": {HOSTFILE_KEY: hostfile(info)},
        }
    )
    return objects


def validate(info: RuntimeInfo, context: ValidateContext) -> Validation:
    """§3.5 Validate: reserved OMPI env; numNodes ≥ 2 with runLauncherAsNode needs both jobs."""
    if policy(info) is None:
        return [], []
    errors = torch.reserved_env_errors(info, c.MPI_ENV)
    num_nodes = (info.trainer or {}).get("numNodes")
    names = {p.name for p in info.pod_sets}
    if (
        isinstance(num_nodes, int)
        and num_nodes >= 2
        and launcher_as_node(info)
        and not {c.LAUNCHER, c.NODE} <= names
    ):
        detail = (
            "must have 1 when MPI trainingRuntime with enabled runLauncherAsNode does not have "
            "either launcher and node"
        )
        errors.append(FieldError("spec.trainer.numNodes", "Invalid", detail))
    return errors, []


PLUGIN = Plugin("MPI", enforce_ml_policy=enforce, build=build, validate=validate)
