"""MPIJob v2beta1 (mpi-operator v0.8 semantics): every object such a job owns, rendered purely.

A v2beta1 job owns (spec section 2): the headless Service ``<job>`` over the launcher and the
workers, the ConfigMap ``<job>-config`` (``hostfile`` in the implementation's format and
``discover_hosts.sh``), the SSH Secret ``<job>-ssh``, the worker Pods ``<job>-worker-<i>``
(sshd by default) and the launcher as a ``batch/v1`` Job ``<job>-launcher`` with the
implementation's environment. ``desired_objects`` lists them in upstream's creation order;
``launcher_may_start`` is the ``launcherCreationPolicy`` gate.

The SSH key pair is an input (generating one is random, so the controller layer does it and
passes the PEM and the authorized-keys line); everything else is a function of the defaulted
job and what was observed. Pure: no I/O, no clock; inputs are never mutated.
"""

from __future__ import annotations

import base64
import copy
import posixpath
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from trainop.api import mpi_v2beta1
from trainop.api.mpi_v2beta1 import LAUNCHER, WORKER, MPIJobV2Beta1
from trainop.frameworks.base import FrameworkOptions

Wire = dict[str, Any]

OPERATOR_NAME = "mpi-operator"
OPERATOR_NAME_LABEL = "training.kubeflow.org/operator-name"
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
JOB_ROLE_LABEL = "training.kubeflow.org/job-role"
REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"
CONFIG_MOUNT_PATH = "/etc/mpi"
SSH_VOLUME, CONFIG_VOLUME = "ssh-auth", "mpi-job-config"
SSH_SECRET_TYPE = "kubernetes.io/ssh-auth"
PRIVATE_KEY, PUBLIC_KEY = "ssh-privatekey", "ssh-publickey"
SSHD_COMMAND = ("/usr/sbin/sshd", "-De")
_RSH_EXTRA = "-o ConnectionAttempts=10"
_CLUSTER = FrameworkOptions()


@dataclass(frozen=True, slots=True)
class SshKeys:
    """The job's key pair: PEM private key and the OpenSSH authorized-keys line."""

    private_pem: str
    public_line: str


def _name(job: MPIJobV2Beta1) -> str:
    return job.metadata.name or ""


def _namespace(job: MPIJobV2Beta1) -> str:
    return job.metadata.namespace or ""


