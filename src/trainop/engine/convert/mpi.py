"""MPIJob (v1 and v2beta1) as a runtime with ``mlPolicy.mpi``: a ``launcher`` and ``node`` jobs.

v2's MPI plugin gives the launcher the hostfile (``<tj>-node-0-<i>.<tj> slots=<n>`` for every
worker pod) and the Open MPI env, and every pod the job's SSH key; it acts only on the
replicatedJobs named ``launcher`` and ``node`` and only on containers named ``node``. So:

- ``Launcher`` → ``launcher``, ``Worker`` → ``node`` (labelled ancestor ``trainer``), the first
  container of each renamed ``node`` (reported: ``kubectl logs -c`` names change);
- ``slotsPerWorker`` → ``numProcPerNode``; the worker count → ``numNodes``;
  ``sshAuthMountPath`` and ``runLauncherAsWorker`` (v2beta1) → ``sshAuthMountPath`` and
  ``runLauncherAsNode``;
- the launcher starts once the workers are ready (``dependsOn: Ready``), as v1's kubectl
  delivery waited for them and v2beta1's ``WaitForWorkersReady`` does; ``AtStartup`` starts
  it at once;
- v1's kubectl-exec remote shell has no v2 counterpart: v2 reaches workers over SSH, so their
  image must run sshd (reported); Intel MPI and MPICH are not v2 values (reported).
"""

from __future__ import annotations

from trainop.api.trainer import constants
from trainop.api.types import Job
from trainop.engine.convert.dropped import DroppedField, replica_path
from trainop.engine.convert.layout import Layout, dependency_order, replica_types
from trainop.frameworks.base import Framework, replicas_of

_NAMES = {"Launcher": constants.LAUNCHER, "Worker": constants.NODE}


def layout(job: Job, framework: Framework) -> Layout:
    """The layout of an MPIJob of either version."""
    types = replica_types(job, framework)
    spec = job.spec
    depends = {}
    if "Worker" in types and getattr(spec, "launcher_creation_policy", None) != "AtStartup":
        depends["Launcher"] = ("Worker", "Ready")
    policy = {
        "numProcPerNode": getattr(spec, "slots_per_worker", None) or 1,
        "mpiImplementation": constants.MPI_OPENMPI,
        "sshAuthMountPath": getattr(spec, "ssh_auth_mount_path", None)
        or constants.DEFAULT_SSH_AUTH_MOUNT_PATH,
        "runLauncherAsNode": bool(getattr(spec, "run_launcher_as_worker", None)),
    }
    return Layout(
        names={rt: _NAMES.get(rt, rt.lower()) for rt in dependency_order(types, depends)},
        success=("Launcher",) if "Launcher" in types else tuple(types),
        depends_on=depends,
        trainer="Worker" if "Worker" in types else None,
        framework_env=False,
        ml_policy={"numNodes": max(replicas_of(job, "Worker"), 1), "mpi": policy},
        renamed_container=constants.NODE,
    )


def dropped(job: Job) -> list[DroppedField]:
    """What an MPIJob loses: the v1 remote shell, or a v2beta1 MPI implementation."""
    implementation = getattr(job.spec, "mpi_implementation", None)
    found = []
    if getattr(job.spec, "ssh_auth_mount_path", None) is None:
        found.append(
            DroppedField(
                replica_path(job, "Launcher"),
                "v1's remote shell (kubexec.sh: kubectl exec into the workers by pod name) has "
                "no v2 counterpart: v2's MPI plugin reaches the workers over SSH with the "
                "job's key, so the workers' image must run sshd",
            )
        )
    if getattr(job.spec, "main_container", None) is not None:
        found.append(
            DroppedField(
                "spec.mainContainer",
                "v2 runs MPI processes in the container named node (the first one)",
            )
        )
    if implementation not in (None, constants.MPI_OPENMPI):
        found.append(
            DroppedField(
                "spec.mpiImplementation",
                f"{implementation} is not a v2 value: the runtime declares OpenMPI, whose "
                "OMPI_MCA_* env v2 gives the launcher",
            )
        )
    return found
