"""The resource types the embedded API server serves, and the registry CRDs extend.

Role: one frozen ``ResourceType`` per (group, version, plural) says everything the generic
handlers need: kind, scope, verbs, short names, subresources, which fields a field selector may
name, which JSON-schema definition validates it, and whether strategic merge patch applies.
Built-in kinds are a table here; custom resources are added and removed by ``crds`` when a
CustomResourceDefinition is created or deleted.

Invariant: ``store_key`` (``group/plural``) is independent of the version, so every served
version of a resource reads and writes the same stored objects.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
META_FIELDS = ("metadata.name", "metadata.namespace")


@dataclass(frozen=True, slots=True)
class ResourceType:
    """Everything the generic handlers need to serve one resource in one version."""

    group: str
    version: str
    plural: str
    singular: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    field_labels: tuple[str, ...] = META_FIELDS
    definition: str | None = None  # JSON-schema definition in kubernetes-validate
    strategic_merge: bool = True
    returns_deleted_object: bool = False
    custom: bool = False
    schema: dict[str, Any] | None = field(default=None, compare=False, hash=False)
    scale_paths: tuple[str, str, str] | None = None  # spec, status, selector JSON paths
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS  # ("create",): a review answered, never stored
    unserved: str = ""  # discoverable, but every request gets this message (a 405 Status)

    @property
    def api_version(self) -> str:
        """The apiVersion string objects of this type carry."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def store_key(self) -> str:
        """The store's resource name: the same for every version of the resource."""
        return f"{self.group or 'core'}/{self.plural}"

    @property
    def has_status(self) -> bool:
        """Whether ``status`` is only writable through the ``/status`` subresource."""
        return "status" in self.subresources


def _builtin(
    plural: str,
    kind: str,
    *,
    group: str = "",
    version: str = "v1",
    namespaced: bool = True,
    short: tuple[str, ...] = (),
    sub: tuple[str, ...] = (),
    fields: tuple[str, ...] = META_FIELDS,
    returns_deleted: bool = False,
    verbs: tuple[str, ...] = ALL_VERBS,
    unserved: str = "",
) -> ResourceType:
    """A built-in kind (core/v1 unless ``group``/``version`` say otherwise), validated by the
    definition kubernetes-validate names after the group's first label, the version and kind."""
    api = group.split(".")[0] or "core"
    return ResourceType(
        group=group,
        version=version,
        plural=plural,
        singular=kind.lower(),
        kind=kind,
        namespaced=namespaced,
        short_names=short,
        subresources=sub,
        field_labels=fields,
        definition=f"io.k8s.api.{api}.{version}.{kind}",
        returns_deleted_object=returns_deleted,
        verbs=verbs,
        unserved=unserved,
    )


POD_FIELDS = (*META_FIELDS, "status.phase", "spec.nodeName", "spec.restartPolicy")
_INVOLVED = ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
# kube's field labels for core/v1 events (``source`` means ``source.component``);
# events.k8s.io/v1 calls ``involvedObject`` ``regarding``.
EVENT_FIELDS = (
    *META_FIELDS,
    *(f"involvedObject.{f}" for f in _INVOLVED),
    "reason",
    "reportingComponent",
    "source",
    "type",
)

