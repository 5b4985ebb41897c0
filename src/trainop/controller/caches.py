"""The operator's caches of the objects it owns, and the ``Observed`` view of one job.

One informer per resource the jobs own (pods, services, PodGroups of the configured gang
scheduler, and the extra objects plugins create: ConfigMaps, HPAs, ServiceAccounts, Roles,
RoleBindings). Each is indexed by the uid of its controlling owner, so ``observed(job)`` is a
dictionary lookup: no GET or LIST per reconcile (DESIGN §9). Pods and services without a
controller are also indexed by ``<namespace>/<job-name label>`` (``orphan_keys``): what a job
may adopt (``claims``). Pods and services are watched with a
label selector on ``training.kubeflow.org/job-name`` so memory grows with the operator's own
objects only, and cached without their ``spec`` (``without_spec``): the engine reads a pod's
metadata and status and a service's name, never their specs, which are most of a pod's size.
"""

from __future__ import annotations

from collections.abc import Iterable

from trainop.engine.naming import JOB_NAME_LABEL
from trainop.engine.observed import Observed
from trainop.kube.client import Obj
from trainop.kube.informer import Informer, slim

OWNER_INDEX = "owner"
ORPHAN_INDEX = "orphan"


def without_spec(obj: Obj) -> Obj:
    """The object as the engine reads an owned pod or service: no ``spec``, no ``managedFields``.

    A shallow copy: a client may hand the same decoded event to several informers.
    """
    return slim({key: value for key, value in obj.items() if key != "spec"})


def controller_uids(obj: Obj) -> list[str]:
    """The uid of the object's controlling owner (a list, as indexers return)."""
    refs = obj.get("metadata", {}).get("ownerReferences") or []
    return [str(r.get("uid")) for r in refs if r.get("controller") and r.get("uid")]


def orphan_keys(obj: Obj) -> list[str]:
    """``<namespace>/<job-name label>`` of an object without a controller (adoption candidates)."""
    meta = obj.get("metadata") or {}
    job = (meta.get("labels") or {}).get(JOB_NAME_LABEL)
    refs = meta.get("ownerReferences") or []
    if job is None or any(r.get("controller") for r in refs):
        return []
    return [f"{meta.get('namespace', '')}/{job}"]


class OwnedObjects:
    """Indexed informers of everything jobs own."""

    def __init__(
        self,
        *,
        pods: Informer,
        services: Informer,
        pod_groups: Iterable[Informer] = (),
        others: Iterable[Informer] = (),
    ) -> None:
        self.pods = pods
        self.services = services
        self.pod_groups = list(pod_groups)
        self.others = list(others)
        for informer in self.all():
            informer.add_index(OWNER_INDEX, controller_uids)
        for informer in (pods, services):
            informer.add_index(ORPHAN_INDEX, orphan_keys)

    def all(self) -> list[Informer]:
        return [self.pods, self.services, *self.pod_groups, *self.others]

    def observed(self, job_uid: str) -> Observed:
        """The children of the job with ``job_uid``, as the engine wants them."""
        groups = [g for i in self.pod_groups for g in i.by_index(OWNER_INDEX, job_uid)]
        return Observed(
            pods=tuple(self.pods.by_index(OWNER_INDEX, job_uid)),
            services=tuple(self.services.by_index(OWNER_INDEX, job_uid)),
            pod_group=groups[0] if groups else None,
            objects=tuple(o for i in self.others for o in i.by_index(OWNER_INDEX, job_uid)),
        )
