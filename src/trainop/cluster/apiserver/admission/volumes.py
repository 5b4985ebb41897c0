"""Admission of PersistentVolumeClaims, PersistentVolumes and StorageClasses (note 132).

Role: what kube-apiserver and its default admission plugins do to these kinds, so that a
claim read back here is the one a cluster would store:

- defaults (``default``, every write of the main resource): a claim's and a volume's
  ``volumeMode: Filesystem``, a volume's ``persistentVolumeReclaimPolicy: Retain`` (kube's
  default for a volume made by hand; the provisioner sets its class's), a class's
  ``reclaimPolicy: Delete`` and ``volumeBindingMode: Immediate``; on create a claim's and a
  volume's status is reset to ``phase: Pending`` (their strategies' ``PrepareForCreate``), a
  claim without a class gets the default StorageClass's name (the ``DefaultStorageClass``
  plugin: the newest class marked default) and every claim the
  ``kubernetes.io/pvc-protection`` finalizer (``StorageObjectInUseProtection``), which the
  provisioner removes once no pod uses the claim;
- validation (``errors``; ``causes`` words them exactly as kube does): access modes (at
  least one, each supported, ``ReadWriteOncePod`` alone), a claim's storage request
  (present, above zero), a volume's capacity and exactly one source (a ``hostPath`` or
  ``local`` path without ``..``, a ``local`` one absolute, with node affinity), reclaim
  policies; on update a claim's spec is immutable except its requests once bound, the
  binding itself (``volumeName`` set while empty) and a class given to a claim without one
  (kube's retroactive default class); a volume's source is immutable.

Pure functions on plain dicts, except that ``default`` reads the stored StorageClasses.
Neighbours: ``admission`` (calls ``default`` and ``causes``), ``cluster.controllers.volumes``.
"""

from __future__ import annotations

from typing import Any

from trainop.cluster.apiserver import store
from trainop.cluster.apiserver.rest import storageprinters
from trainop.engine import quantities
from trainop.errors import FieldError

PROTECTION_FINALIZER = "kubernetes.io/pvc-protection"
CLAIMS, VOLUMES = "persistentvolumeclaims", "persistentvolumes"
CLASSES_KEY = "storage.k8s.io/storageclasses"
MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
RECLAIM = ("Delete", "Recycle", "Retain")
_SOURCES = (
    "hostPath", "local", "nfs", "csi", "iscsi", "fc", "gcePersistentDisk", "awsElasticBlockStore",
    "azureDisk", "azureFile", "cephfs", "rbd", "cinder", "flexVolume", "glusterfs",
    "portworxVolume", "quobyte", "scaleIO", "storageos", "vsphereVolume", "photonPersistentDisk",
    "flocker",
)  # fmt: skip
_IMMUTABLE = (
    "spec is immutable after creation except resources.requests and "
    "volumeAttributesClassName for bound claims"
)


def judged(group: str, plural: str) -> bool:
    """Whether this module admits writes of ``group``/``plural``."""
    return (not group and plural in (CLAIMS, VOLUMES)) or (
        group == "storage.k8s.io" and plural == "storageclasses"
    )


def default(db: store.Store, group: str, plural: str, obj: dict[str, Any], *, create: bool) -> None:
    """Fill kube's defaults into ``obj`` in place (see the module docstring)."""
    if group:
        obj.setdefault("reclaimPolicy", "Delete")
        obj.setdefault("volumeBindingMode", "Immediate")
        return
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    spec.setdefault("volumeMode", "Filesystem")
    if plural == VOLUMES:
        spec.setdefault("persistentVolumeReclaimPolicy", "Retain")
    if not create:
        return
    obj["status"] = {"phase": "Pending"}
    if plural == CLAIMS:
        meta = obj.setdefault("metadata", {})
        annotations = meta.get("annotations") or {}
        if spec.get("storageClassName") is None and storageprinters.CLASS_ANNOTATION not in (
            annotations
        ):
            chosen = default_class(db)
            if chosen:
                spec["storageClassName"] = chosen
        finalizers = list(meta.get("finalizers") or [])
        if PROTECTION_FINALIZER not in finalizers:
            meta["finalizers"] = [*finalizers, PROTECTION_FINALIZER]


def default_class(db: store.Store) -> str:
    """The name of the newest StorageClass marked default ("" when none is)."""
    marked = [
        s.obj for s in db.select(resource=CLASSES_KEY) if storageprinters.is_default_class(s.obj)
    ]
    if not marked:
        return ""
    newest = max(
        marked, key=lambda o: (o["metadata"].get("creationTimestamp") or "", o["metadata"]["name"])
    )
    return str(newest["metadata"]["name"])