def owner_reference(job: MPIJobV2Beta1) -> Wire:
    return {
        "apiVersion": mpi_v2beta1.API_VERSION,
        "kind": "MPIJob",
        "name": _name(job),
        "uid": job.metadata.uid or "",
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _owned_metadata(job: MPIJobV2Beta1, name: str) -> Wire:
    return {
        "name": name,
        "namespace": _namespace(job),
        "labels": {"app": _name(job)},
        "ownerReferences": [owner_reference(job)],
    }


def worker_name(job: MPIJobV2Beta1, index: int) -> str:
    return f"{_name(job)}-worker-{index}"


def launcher_name(job: MPIJobV2Beta1) -> str:
    return f"{_name(job)}-launcher"


def host_fqdn(job: MPIJobV2Beta1, hostname: str, cluster_domain: str = "") -> str:
    """``<hostname>.<job>.<ns>.svc`` (+ ``.<domain>``): the pod's record in the Service."""
    fqdn = f"{hostname}.{_name(job)}.{_namespace(job)}.svc"
    return f"{fqdn}.{cluster_domain}" if cluster_domain else fqdn


def _slots(job: MPIJobV2Beta1) -> int:
    return job.spec.slots_per_worker if job.spec.slots_per_worker is not None else 1


def _as_worker(job: MPIJobV2Beta1) -> bool:
    return bool(job.spec.run_launcher_as_worker)


def _implementation(job: MPIJobV2Beta1) -> str:
    return job.spec.mpi_implementation or "OpenMPI"


def service(job: MPIJobV2Beta1) -> Wire:
    """The headless Service giving the launcher and workers their DNS records."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _owned_metadata(job, _name(job)),
        "spec": {
            "clusterIP": "None",
            "selector": {OPERATOR_NAME_LABEL: OPERATOR_NAME, JOB_NAME_LABEL: _name(job)},
            "publishNotReadyAddresses": _as_worker(job),
        },
    }


def hostfile(job: MPIJobV2Beta1, cluster_domain: str = "") -> str:
    """The launcher line (only as a worker) and one line per worker index, in the
    implementation's format: OpenMPI ``<fqdn> slots=<S>``, Intel and MPICH ``<fqdn>:<S>``."""
    hosts = [launcher_name(job)] if _as_worker(job) else []
    hosts += [worker_name(job, i) for i in range(mpi_v2beta1.workers(job))]
    slots = _slots(job)
    form = "{host} slots={slots}\n" if _implementation(job) == "OpenMPI" else "{host}:{slots}\n"
    return "".join(form.format(host=host_fqdn(job, h, cluster_domain), slots=slots) for h in hosts)


def discover_hosts(
    job: MPIJobV2Beta1, running_workers: Iterable[str], cluster_domain: str = ""
) -> str:
    """Horovod's host discovery: the launcher (as a worker), then the Running worker pods by
    name as plain strings (``-10`` before ``-2``), without slot counts."""
    lines = ["#!/bin/sh\n"]
    if _as_worker(job):
        lines.append(f"echo {host_fqdn(job, launcher_name(job), cluster_domain)}\n")
    lines += [f"echo {host_fqdn(job, pod, cluster_domain)}\n" for pod in sorted(running_workers)]
    return "".join(lines)


def config_map(
    job: MPIJobV2Beta1, running_workers: Iterable[str] = (), cluster_domain: str = ""
) -> Wire:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _owned_metadata(job, f"{_name(job)}-config"),
        "data": {
            "hostfile": hostfile(job, cluster_domain),
            "discover_hosts.sh": discover_hosts(job, running_workers, cluster_domain),
        },
    }


def ssh_secret(job: MPIJobV2Beta1, keys: SshKeys) -> Wire:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": _owned_metadata(job, f"{_name(job)}-ssh"),
        "type": SSH_SECRET_TYPE,
        "data": {
            PRIVATE_KEY: base64.b64encode(keys.private_pem.encode()).decode(),
            PUBLIC_KEY: base64.b64encode(keys.public_line.encode()).decode(),
        },
    }


def secret_needs_new_keys(secret: Mapping[str, Any]) -> bool:
    """An existing Secret is rekeyed only when its data keys are not exactly the pair."""
    return set(secret.get("data") or {}) != {PRIVATE_KEY, PUBLIC_KEY}


def _ssh_volume(job: MPIJobV2Beta1) -> Wire:
    secret: Wire = {
        "secretName": f"{_name(job)}-ssh",
        "items": [
            {"key": PRIVATE_KEY, "path": "id_rsa"},
            {"key": PUBLIC_KEY, "path": "id_rsa.pub"},
            {"key": PUBLIC_KEY, "path": "authorized_keys"},
        ],
    }
    if job.spec.ssh_auth_mount_path == mpi_v2beta1.DEFAULT_SSH_AUTH_MOUNT_PATH:
        secret["defaultMode"] = 0o600
    return {"name": SSH_VOLUME, "secret": secret}


def _ssh_mount(job: MPIJobV2Beta1) -> Wire:
    return {"name": SSH_VOLUME, "mountPath": job.spec.ssh_auth_mount_path}


def _template(job: MPIJobV2Beta1, rtype: str) -> Wire:
    return copy.deepcopy(dict(job.spec.replica_specs[rtype].template))


def _pod_basics(job: MPIJobV2Beta1, rtype: str, hostname: str) -> tuple[Wire, Wire, Wire]:
    """A copy of the template (metadata, spec, first container) with the shared settings."""
    template = _template(job, rtype)
    metadata, spec = template.setdefault("metadata", {}), template.setdefault("spec", {})
    spec["hostname"], spec["subdomain"] = hostname, _name(job)
    if spec.get("hostNetwork"):
        spec["dnsPolicy"] = "ClusterFirstWithHostNet"
    spec["restartPolicy"] = job.spec.replica_specs[rtype].restart_policy
    containers = spec.setdefault("containers", [{}])
    return metadata, spec, containers[0]


