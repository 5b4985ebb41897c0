"""The operator's caches of the objects it owns, and the ``Observed`` view of one job.

One informer per resource the jobs own (pods, services, PodGroups of the configured gang
scheduler, and the extra objects plugins create: ConfigMaps, HPAs, ServiceAccounts, Roles,
RoleBindings). Each is indexed by the uid of its controlling owner, so ``observed(job)`` is a
dictionary lookup: no GET or LIST per reconcile (DESIGN §9). Pods and services are watched with a
label selector on ``training.kubeflow.org/job-name`` so memory grows with the operator's own
objects only, and cached without their ``spec`` (``without_spec``): the engine reads a pod's
metadata and status and a service's name, never their specs, which are most of a pod's size.
"""

from __future__ import annotations

from collections.abc import Iterable

from trainop.engine.observed import Observed
from trainop.kube.client import Obj
from trainop.kube.informer import Informer, slim

OWNER_INDEX = "owner"


def without_spec(obj: Obj) -> Obj:
    """The object as the engine reads an owned pod or service: no ``spec``, no ``managedFields``.

    A shallow copy: a client may hand the same decoded event to several informers.
    """
    return slim({key: value for key, value in obj.items() if key != "spec"})


def controller_uids(obj: Obj) -> list[str]:
    """The uid of the object's controlling owner (a list, as indexers return)."""
    refs = obj.get("metadata", {}).get("ownerReferences") or []
    return [str(r.get("uid")) for r in refs if r.get("controller") and r.get("uid")]


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
