"""Exec access: a replica type that starts processes in its peers' pods through the API.

For each of ``Framework.exec_access`` (MPIJob v1's launcher runs ``mpirun`` through ``kubectl
exec``; DGL's launcher reaches its workers, its partitioner the launcher): the source type's
pods run as a ServiceAccount, the template's ``serviceAccountName`` or else ``<job>-<source>``,
and a Role and RoleBinding ``<job>-<source>`` let that account read pods and exec into the
target type's pods, by name, and no others. An account of that name that exists already is used
as it is (upstream creates it only when missing).

Pure. Neighbours: ``children`` creates the objects (the account first), ``desired`` sets the
pods' account.
"""

from __future__ import annotations

from trainop.api.types import Job
from trainop.engine.actions import Wire
from trainop.frameworks.base import ExecAccess, replica_name_of, replica_names_of

RBAC_GROUP = "rbac.authorization.k8s.io"


def _own_name(job: Job, access: ExecAccess) -> str:
    return f"{job.metadata.name}-{access.source.lower()}"


def account(job: Job, access: ExecAccess) -> str:
    """The ServiceAccount the source pods run as."""
    template = job.spec.replica_specs[access.source].template.get("spec") or {}
    return str(template.get("serviceAccountName") or _own_name(job, access))


def service_account(job: Job, access: ExecAccess) -> Wire:
    """The account, to create when missing (metadata: the name; ``children`` adds the rest)."""
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": account(job, access)},
    }


def rbac(job: Job, access: ExecAccess, *, unindexed: tuple[str, ...] = ()) -> list[Wire]:
    """A Role and RoleBinding letting the account read pods and exec into the target pods
    (one unindexed pod ``<job>-<target>`` when the target type is in ``unindexed``)."""
    if access.target in unindexed:
        targets = [replica_name_of(job, access.target, None)]
    else:
        targets = replica_names_of(job, access.target)
    rules = [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
        {
            "apiGroups": [""],
            "resources": ["pods/exec"],
            "verbs": ["create"],
            "resourceNames": targets,
        },
    ]
    name = _own_name(job, access)
    subject = {
        "kind": "ServiceAccount",
        "name": account(job, access),
        "namespace": job.metadata.namespace,
    }
    ref = {"apiGroup": RBAC_GROUP, "kind": "Role", "name": name}
    head = {"apiVersion": f"{RBAC_GROUP}/v1", "metadata": {"name": name}}
    return [
        {**head, "kind": "Role", "rules": rules},
        {**head, "kind": "RoleBinding", "subjects": [subject], "roleRef": ref},
    ]


def run_as_account(pod: Wire, job: Job, access: ExecAccess, replica_type: str) -> None:
    """Give a source pod (the caller's copy) the account unless its template names one."""
    if replica_type == access.source:
        pod.setdefault("spec", {}).setdefault("serviceAccountName", _own_name(job, access))
