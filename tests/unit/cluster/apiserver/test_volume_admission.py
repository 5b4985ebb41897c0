"""Admission of claims, volumes and classes (``admission.volumes``) and their printed rows."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from trainop.cluster.apiserver.admission import volumes
from trainop.cluster.apiserver.rest import storageprinters

Obj = dict[str, Any]
NOW = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass
class Stored:
    obj: Obj


class Classes:
    """The one store read ``default`` makes: the StorageClasses."""

    def __init__(self, *classes: Obj) -> None:
        self._classes = [Stored(c) for c in classes]

    def select(self, *, resource: str, namespace: str | None = None) -> list[Stored]:
        assert resource == "storage.k8s.io/storageclasses"
        return self._classes


def storage_class(name: str, created: str, *, default: bool = True) -> Obj:
    annotations = {"storageclass.kubernetes.io/is-default-class": "true"} if default else {}
    meta = {"name": name, "creationTimestamp": created, "annotations": annotations}
    return {"metadata": meta, "provisioner": "p"}


def claim(**spec: Any) -> Obj:
    body = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    return {"metadata": {"name": "c", "namespace": "ns"}, "spec": {**body, **spec},
            "status": {"phase": "Bound"}}  # fmt: skip


def test_a_new_claim_gets_the_newest_default_class_the_finalizer_and_pending() -> None:
    db = Classes(
        storage_class("old", "2025-01-01T00:00:00Z"),
        storage_class("new", "2025-06-01T00:00:00Z"),
        storage_class("newest-not-default", "2025-09-01T00:00:00Z", default=False),
    )
    new = claim()
    volumes.default(db, "", "persistentvolumeclaims", new, create=True)  # type: ignore[arg-type]
    assert new["spec"]["storageClassName"] == "new"
    assert new["spec"]["volumeMode"] == "Filesystem"
    assert new["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
    assert new["status"] == {"phase": "Pending"}


@pytest.mark.parametrize("given", [{"storageClassName": ""}, {"storageClassName": "fast"}])
def test_a_class_the_claim_names_even_empty_is_kept(given: Obj) -> None:
    new = claim(**given)
    volumes.default(
        Classes(storage_class("d", "x")), "", "persistentvolumeclaims", new, create=True
    )  # type: ignore[arg-type]
    assert new["spec"]["storageClassName"] == given["storageClassName"]


def test_without_a_default_class_the_class_stays_unset() -> None:
    new = claim()
    volumes.default(Classes(), "", "persistentvolumeclaims", new, create=True)  # type: ignore[arg-type]
    assert "storageClassName" not in new["spec"]


def test_volume_and_class_defaults() -> None:
    pv: Obj = {"spec": {"capacity": {"storage": "1Gi"}}}
    volumes.default(Classes(), "", "persistentvolumes", pv, create=True)  # type: ignore[arg-type]
    assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    assert pv["status"] == {"phase": "Pending"}
    sc: Obj = {"metadata": {"name": "s"}, "provisioner": "p"}
    volumes.default(Classes(), "storage.k8s.io", "storageclasses", sc, create=True)  # type: ignore[arg-type]
    assert (sc["reclaimPolicy"], sc["volumeBindingMode"]) == ("Delete", "Immediate")


def messages(plural: str, obj: Obj, old: Obj | None = None) -> list[str]:
    """What kube-apiserver's message says after ``<Kind> "<name>" is invalid: ``."""
    return [f"{path}: {body}" for path, _, body in volumes.causes(plural, obj, old)]


def test_claim_rules_with_kubes_messages() -> None:
    assert messages("persistentvolumeclaims", claim()) == []
    assert messages("persistentvolumeclaims", claim(accessModes=[])) == [
        "spec.accessModes: Required value: at least 1 access mode is required"
    ]
    assert messages(
        "persistentvolumeclaims", claim(accessModes=["ReadWriteOncePod", "ReadWriteOnce"])
    ) == ["spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes"]
    assert messages("persistentvolumeclaims", claim(accessModes=["Sometimes"])) == [
        'spec.accessModes: Unsupported value: "Sometimes": supported values: '
        '"ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"'
    ]
    assert messages("persistentvolumeclaims", claim(resources={})) == [
        "spec.resources[storage]: Required value"
    ]
    assert messages("persistentvolumeclaims", claim(resources={"requests": {"storage": "0"}})) == [
        'spec.resources.requests[storage]: Invalid value: "0": must be greater than zero'
    ]


