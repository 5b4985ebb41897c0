"""kube-apiserver's printed columns for PersistentVolumeClaims, PersistentVolumes, StorageClasses.

The columns and cells are those of kube's own printers (Kubernetes 1.31+): a claim shows its
phase (``Terminating`` while being deleted), the volume it is bound to and, once bound, the
capacity and access modes of its status; a volume its capacity, access modes, reclaim
policy, phase, claim (``<namespace>/<name>``) and reason; both the storage class (the beta
annotation first, then ``storageClassName``), the volume attributes class (``<unset>``) and,
under ``-o wide``, the volume mode. A StorageClass's name carries `` (default)`` when it is
the default class. Access modes print as kube abbreviates them, in kube's fixed order
(``RWO,ROX,RWX,RWOP``), each once. ``tables`` looks these printers up beside ``printers``'.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from trainop.cluster.apiserver.rest.printers import AGE, NAME, Cells, Column, RowFunction, age
from trainop.cluster.apiserver.rest.printers import column as _column

UNSET = "<unset>"
CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"
DEFAULT_CLASS_ANNOTATIONS = (
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
)
_MODES = (
    ("ReadWriteOnce", "RWO"),
    ("ReadOnlyMany", "ROX"),
    ("ReadWriteMany", "RWX"),
    ("ReadWriteOncePod", "RWOP"),
)


def access_modes(modes: object) -> str:
    """kube's abbreviation of a list of access modes (``RWO,RWX``)."""
    given = modes if isinstance(modes, list) else []
    return ",".join(short for mode, short in _MODES if mode in given)


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _storage_class(obj: dict[str, Any]) -> str:
    annotation = (_meta(obj).get("annotations") or {}).get(CLASS_ANNOTATION)
    if annotation is not None:
        return str(annotation)
    return str((obj.get("spec") or {}).get("storageClassName") or "")


def _phase(obj: dict[str, Any]) -> str:
    if _meta(obj).get("deletionTimestamp"):
        return "Terminating"
    return str((obj.get("status") or {}).get("phase") or "")


def _claim_row(obj: dict[str, Any], now: datetime) -> Cells:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    capacity = modes = ""
    if spec.get("volumeName"):
        capacity = str((status.get("capacity") or {}).get("storage") or "0")
        modes = access_modes(status.get("accessModes"))
    attributes = status.get("currentVolumeAttributesClassName") or spec.get(
        "volumeAttributesClassName"
    )
    return [
        _meta(obj).get("name", ""),
        _phase(obj),
        spec.get("volumeName") or "",
        capacity,
        modes,
        _storage_class(obj),
        attributes or UNSET,
        age(obj, now),
        spec.get("volumeMode") or UNSET,
    ]


def _volume_row(obj: dict[str, Any], now: datetime) -> Cells:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    ref = spec.get("claimRef") or {}
    claim = f"{ref.get('namespace', '')}/{ref.get('name', '')}" if ref else ""
    return [
        _meta(obj).get("name", ""),
        str((spec.get("capacity") or {}).get("storage") or "0"),
        access_modes(spec.get("accessModes")),
        spec.get("persistentVolumeReclaimPolicy") or "",
        _phase(obj),
        claim,
        _storage_class(obj),
        spec.get("volumeAttributesClassName") or UNSET,
        status.get("reason") or "",
        age(obj, now),
        spec.get("volumeMode") or UNSET,
    ]


def is_default_class(obj: dict[str, Any]) -> bool:
    """Whether a StorageClass is marked the default (either of kube's annotations)."""
    annotations = _meta(obj).get("annotations") or {}
    return any(annotations.get(key) == "true" for key in DEFAULT_CLASS_ANNOTATIONS)


def _class_row(obj: dict[str, Any], now: datetime) -> Cells:
    name = str(_meta(obj).get("name", ""))
    if is_default_class(obj):
        name += " (default)"
    return [
        name,
        obj.get("provisioner") or "",
        obj.get("reclaimPolicy") or "Delete",
        obj.get("volumeBindingMode") or "Immediate",
        bool(obj.get("allowVolumeExpansion")),
        age(obj, now),
    ]


_VOLUME_MODE = _column("VolumeMode", "Filesystem or Block.", priority=1)
_CLASS = _column("StorageClass", "The storage class of the volume.")
_ATTRIBUTES = _column("VolumeAttributesClass", "The volume attributes class.")
_MODES_COLUMN = _column("Access Modes", "The ways the volume can be mounted.")
CLAIM_COLUMNS: list[Column] = [
    NAME,
    _column("Status", "The phase of the claim."),
    _column("Volume", "The volume the claim is bound to."),
    _column("Capacity", "The capacity of the bound volume."),
    _MODES_COLUMN,
    _CLASS,
    _ATTRIBUTES,
    AGE,
    _VOLUME_MODE,
]
VOLUME_COLUMNS: list[Column] = [
    NAME,
    _column("Capacity", "The capacity of the volume."),
    _MODES_COLUMN,
    _column("Reclaim Policy", "What happens to the volume when its claim is deleted."),
    _column("Status", "The phase of the volume."),
    _column("Claim", "The claim the volume is bound to."),
    _CLASS,
    _ATTRIBUTES,
    _column("Reason", "Why the volume is in its phase."),
    AGE,
    _VOLUME_MODE,
]
CLASS_COLUMNS: list[Column] = [
    NAME,
    _column("Provisioner", "The provisioner of the class."),
    _column("ReclaimPolicy", "The reclaim policy of volumes provisioned for the class."),
    _column("VolumeBindingMode", "When claims of the class are bound."),
    _column("AllowVolumeExpansion", "Whether claims of the class may grow."),
    AGE,
]

BUILTIN: dict[str, tuple[list[Column], RowFunction]] = {
    "core/persistentvolumeclaims": (CLAIM_COLUMNS, _claim_row),
    "core/persistentvolumes": (VOLUME_COLUMNS, _volume_row),
    "storage.k8s.io/storageclasses": (CLASS_COLUMNS, _class_row),
}
