"""The caches a TrainJob is reconciled from, and the resources they watch (docs/design/112).

Trainer v2.3.0 triggers a TrainJob reconcile on events of the TrainJob itself and of JobSets,
ConfigMaps, Secrets and (when their CRD is served) PodGroups whose *controller* owner is a
TrainJob (spec 2.1). So this module keeps one informer per such resource, unselected — the
runtime snapshot ConfigMap, the MPI hostfile ConfigMap and SSH Secret carry no label to select
on — plus the two runtime kinds, which the reconciler resolves a TrainJob's runtime from and
whose controllers strip the legacy finalizer. Secrets are cached without their data: the
reconciler only asks whether the MPI SSH Secret exists (it is immutable and applied once),
and a cluster's every Secret value need not sit in the operator's memory.

Which PodGroup CRDs are served is asked once at start (``served``): an informer on a resource
that is not served would never sync. The JobSet CRD is required: while it is not served the
TrainJob controller does not start and readiness names it (``JOBSET_CRD_MISSING``).
Pure wiring, no policy; neighbours: ``controller.trainjob`` (reads these),
``controller.manager`` (runs them and queues the owner of each event).
"""

from __future__ import annotations

from collections.abc import Callable

from trainop import errors
from trainop.api.trainer import constants as c
from trainop.kube.client import Client, Obj
from trainop.kube.informer import Informer, slim
from trainop.kube.resources import (
    CONFIGMAPS,
    COSCHEDULING_PODGROUPS,
    SECRETS,
    VOLCANO_PODGROUPS,
    Resource,
)

TRAINJOBS = Resource(c.GROUP, c.VERSION, c.PLURALS[c.TRAINJOB], c.TRAINJOB)
TRAINING_RUNTIMES = Resource(c.GROUP, c.VERSION, c.PLURALS[c.TRAINING_RUNTIME], c.TRAINING_RUNTIME)
CLUSTER_TRAINING_RUNTIMES = Resource(
    c.GROUP,
    c.VERSION,
    c.PLURALS[c.CLUSTER_TRAINING_RUNTIME],
    c.CLUSTER_TRAINING_RUNTIME,
    namespaced=False,
)
JOBSETS = Resource(c.JOBSET_GROUP, c.JOBSET_VERSION, c.JOBSET_PLURAL, c.JOBSET)
POD_GROUP_RESOURCES = (COSCHEDULING_PODGROUPS, VOLCANO_PODGROUPS)
RUNTIME_RESOURCES = {r.kind: r for r in (TRAINING_RUNTIMES, CLUSTER_TRAINING_RUNTIMES)}
JOBSET_CRD_MISSING = (
    f"TrainJobs need the JobSet CRD {c.JOBSET_CRD_NAME} ({c.JOBSET_API_VERSION}), which is not "
    "installed: install JobSet; no TrainJob is reconciled until it is"
)

MakeInformer = Callable[..., Informer]


def without_data(obj: Obj) -> Obj:
    """A Secret as the TrainJob reconciler reads it: metadata and type, no values."""
    return slim({k: v for k, v in obj.items() if k not in ("data", "stringData")})


async def served(client: Client, resource: Resource, namespace: str | None) -> bool:
    """Whether the API serves ``resource`` (a LIST of one item does not answer 404)."""
    try:
        await client.list(resource, namespace=namespace, limit=1)
    except errors.NotFoundError:
        return False
    return True


class TrainJobCaches:
    """The informers of the TrainJob controller; ``owned`` are those whose events queue the
    controlling TrainJob."""

    def __init__(self, make: MakeInformer, *, pod_groups: tuple[Resource, ...] = ()) -> None:
        self.trainjobs = make(TRAINJOBS)
        self.jobsets = make(JOBSETS)
        self.config_maps = make(CONFIGMAPS)
        self.secrets = make(SECRETS, project=without_data)
        self.runtimes = {kind: make(resource) for kind, resource in RUNTIME_RESOURCES.items()}
        self.pod_groups = {r.group: make(r) for r in pod_groups}

    def owned(self) -> list[Informer]:
        return [self.jobsets, self.config_maps, self.secrets, *self.pod_groups.values()]

    def informers(self) -> list[Informer]:
        return [self.trainjobs, *self.owned(), *self.runtimes.values()]

    def runtime(self, kind: str, namespace: str, name: str) -> Obj | None:
        """The cached runtime of ``kind`` (a ClusterTrainingRuntime ignores ``namespace``)."""
        informer = self.runtimes.get(kind)
        if informer is None:
            return None
        scoped = namespace if RUNTIME_RESOURCES[kind].namespaced else ""
        return informer.get(scoped, name)


def controlling_trainjob(obj: Obj) -> str | None:
    """``<namespace>/<name>`` of the TrainJob that controls ``obj``, if one does."""
    meta = obj.get("metadata") or {}
    for ref in meta.get("ownerReferences") or []:
        if (
            ref.get("controller")
            and ref.get("kind") == c.TRAINJOB
            and str(ref.get("apiVersion", "")).startswith(f"{c.GROUP}/")
        ):
            return f"{meta.get('namespace', '')}/{ref.get('name')}"
    return None