def test_a_claims_spec_is_immutable_but_for_binding_and_a_bound_claims_requests() -> None:
    old = claim()
    binding = claim(volumeName="pvc-1")
    assert messages("persistentvolumeclaims", binding, old) == []
    grown = claim(volumeName="pvc-1", resources={"requests": {"storage": "2Gi"}})
    assert messages("persistentvolumeclaims", grown, binding) == []
    immutable = [
        "spec: Forbidden: spec is immutable after creation except resources.requests and "
        "volumeAttributesClassName for bound claims"
    ]
    assert (
        messages("persistentvolumeclaims", claim(accessModes=["ReadWriteMany"]), old) == immutable
    )
    unbound_grown = claim(resources={"requests": {"storage": "2Gi"}})
    assert messages("persistentvolumeclaims", unbound_grown, old) == immutable
    rebound = claim(volumeName="pvc-2")
    assert messages("persistentvolumeclaims", rebound, binding) == immutable
    assert messages("persistentvolumeclaims", claim(storageClassName="late"), old) == []


def pv(**spec: Any) -> Obj:
    body = {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], **spec}
    return {"metadata": {"name": "v"}, "spec": body}


def test_volume_rules_with_kubes_messages() -> None:
    assert messages("persistentvolumes", pv(hostPath={"path": "/data"})) == []
    assert messages("persistentvolumes", pv()) == [
        "spec: Required value: must specify a volume type"
    ]
    two = pv(hostPath={"path": "/a"}, nfs={"server": "s", "path": "/"})
    assert messages("persistentvolumes", two) == [
        "spec.nfs: Forbidden: may not specify more than 1 volume type"
    ]
    assert messages("persistentvolumes", pv(hostPath={"path": "/a/../etc"})) == [
        "spec.hostPath.path: Invalid value: \"/a/../etc\": must not contain '..'"
    ]
    assert messages("persistentvolumes", pv(local={"path": "rel"})) == [
        'spec.local.path: Invalid value: "rel": must be an absolute path',
        "spec.nodeAffinity: Required value: Local volume requires node affinity",
    ]
    assert messages(
        "persistentvolumes", pv(hostPath={"path": "/a"}, persistentVolumeReclaimPolicy="Keep")
    ) == [
        'spec.persistentVolumeReclaimPolicy: Unsupported value: "Keep": '
        'supported values: "Delete", "Recycle", "Retain"'
    ]
    moved = pv(hostPath={"path": "/b"})
    assert messages("persistentvolumes", moved, pv(hostPath={"path": "/a"})) == [
        "spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is forbidden."
    ]


def row(store_key: str, obj: Obj) -> list[Any]:
    _, make = storageprinters.BUILTIN[store_key]
    return make(obj, NOW)


def test_printed_rows_as_kube_prints_them() -> None:
    bound = claim(volumeName="pvc-1", storageClassName="standard", volumeMode="Filesystem")
    modes = ["ReadWriteMany", "ReadWriteOnce", "ReadWriteOnce"]
    bound["status"] = {"phase": "Bound", "capacity": {"storage": "1Gi"}, "accessModes": modes}
    bound["metadata"]["creationTimestamp"] = "2025-12-31T23:59:00Z"
    assert row("core/persistentvolumeclaims", bound) == [
        "c", "Bound", "pvc-1", "1Gi", "RWO,RWX", "standard", "<unset>", "60s", "Filesystem",
    ]  # fmt: skip
    pending = claim()
    pending["status"] = {"phase": "Pending"}
    pending["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert row("core/persistentvolumeclaims", pending)[1:5] == ["Terminating", "", "", ""]
    volume = pv(hostPath={"path": "/d"}, persistentVolumeReclaimPolicy="Retain",
                claimRef={"namespace": "ns", "name": "c"}, storageClassName="standard")  # fmt: skip
    volume["status"] = {"phase": "Released", "reason": "gone"}
    assert row("core/persistentvolumes", volume)[:9] == [
        "v", "1Gi", "RWO", "Retain", "Released", "ns/c", "standard", "<unset>", "gone",
    ]  # fmt: skip
    sc = storage_class("standard", "2025-12-31T00:00:00Z")
    assert row("storage.k8s.io/storageclasses", sc)[:5] == [
        "standard (default)", "p", "Delete", "Immediate", False,
    ]  # fmt: skip


def test_column_names_are_kubes() -> None:
    names = [c["name"] for c in storageprinters.CLAIM_COLUMNS]
    assert names == ["Name", "Status", "Volume", "Capacity", "Access Modes", "StorageClass",
                     "VolumeAttributesClass", "Age", "VolumeMode"]  # fmt: skip
    assert storageprinters.CLAIM_COLUMNS[-1]["priority"] == 1
    names = [c["name"] for c in storageprinters.VOLUME_COLUMNS]
    assert names == ["Name", "Capacity", "Access Modes", "Reclaim Policy", "Status", "Claim",
                     "StorageClass", "VolumeAttributesClass", "Reason", "Age",
                     "VolumeMode"]  # fmt: skip