BUILTIN: tuple[ResourceType, ...] = (
    _builtin(
        "namespaces",
        "Namespace",
        namespaced=False,
        short=("ns",),
        sub=("status",),
        fields=("metadata.name", "status.phase"),
        returns_deleted=True,
    ),
    _builtin(
        "pods",
        "Pod",
        short=("po",),
        sub=("status", "log", "binding", "exec", "attach", "portforward"),
        fields=POD_FIELDS,
        returns_deleted=True,
    ),
    _builtin(
        "nodes",
        "Node",
        namespaced=False,
        short=("no",),
        sub=("status",),
        fields=("metadata.name", "spec.unschedulable"),
    ),
    _builtin("services", "Service", short=("svc",), sub=("status",), returns_deleted=True),
    _builtin("endpoints", "Endpoints", short=("ep",)),
    _builtin("configmaps", "ConfigMap", short=("cm",)),
    _builtin("secrets", "Secret", fields=(*META_FIELDS, "type")),
    _builtin("serviceaccounts", "ServiceAccount", short=("sa",), sub=("token",)),
    _builtin(
        "events",
        "Event",
        short=("ev",),
        fields=EVENT_FIELDS,
    ),
    _builtin(
        "events",
        "Event",
        group="events.k8s.io",
        short=("ev",),
        fields=(
            *META_FIELDS,
            *(f"regarding.{f}" for f in _INVOLVED),
            "reason",
            "reportingController",
            "type",
        ),
    ),
    _builtin("leases", "Lease", group="coordination.k8s.io"),
    # Local volumes (``cluster.controllers.volumes``, note 132): claims, the volumes that
    # the local provisioner binds them to, and the storage class that names it.
    _builtin("persistentvolumeclaims", "PersistentVolumeClaim", short=("pvc",), sub=("status",)),
    _builtin(
        "persistentvolumes", "PersistentVolume", namespaced=False, short=("pv",), sub=("status",)
    ),
    _builtin(
        "storageclasses", "StorageClass", group="storage.k8s.io", namespaced=False, short=("sc",)
    ),
    _builtin(
        "horizontalpodautoscalers",
        "HorizontalPodAutoscaler",
        group="autoscaling",
        version="v2",
        short=("hpa",),
        sub=("status",),
    ),
    # batch/v1 Jobs run: local mode has Kubernetes' Job controller (``cluster.controllers.jobs``,
    # note 130); kube-apiserver's Job rules are ``admission.batchjobs``.
    _builtin("jobs", "Job", group="batch", sub=("status",)),
    # Stored as data only: local mode enforces no RBAC and calls no admission webhooks (its
    # rules run in-process), so applying an install manifest's RBAC and webhook configuration
    # changes nothing about what any client may do; they are served so that it applies.
    *(
        _builtin(f"{kind.lower()}s", kind, group=group, namespaced=namespaced)
        for group, kind, namespaced in (
            ("rbac.authorization.k8s.io", "Role", True),
            ("rbac.authorization.k8s.io", "RoleBinding", True),
            ("rbac.authorization.k8s.io", "ClusterRole", False),
            ("rbac.authorization.k8s.io", "ClusterRoleBinding", False),
            ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration", False),
            ("admissionregistration.k8s.io", "MutatingWebhookConfiguration", False),
        )
    ),
    *(
        _builtin(f"{kind.lower()}s", kind, group=group, namespaced=False, verbs=("create",))
        for group, kind in (
            ("authorization.k8s.io", "SelfSubjectAccessReview"),
            ("authorization.k8s.io", "SelfSubjectRulesReview"),
            ("authentication.k8s.io", "SelfSubjectReview"),
        )
    ),
    ResourceType(
        group="apiextensions.k8s.io",
        version="v1",
        plural="customresourcedefinitions",
        singular="customresourcedefinition",
        kind="CustomResourceDefinition",
        namespaced=False,
        short_names=("crd", "crds"),
        subresources=("status",),
        field_labels=("metadata.name",),
        definition="io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1."
        "CustomResourceDefinition",
    ),
)


def _unserved(kind: str, short: tuple[str, ...], group: str = "apps") -> ResourceType:
    return _builtin(
        f"{kind.lower()}s",
        kind,
        group=group,
        short=short,
        unserved=(
            f"{kind}s are not served in local mode: trainop local runs the training operator "
            f"itself and has no controller that would run a {kind}'s pods (the other objects "
            "of an apply are not affected); run training jobs (PyTorchJob, TFJob, MPIJob, ...) "
            "here, or use a Kubernetes cluster"
        ),
    )


# Workload kinds kubectl users reach for that local mode does not run: discoverable, so
# ``kubectl apply`` reaches the server and shows why instead of "no matches for kind".
UNSERVED: tuple[ResourceType, ...] = (
    _unserved("Deployment", ("deploy",)),
    _unserved("StatefulSet", ("sts",)),
    _unserved("DaemonSet", ("ds",)),
    _unserved("ReplicaSet", ("rs",)),
    _unserved("CronJob", ("cj",), group="batch"),
)


class Registry:
    """Served resource types by (group, version, plural), plus lookups by kind."""

    def __init__(self) -> None:
        self._types: dict[tuple[str, str, str], ResourceType] = {}
        for rt in (*BUILTIN, *UNSERVED):
            self.add(rt)

    def add(self, rt: ResourceType) -> None:
        """Serve ``rt`` (replacing a previous definition of the same group/version/plural)."""
        self._types[(rt.group, rt.version, rt.plural)] = rt

    def remove_group_resource(self, *, group: str, plural: str) -> None:
        """Stop serving every version of ``plural.group``."""
        for k in [k for k in self._types if k[0] == group and k[2] == plural]:
            del self._types[k]

    def find(self, *, group: str, version: str, plural: str) -> ResourceType | None:
        """The resource served at that path, or None."""
        return self._types.get((group, version, plural))

    def by_store_key(self, store_key: str) -> ResourceType | None:
        """Any served version of the resource stored under ``store_key``."""
        for rt in self._types.values():
            if rt.store_key == store_key:
                return rt
        return None

    def __iter__(self) -> Iterator[ResourceType]:
        return iter(list(self._types.values()))

    def groups(self) -> dict[str, list[str]]:
        """Named groups (not core) and their versions, in registration order."""
        out: dict[str, list[str]] = {}
        for rt in self._types.values():
            if rt.group and rt.version not in out.setdefault(rt.group, []):
                out[rt.group].append(rt.version)
        return out