def causes(
    plural: str, obj: dict[str, Any], old: dict[str, Any] | None
) -> list[tuple[str, str, str]]:
    """``errors`` as kube words them: ``(field, reason, body)`` for ``status.rejected``
    (``spec.accessModes: Required value: at least 1 access mode is required``)."""
    return [(error.path, error.reason, error.body()) for error in errors(plural, obj, old)]


def errors(plural: str, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    """kube's rules for a claim or a volume (``old``: the stored one on an update)."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return []
    found = _mode_errors(spec.get("accessModes"))
    if plural == CLAIMS:
        found += _request_errors(spec)
        if old is not None:
            found += _claim_update_errors(spec, old.get("spec") or {})
    elif plural == VOLUMES:
        found += _volume_errors(spec)
        if old is not None and _source(spec) != _source(old.get("spec") or {}):
            found.append(
                FieldError(
                    "spec.persistentvolumesource",
                    "Forbidden",
                    "spec.persistentvolumesource is forbidden.",
                )
            )
    return found


def _mode_errors(modes: Any) -> list[FieldError]:
    where = "spec.accessModes"
    if not modes:
        return [FieldError(where, "Required", "at least 1 access mode is required")]
    if not isinstance(modes, list):
        return []  # the schema said so already
    supported = ", ".join(f'"{m}"' for m in MODES)
    found = [
        FieldError(
            where, "NotSupported", f'Unsupported value: "{m}": supported values: {supported}'
        )
        for m in modes
        if m not in MODES
    ]
    if "ReadWriteOncePod" in modes and len(modes) > 1:
        found.append(
            FieldError(where, "Forbidden", "may not use ReadWriteOncePod with other access modes")
        )
    return found


def _request_errors(spec: dict[str, Any]) -> list[FieldError]:
    requests = (spec.get("resources") or {}).get("requests") or {}
    if "storage" not in requests:
        return [FieldError("spec.resources[storage]", "Required", "Required value")]
    if quantities.parse(requests["storage"]).amount <= 0:
        value = requests["storage"]
        return [
            FieldError(
                "spec.resources.requests[storage]",
                "Invalid",
                f'Invalid value: "{value}": must be greater than zero',
            )
        ]
    return []


def _claim_update_errors(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    """A claim's spec may change only where kube lets it (see the module docstring)."""
    mine, theirs = dict(new), dict(old)
    if theirs.get("storageClassName") is None:  # the retroactive default class
        mine.pop("storageClassName", None)
        theirs.pop("storageClassName", None)
    if not theirs.get("volumeName"):  # binding: the PV controller sets it once
        mine.pop("volumeName", None)
        theirs.pop("volumeName", None)
    else:
        for side in (mine, theirs):
            side["resources"] = {
                k: v for k, v in (side.get("resources") or {}).items() if k != "requests"
            }
            side.pop("volumeAttributesClassName", None)
    if mine != theirs:
        return [FieldError("spec", "Forbidden", _IMMUTABLE)]
    return []


def _source(spec: dict[str, Any]) -> dict[str, Any]:
    return {k: spec[k] for k in _SOURCES if k in spec}


def _volume_errors(spec: dict[str, Any]) -> list[FieldError]:
    found: list[FieldError] = []
    if not (spec.get("capacity") or {}).get("storage"):
        found.append(FieldError("spec.capacity", "Required", "Required value"))
    policy = spec.get("persistentVolumeReclaimPolicy")
    if policy is not None and policy not in RECLAIM:
        supported = ", ".join(f'"{p}"' for p in RECLAIM)
        found.append(
            FieldError(
                "spec.persistentVolumeReclaimPolicy",
                "NotSupported",
                f'Unsupported value: "{policy}": supported values: {supported}',
            )
        )
    sources = list(_source(spec))
    if not sources:
        found.append(FieldError("spec", "Required", "must specify a volume type"))
    for extra in sources[1:]:
        found.append(
            FieldError(f"spec.{extra}", "Forbidden", "may not specify more than 1 volume type")
        )
    for kind in ("hostPath", "local"):
        if kind in sources:
            found += _path_errors(kind, spec[kind], spec)
    return found


def _path_errors(kind: str, source: Any, spec: dict[str, Any]) -> list[FieldError]:
    where = f"spec.{kind}.path"
    path = source.get("path") if isinstance(source, dict) else None
    if not path or not isinstance(path, str):
        return [FieldError(where, "Required", "Required value")]
    found: list[FieldError] = []
    if ".." in path.split("/"):
        found.append(
            FieldError(where, "Invalid", f"Invalid value: \"{path}\": must not contain '..'")
        )
    if kind == "local" and not path.startswith("/"):
        found.append(
            FieldError(where, "Invalid", f'Invalid value: "{path}": must be an absolute path')
        )
    if kind == "local" and not spec.get("nodeAffinity"):
        found.append(
            FieldError("spec.nodeAffinity", "Required", "Local volume requires node affinity")
        )
    return found