def _append(mapping: Wire, key: str, items: list[Any]) -> None:
    mapping[key] = [*(mapping.get(key) or []), *items]


def worker_pod(job: MPIJobV2Beta1, index: int) -> Wire:
    """Worker ``index``: sshd unless the template runs something, the SSH keys mounted."""
    name = worker_name(job, index)
    metadata, spec, first = _pod_basics(job, WORKER, name)
    offset = 1 if _as_worker(job) else 0
    metadata["labels"] = {
        **(metadata.get("labels") or {}),
        OPERATOR_NAME_LABEL: OPERATOR_NAME,
        JOB_NAME_LABEL: _name(job),
        JOB_ROLE_LABEL: "worker",
        REPLICA_INDEX_LABEL: str(index + offset),
    }
    metadata["name"], metadata["namespace"] = name, _namespace(job)
    metadata["ownerReferences"] = [owner_reference(job)]
    search = f"{_name(job)}.{_namespace(job)}.svc.cluster.local"  # literal, as upstream
    dns = spec.setdefault("dnsConfig", {})
    _append(dns, "searches", [search])
    if not first.get("command") and not first.get("args"):
        first["command"] = list(SSHD_COMMAND)
    _append(first, "env", [{"name": "K_MPI_JOB_ROLE", "value": "worker"}])
    _append(first, "volumeMounts", [_ssh_mount(job)])
    _append(spec, "volumes", [_ssh_volume(job)])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def workers_run_sshd(job: MPIJobV2Beta1) -> bool:
    """Whether every host in the hostfile accepts ssh: the workers' first container has
    neither command nor args (``worker_pod`` gives it sshd) or runs ``sshd`` itself, and the
    launcher, whose command is the user's ``mpirun``, is not a host too."""
    spec = job.spec.replica_specs.get(WORKER)
    if spec is None or _as_worker(job):
        return False
    containers = (spec.template.get("spec") or {}).get("containers") or [{}]
    command, args = containers[0].get("command"), containers[0].get("args")
    if not command:
        return not args
    return posixpath.basename(str(command[0])) == "sshd"


def launcher_env(job: MPIJobV2Beta1, options: FrameworkOptions = _CLUSTER) -> list[Wire]:
    """The launcher's first container env, in upstream's order (spec 3.1). Local mode
    (``options``) roots the hostfile path in the sandbox and adds, after upstream's, the
    remote shell that execs through the kubelet (unless ``mpi_real_ssh_to_sshd_workers`` and
    the workers run sshd: then the image's ssh reaches them) and ``mpi_launcher_env``."""
    slots = str(_slots(job))
    hostfile_path = f"{options.container_root}{CONFIG_MOUNT_PATH}/hostfile"
    by_implementation = {
        "OpenMPI": [
            ("OMPI_MCA_orte_keep_fqdn_hostnames", "true"),
            ("OMPI_MCA_orte_default_hostfile", hostfile_path),
            ("OMPI_MCA_plm_rsh_args", _RSH_EXTRA),
            ("OMPI_MCA_orte_set_default_slots", slots),
        ],
        "Intel": [
            ("I_MPI_HYDRA_HOST_FILE", hostfile_path),
            ("I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS", _RSH_EXTRA),
            ("I_MPI_PERHOST", slots),
        ],
        "MPICH": [("HYDRA_HOST_FILE", hostfile_path), ("HYDRA_LAUNCH_EXTRA_ARGS", _RSH_EXTRA)],
    }
    pairs = [("K_MPI_JOB_ROLE", "launcher"), *by_implementation[_implementation(job)]]
    if not _as_worker(job):
        pairs += [("NVIDIA_VISIBLE_DEVICES", ""), ("NVIDIA_DRIVER_CAPABILITIES", "")]
    if options.mpi_ssh_command:
        if not (options.mpi_real_ssh_to_sshd_workers and workers_run_sshd(job)):
            shell = options.mpi_ssh_command
            pairs += {
                "OpenMPI": [("OMPI_MCA_plm_rsh_agent", shell)],
                "Intel": [("I_MPI_HYDRA_BOOTSTRAP", "ssh"), ("I_MPI_HYDRA_BOOTSTRAP_EXEC", shell)],
                "MPICH": [("HYDRA_LAUNCHER", "ssh"), ("HYDRA_LAUNCHER_EXEC", shell)],
            }[_implementation(job)]
        pairs += list(options.mpi_launcher_env)
    return [{"name": name, "value": value} for name, value in pairs]


