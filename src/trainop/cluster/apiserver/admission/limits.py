"""Limits that protect the machine running a local cluster, checked before anything is stored.

A local cluster runs every pod as processes of one machine, and the controller, kubelet and
server share one event loop: a job with 30,000 replicas would stall all of them, and 1e9
would exhaust memory. So admission refuses, before the object is stored (and so before the
controller allocates a name, a port or an object for any replica):

- a training job whose replica count, per replica type or in total, exceeds
  ``max_replicas_per_job`` (default 1024): 422 ``Invalid`` naming the field and the flag
  ``--max-replicas-per-job`` that raises the ceiling; only the raw mapping is read, so a
  count of 1e9 costs as little as a count of 1;
- a pod beyond ``max_pods`` pods in the whole cluster (default 4096): 403 ``Forbidden`` in
  the words of kube-apiserver's ResourceQuota admission (``exceeded quota: ...``), naming the
  flag ``--max-pods``.

``None`` disables a limit. Pure functions over plain mappings; ``admission`` and ``writes``
call them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainop.api.kinds import KindInfo
from trainop.cluster.apiserver.http import status
from trainop.errors import FieldError

DEFAULT_MAX_REPLICAS_PER_JOB = 1024
DEFAULT_MAX_PODS = 4096
REPLICAS_FLAG = "--max-replicas-per-job"
PODS_FLAG = "--max-pods"
QUOTA_NAME = "local-max-pods"


@dataclass(frozen=True, slots=True)
class Limits:
    """The ceilings of one local cluster; ``None`` means unlimited."""

    max_replicas_per_job: int | None = DEFAULT_MAX_REPLICAS_PER_JOB
    max_pods: int | None = DEFAULT_MAX_PODS


def replica_errors(info: KindInfo, obj: dict[str, Any], limit: int | None) -> list[FieldError]:
    """Errors for replica counts above ``limit`` in the job mapping ``obj`` (never raises)."""
    if limit is None:
        return []
    spec = obj.get("spec")
    specs = spec.get(info.replica_specs_field) if isinstance(spec, dict) else None
    if not isinstance(specs, dict):
        return []
    root = f"spec.{info.replica_specs_field}"
    errors: list[FieldError] = []
    total = 0
    for replica_type, replica_spec in specs.items():
        count = replica_spec.get("replicas") if isinstance(replica_spec, dict) else None
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            continue  # absent means 1; a wrong type or sign is validation's to report
        total += count
        if count > limit:
            errors.append(_too_many(f"{root}[{replica_type}].replicas", count, limit))
    if not errors and total > limit:
        errors.append(_too_many(root, total, limit, what="replicas in all"))
    return errors


def _too_many(path: str, count: int, limit: int, *, what: str = "") -> FieldError:
    detail = (
        f"Invalid value: {count}{' ' + what if what else ''}: must be no more than {limit}, "
        f"the local cluster's replica ceiling per job (raise it with {REPLICAS_FLAG})"
    )
    return FieldError(path, "Invalid", detail)


def check_pod_quota(name: str, used: int, limit: int | None) -> None:
    """403 when one more pod would exceed ``limit`` (``used`` pods exist already)."""
    if limit is None or used < limit:
        return
    raise status.forbidden(
        f'pods "{name}" is forbidden: exceeded quota: {QUOTA_NAME}, requested: pods=1, '
        f"used: pods={used}, limited: pods={limit} (the local cluster's pod ceiling; "
        f"raise it with {PODS_FLAG})"
    )
