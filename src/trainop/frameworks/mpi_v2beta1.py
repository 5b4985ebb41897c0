"""MPIJob v2beta1 (mpi-operator v0.8 semantics): the MPI-specific half of its objects.

A v2beta1 job's launcher reaches its workers over ssh by their DNS records in the headless
Service ``<job>``: ``<job>-worker-<i>.<job>.<ns>.svc``. This plugin holds what is MPI about that
(spec sections 2 and 3): mpi-operator's names and labels, the ``hostfile`` and
``discover_hosts.sh`` in the implementation's format, whether the workers run sshd, and the
launcher's environment per implementation. The objects themselves (Service, ConfigMap, SSH
Secret, worker pods, the launcher ``batch/v1`` Job) are the engine's shapes, put together by
``engine.mpi_v2beta1_objects``; ``engine.mpi_v2beta1`` plans them.

Pure: functions of the defaulted job (``api.mpi_v2beta1.apply_defaults``) and their arguments.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable

from trainop.api import mpi_v2beta1
from trainop.api.mpi_v2beta1 import WORKER, MPIJobV2Beta1
from trainop.frameworks import mpirun
from trainop.frameworks.base import FrameworkOptions
from trainop.frameworks.base import SshKeys as SshKeys  # the planner's input, named here

OPERATOR_NAME = "mpi-operator"
OPERATOR_NAME_LABEL = "training.kubeflow.org/operator-name"
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
JOB_ROLE_LABEL = "training.kubeflow.org/job-role"
REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"
ROLE_ENV = "K_MPI_JOB_ROLE"
CONFIG_MOUNT_PATH = "/etc/mpi"
SSH_VOLUME, CONFIG_VOLUME = "ssh-auth", "mpi-job-config"
SSHD_COMMAND = ("/usr/sbin/sshd", "-De")
_RSH_EXTRA = "-o ConnectionAttempts=10"
_CLUSTER = FrameworkOptions()


def name_of(job: MPIJobV2Beta1) -> str:
    return job.metadata.name or ""


def worker_name(job: MPIJobV2Beta1, index: int) -> str:
    return f"{name_of(job)}-worker-{index}"


def launcher_name(job: MPIJobV2Beta1) -> str:
    return f"{name_of(job)}-launcher"


def host_fqdn(job: MPIJobV2Beta1, hostname: str, cluster_domain: str = "") -> str:
    """``<hostname>.<job>.<ns>.svc`` (+ ``.<domain>``): the pod's record in the Service."""
    fqdn = f"{hostname}.{name_of(job)}.{job.metadata.namespace or ''}.svc"
    return f"{fqdn}.{cluster_domain}" if cluster_domain else fqdn


def slots(job: MPIJobV2Beta1) -> int:
    return job.spec.slots_per_worker if job.spec.slots_per_worker is not None else 1


def launcher_is_worker(job: MPIJobV2Beta1) -> bool:
    """``runLauncherAsWorker``: the launcher is also a host (the hostfile's first line)."""
    return bool(job.spec.run_launcher_as_worker)


def implementation(job: MPIJobV2Beta1) -> str:
    return job.spec.mpi_implementation or mpirun.OPEN_MPI


def hostfile(job: MPIJobV2Beta1, cluster_domain: str = "") -> str:
    """The launcher line (only as a worker) and one line per worker index, in the
    implementation's format: OpenMPI ``<fqdn> slots=<S>``, Intel and MPICH ``<fqdn>:<S>``."""
    hosts = [launcher_name(job)] if launcher_is_worker(job) else []
    hosts += [worker_name(job, i) for i in range(mpi_v2beta1.workers(job))]
    fqdns = [host_fqdn(job, host, cluster_domain) for host in hosts]
    return mpirun.hostfile(fqdns, slots(job), implementation(job))


def discover_hosts(
    job: MPIJobV2Beta1, running_workers: Iterable[str], cluster_domain: str = ""
) -> str:
    """Horovod's host discovery: the launcher (as a worker), then the Running worker pods by
    name as plain strings (``-10`` before ``-2``), without slot counts."""
    lines = ["#!/bin/sh\n"]
    if launcher_is_worker(job):
        lines.append(f"echo {host_fqdn(job, launcher_name(job), cluster_domain)}\n")
    lines += [f"echo {host_fqdn(job, pod, cluster_domain)}\n" for pod in sorted(running_workers)]
    return "".join(lines)


def workers_run_sshd(job: MPIJobV2Beta1) -> bool:
    """Whether every host in the hostfile accepts ssh: the workers' first container has
    neither command nor args (the worker pod gets sshd) or runs ``sshd`` itself, and the
    launcher, whose command is the user's ``mpirun``, is not a host too."""
    spec = job.spec.replica_specs.get(WORKER)
    if spec is None or launcher_is_worker(job):
        return False
    containers = (spec.template.get("spec") or {}).get("containers") or [{}]
    command, args = containers[0].get("command"), containers[0].get("args")
    if not command:
        return not args
    return posixpath.basename(str(command[0])) == "sshd"


def launcher_env(job: MPIJobV2Beta1, options: FrameworkOptions = _CLUSTER) -> list[dict[str, str]]:
    """The launcher's first container env, in upstream's order (spec 3.1). Local mode
    (``options``) roots the hostfile path in the sandbox and adds, after upstream's, the
    remote shell that execs through the kubelet (unless ``mpi_real_ssh_to_sshd_workers`` and
    the workers run sshd: then the image's ssh reaches them) and ``mpi_launcher_env``."""
    slot_count = str(slots(job))
    hostfile_path = f"{options.container_root}{CONFIG_MOUNT_PATH}/hostfile"
    by_implementation = {
        mpirun.OPEN_MPI: [
            ("OMPI_MCA_orte_keep_fqdn_hostnames", "true"),
            ("OMPI_MCA_orte_default_hostfile", hostfile_path),
            ("OMPI_MCA_plm_rsh_args", _RSH_EXTRA),
            ("OMPI_MCA_orte_set_default_slots", slot_count),
        ],
        "Intel": [
            ("I_MPI_HYDRA_HOST_FILE", hostfile_path),
            ("I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS", _RSH_EXTRA),
            ("I_MPI_PERHOST", slot_count),
        ],
        "MPICH": [("HYDRA_HOST_FILE", hostfile_path), ("HYDRA_LAUNCH_EXTRA_ARGS", _RSH_EXTRA)],
    }
    pairs = [(ROLE_ENV, "launcher"), *by_implementation[implementation(job)]]
    if not launcher_is_worker(job):
        pairs += mpirun.NO_GPUS
    if options.mpi_ssh_command:
        if not (options.mpi_real_ssh_to_sshd_workers and workers_run_sshd(job)):
            pairs += mpirun.remote_shell(implementation(job), agent=options.mpi_ssh_command)
        pairs += list(options.mpi_launcher_env)
    return [{"name": name, "value": value} for name, value in pairs]