def launcher_job(
    job: MPIJobV2Beta1, *, suspended: bool = False, options: FrameworkOptions = _CLUSTER
) -> Wire:
    """The launcher ``batch/v1`` Job: runPolicy's limits, the config and the SSH keys."""
    _, spec, first = _pod_basics(job, LAUNCHER, launcher_name(job))
    template = {"metadata": _template(job, LAUNCHER).get("metadata") or {}, "spec": spec}
    metadata = template["metadata"]
    labels = {
        **(metadata.get("labels") or {}),
        OPERATOR_NAME_LABEL: OPERATOR_NAME,
        JOB_NAME_LABEL: _name(job),
        JOB_ROLE_LABEL: "launcher",
    }
    if _as_worker(job):
        labels[REPLICA_INDEX_LABEL] = "0"
    metadata["labels"] = labels
    _append(first, "env", launcher_env(job, options))
    config = {
        "name": f"{_name(job)}-config",
        "items": [
            {"key": "hostfile", "path": "hostfile", "mode": 0o444},
            {"key": "discover_hosts.sh", "path": "discover_hosts.sh", "mode": 0o555},
        ],
    }
    _append(spec, "volumes", [_ssh_volume(job), {"name": CONFIG_VOLUME, "configMap": config}])
    _append(
        first,
        "volumeMounts",
        [_ssh_mount(job), {"name": CONFIG_VOLUME, "mountPath": CONFIG_MOUNT_PATH}],
    )
    policy = job.run_policy
    job_spec: Wire = {"template": template, "podReplacementPolicy": "Failed"}
    for key, value in (
        ("ttlSecondsAfterFinished", policy.ttl_seconds_after_finished),
        ("activeDeadlineSeconds", policy.active_deadline_seconds),
        ("backoffLimit", policy.backoff_limit),
    ):
        if value is not None:
            job_spec[key] = value
    if suspended:
        job_spec["suspend"] = True
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _owned_metadata(job, launcher_name(job)),
        "spec": job_spec,
    }


def _is_ready(pod: Mapping[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def launcher_may_start(job: MPIJobV2Beta1, worker_pods: Iterable[Mapping[str, Any]]) -> bool:
    """``launcherCreationPolicy``: AtStartup always; WaitForWorkersReady once every worker
    index 0..N-1 has a pod reporting ``Ready=True`` (a missing or unready worker holds it)."""
    if job.spec.launcher_creation_policy != "WaitForWorkersReady":
        return True
    ready = {str(p.get("metadata", {}).get("name")) for p in worker_pods if _is_ready(p)}
    return all(worker_name(job, i) in ready for i in range(mpi_v2beta1.workers(job)))


def desired_objects(
    job: MPIJobV2Beta1,
    *,
    keys: SshKeys,
    worker_pods: Iterable[Mapping[str, Any]] = (),
    cluster_domain: str = "",
    options: FrameworkOptions = _CLUSTER,
) -> list[Wire]:
    """Every object of a running (not suspended, not finished) job, in creation order:
    Service, ConfigMap, Secret, workers, then the launcher Job once the policy allows it."""
    pods = list(worker_pods)
    running = [
        str(p["metadata"]["name"])
        for p in pods
        if (p.get("status") or {}).get("phase") == "Running"
    ]
    objects = [
        service(job),
        config_map(job, running, cluster_domain),
        ssh_secret(job, keys),
        *(worker_pod(job, i) for i in range(mpi_v2beta1.workers(job))),
    ]
    if launcher_may_start(job, pods):
        suspended = bool(job.run_policy.suspend)
        objects.append(launcher_job(job, suspended=suspended, options=options))
    return objects
