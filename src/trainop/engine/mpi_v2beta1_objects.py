"""Every object an MPIJob v2beta1 owns, from the engine's shapes and the plugin's MPI parts.

A v2beta1 job owns (spec section 2): the headless Service ``<job>`` over the launcher and the
workers (``headless``), the ConfigMap ``<job>-config`` with the plugin's ``hostfile`` and
``discover_hosts.sh`` (``config_files``), the SSH Secret ``<job>-ssh`` (``ssh_auth``), the worker
Pods ``<job>-worker-<i>`` (sshd by default) and the launcher as a ``batch/v1`` Job
``<job>-launcher`` (``batch_jobs``) with the plugin's ``launcher_env``. ``desired_objects``
lists them in upstream's creation order; ``launcher_may_start`` is the
``launcherCreationPolicy`` gate. Every object carries the ``app`` label and the MPIJob as its
controller owner.

Pure: functions of the defaulted job, the key pair (an input) and what was observed.
Neighbours: ``mpi_v2beta1`` (the planner), ``mpi_v2beta1_gang`` (the PodGroup).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from trainop.api import mpi_v2beta1 as api
from trainop.engine import batch_jobs, config_files, headless, ssh_auth
from trainop.engine.actions import Wire
from trainop.frameworks import mpi_v2beta1 as plugin
from trainop.frameworks.base import SshKeys, append_to
from trainop.frameworks.options import FrameworkOptions

_CLUSTER = FrameworkOptions()
_CONFIG_FILES = (("hostfile", 0o444), ("discover_hosts.sh", 0o555))


def owner_reference(job: api.MPIJobV2Beta1) -> Wire:
    return {
        "apiVersion": api.API_VERSION,
        "kind": "MPIJob",
        "name": plugin.name_of(job),
        "uid": job.metadata.uid or "",
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _owned_metadata(job: api.MPIJobV2Beta1, name: str) -> Wire:
    return {
        "name": name,
        "namespace": job.metadata.namespace or "",
        "labels": {"app": plugin.name_of(job)},
        "ownerReferences": [owner_reference(job)],
    }


def _labels(job: api.MPIJobV2Beta1, role: str) -> dict[str, str]:
    return {
        plugin.OPERATOR_NAME_LABEL: plugin.OPERATOR_NAME,
        plugin.JOB_NAME_LABEL: plugin.name_of(job),
        plugin.JOB_ROLE_LABEL: role,
    }


def running_names(pods: Iterable[Mapping[str, Any]]) -> list[str]:
    """The names of the pods in phase Running."""
    return [
        str(p["metadata"]["name"])
        for p in pods
        if (p.get("status") or {}).get("phase") == "Running"
    ]


def service(job: api.MPIJobV2Beta1) -> Wire:
    """The headless Service giving the launcher and workers their DNS records."""
    selector = {plugin.OPERATOR_NAME_LABEL: plugin.OPERATOR_NAME}
    selector[plugin.JOB_NAME_LABEL] = plugin.name_of(job)
    metadata = _owned_metadata(job, plugin.name_of(job))
    return headless.service(metadata, selector, publish_not_ready=plugin.launcher_is_worker(job))


def config_map(
    job: api.MPIJobV2Beta1, running_workers: Iterable[str] = (), cluster_domain: str = ""
) -> Wire:
    data = {
        "hostfile": plugin.hostfile(job, cluster_domain),
        "discover_hosts.sh": plugin.discover_hosts(job, running_workers, cluster_domain),
    }
    metadata = _owned_metadata(job, config_files.name_of(job.metadata.name))
    return config_files.config_map(metadata, data)


def ssh_secret(job: api.MPIJobV2Beta1, keys: SshKeys) -> Wire:
    return ssh_auth.secret(_owned_metadata(job, f"{plugin.name_of(job)}-ssh"), keys)


def _ssh(job: api.MPIJobV2Beta1) -> tuple[Wire, Wire]:
    """The SSH volume (0600 only at upstream's default path) and its mount."""
    owner_only = job.spec.ssh_auth_mount_path == api.DEFAULT_SSH_AUTH_MOUNT_PATH
    secret_name = f"{plugin.name_of(job)}-ssh"
    volume = ssh_auth.volume(plugin.SSH_VOLUME, secret_name, owner_only=owner_only)
    return volume, {"name": plugin.SSH_VOLUME, "mountPath": job.spec.ssh_auth_mount_path}


def _pod_parts(job: api.MPIJobV2Beta1, rtype: str, hostname: str) -> tuple[Wire, Wire, Wire]:
    spec = job.spec.replica_specs[rtype]
    return headless.pod_from_template(
        spec.template,
        hostname=hostname,
        subdomain=plugin.name_of(job),
        restart_policy=spec.restart_policy,
    )


def worker_pod(job: api.MPIJobV2Beta1, index: int) -> Wire:
    """Worker ``index``: sshd unless the template runs something, the SSH keys mounted."""
    name = plugin.worker_name(job, index)
    metadata, spec, first = _pod_parts(job, api.WORKER, name)
    offset = 1 if plugin.launcher_is_worker(job) else 0
    metadata["labels"] = {
        **(metadata.get("labels") or {}),
        **_labels(job, "worker"),
        plugin.REPLICA_INDEX_LABEL: str(index + offset),
    }
    namespace = job.metadata.namespace or ""
    metadata["name"], metadata["namespace"] = name, namespace
    metadata["ownerReferences"] = [owner_reference(job)]
    search = f"{plugin.name_of(job)}.{namespace}.svc.cluster.local"  # literal, as upstream
    append_to(spec.setdefault("dnsConfig", {}), "searches", [search])
    if not first.get("command") and not first.get("args"):
        first["command"] = list(plugin.SSHD_COMMAND)
    append_to(first, "env", [{"name": plugin.ROLE_ENV, "value": "worker"}])
    volume, mount = _ssh(job)
    append_to(first, "volumeMounts", [mount])
    append_to(spec, "volumes", [volume])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def launcher_job(
    job: api.MPIJobV2Beta1, *, suspended: bool = False, options: FrameworkOptions = _CLUSTER
) -> Wire:
    """The launcher ``batch/v1`` Job: runPolicy's limits, the config and the SSH keys."""
    metadata, spec, first = _pod_parts(job, api.LAUNCHER, plugin.launcher_name(job))
    metadata = metadata or {}
    labels = {**(metadata.get("labels") or {}), **_labels(job, "launcher")}
    if plugin.launcher_is_worker(job):
        labels[plugin.REPLICA_INDEX_LABEL] = "0"
    metadata["labels"] = labels
    append_to(first, "env", plugin.launcher_env(job, options))
    config_map_name = config_files.name_of(job.metadata.name)
    config = config_files.volume(plugin.CONFIG_VOLUME, config_map_name, _CONFIG_FILES)
    ssh_volume, ssh_mount = _ssh(job)
    append_to(spec, "volumes", [ssh_volume, config])
    config_mount = {"name": plugin.CONFIG_VOLUME, "mountPath": plugin.CONFIG_MOUNT_PATH}
    append_to(first, "volumeMounts", [ssh_mount, config_mount])
    template = {"metadata": metadata, "spec": spec}
    owned = _owned_metadata(job, plugin.launcher_name(job))
    return batch_jobs.batch_job(owned, template, job.run_policy, suspended=suspended)


def launcher_may_start(job: api.MPIJobV2Beta1, worker_pods: Iterable[Mapping[str, Any]]) -> bool:
    """``launcherCreationPolicy``: AtStartup always; WaitForWorkersReady once every worker
    index 0..N-1 has a pod reporting ``Ready=True`` (a missing or unready worker holds it)."""
    if job.spec.launcher_creation_policy != "WaitForWorkersReady":
        return True
    ready = {str(p.get("metadata", {}).get("name")) for p in worker_pods if headless.is_ready(p)}
    return all(plugin.worker_name(job, i) in ready for i in range(api.workers(job)))


def desired_objects(
    job: api.MPIJobV2Beta1,
    *,
    keys: SshKeys,
    worker_pods: Iterable[Mapping[str, Any]] = (),
    cluster_domain: str = "",
    options: FrameworkOptions = _CLUSTER,
) -> list[Wire]:
    """Every object of a running (not suspended, not finished) job, in creation order:
    Service, ConfigMap, Secret, workers, then the launcher Job once the policy allows it."""
    pods = list(worker_pods)
    objects = [
        service(job),
        config_map(job, running_names(pods), cluster_domain),
        ssh_secret(job, keys),
        *(worker_pod(job, i) for i in range(api.workers(job))),
    ]
    if launcher_may_start(job, pods):
        suspended = bool(job.run_policy.suspend)
        objects.append(launcher_job(job, suspended=suspended, options=options))
    return objects
