"""Kubernetes resource descriptors: where a kind lives in the REST API.

A ``Resource`` names the group, version, plural and kind of an API resource and whether it is
namespaced; ``path`` builds its REST path. The well-known resources the operator touches are
constants here; the job kinds come from ``trainop.api.kinds`` through ``job_resource``.
"""

from __future__ import annotations

from dataclasses import dataclass

from trainop.api.kinds import KindInfo


@dataclass(frozen=True, slots=True)
class Resource:
    """One API resource (``pods``, ``pytorchjobs.kubeflow.org`` ...)."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(
        self, *, namespace: str | None = None, name: str | None = None, subresource: str = ""
    ) -> str:
        """The REST path of the collection, or of one object (and one of its subresources)."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace is not None:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name is not None:
            base += f"/{name}"
            if subresource:
                base += f"/{subresource}"
        return base


PODS = Resource("", "v1", "pods", "Pod")
SERVICES = Resource("", "v1", "services", "Service")
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
SECRETS = Resource("", "v1", "secrets", "Secret")
EVENTS = Resource("", "v1", "events", "Event")
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease")
HPAS = Resource("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler")
VOLCANO_PODGROUPS = Resource("scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup")
COSCHEDULING_PODGROUPS = Resource("scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup")
CRDS = Resource(
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False
)


SERVICEACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")
ROLES = Resource("rbac.authorization.k8s.io", "v1", "roles", "Role")
ROLEBINDINGS = Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding")

_KNOWN = {
    (r.api_version, r.kind): r
    for r in (
        PODS,
        SERVICES,
        CONFIGMAPS,
        SECRETS,
        EVENTS,
        NAMESPACES,
        LEASES,
        HPAS,
        VOLCANO_PODGROUPS,
        COSCHEDULING_PODGROUPS,
        CRDS,
        SERVICEACCOUNTS,
        ROLES,
        ROLEBINDINGS,
    )
}


def resource_for(*, api_version: str, kind: str) -> Resource:
    """The resource of objects with this ``apiVersion`` and ``kind``.

    Known kinds come from the table above; any other is assumed namespaced with the
    conventional lower-case plural (``<kind>s``).
    """
    known = _KNOWN.get((api_version, kind))
    if known is not None:
        return known
    group, _, version = api_version.rpartition("/")
    return Resource(group, version, f"{kind.lower()}s", kind)


def job_resource(info: KindInfo) -> Resource:
    """The resource of a kubeflow.org/v1 job kind."""
    return Resource("kubeflow.org", "v1", info.plural, info.kind)
