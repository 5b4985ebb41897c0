"""The provisioner's decisions, pure: which volume a claim binds to, and what a volume becomes.

``claim_step`` decides for one claim that is not being deleted, given the volumes and
classes known:

- no class at all (``storageClassName`` absent, not even ``""``): the default class is given
  to it (kube's retroactive default class, for a claim made before a default existed);

- bound both ways (``spec.volumeName`` set, the volume's ``claimRef`` is this claim): its
  status says ``Bound`` with the volume's capacity and access modes;
- ``spec.volumeName`` naming a volume that no longer exists: ``Lost``, as kube says;
- unbound: the smallest ``Available`` volume that fits (same class, every access mode the
  claim asks for, at least its request, pre-bound to it or to no claim), else, when the
  claim's class is this provisioner's, a new volume named ``pvc-<claim uid>`` (kube's dynamic
  provisioning name) with the claim's modes and request and the class's reclaim policy
  (a ``Block`` claim gets none, with a ``ProvisioningFailed`` Warning: a directory is no
  block device); otherwise it stays ``Pending``.

``volume_step`` decides for one volume: ``Pending`` without a claim becomes ``Available``;
a volume whose claim is gone (missing, or another object of that name: another uid) is
reclaimed by its policy (``Delete``: the directory and the volume go; ``Retain`` and
``Recycle``: ``Released``, the directory kept); one that names a live claim says ``Bound``
(from the moment its ``claimRef`` is written, as kube's controller does, so that no other
claim takes it meanwhile).

``claims_in_use`` says whether a running pod mounts a claim (the ``kubernetes.io/pvc-protection``
finalizer stays until none does). Neighbours: ``provisioner`` (applies these), ``directories``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from trainop.engine import quantities

Obj = dict[str, Any]
PROVISIONER = "trainop.dev/local-path"
DEFAULT_CLASS = "standard"
PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
STORAGE_PROVISIONER = ("volume.kubernetes.io/storage-provisioner",
                       "volume.beta.kubernetes.io/storage-provisioner")  # fmt: skip
DEFAULT_ANNOTATION = "storageclass.kubernetes.io/is-default-class"
BETA_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"
_TERMINAL = ("Succeeded", "Failed")


def default_class() -> Obj:
    """The session's default StorageClass: this provisioner, volumes deleted with their
    claims, bound as soon as they are created (one node: nothing to wait for)."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": DEFAULT_CLASS, "annotations": {DEFAULT_ANNOTATION: "true"}},
        "provisioner": PROVISIONER,
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "Immediate",
        "allowVolumeExpansion": False,
    }


def default_class_of(classes: Mapping[str, Obj]) -> str:
    """The newest class marked default ("" when none is), as kube chooses it."""
    marked = [
        c for c in classes.values()
        if (_meta(c).get("annotations") or {}).get(DEFAULT_ANNOTATION) == "true"
    ]  # fmt: skip
    if not marked:
        return ""
    newest = max(
        marked,
        key=lambda c: (str(_meta(c).get("creationTimestamp") or ""), str(_meta(c).get("name"))),
    )
    return str(_meta(newest).get("name") or "")


@dataclass(slots=True)
class ClaimStep:
    """What to do for one claim: create a volume, bind one (both sides), write status."""

    assign_class: str = ""  # the default class, for a claim that names none (yet)
    create: Obj | None = None  # a new volume, already pointing at the claim
    bind: str = ""  # the volume to bind the claim to (``spec.volumeName`` and ``claimRef``)
    status: Obj | None = None  # the claim's new status
    event: tuple[str, str, str] | None = None  # (type, reason, message) about the claim


@dataclass(slots=True)
class VolumeStep:
    """What to do for one volume: a new status, or reclaim it (delete it and its directory)."""

    status: Obj | None = None
    delete: bool = False


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _size(value: object) -> Decimal:
    return quantities.parse(value).amount


def requested(claim: Mapping[str, Any]) -> str:
    """The claim's storage request as written."""
    return str(((_spec(claim).get("resources") or {}).get("requests") or {}).get("storage", "0"))


def claim_ref(claim: Mapping[str, Any]) -> Obj:
    """The ``claimRef`` of a volume bound to ``claim``."""
    meta = _meta(claim)
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "namespace": meta.get("namespace", ""),
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
    }


def refers_to(volume: Mapping[str, Any], claim: Mapping[str, Any]) -> bool:
    """Whether the volume's ``claimRef`` names this claim (and this object of that name)."""
    ref = _spec(volume).get("claimRef") or {}
    meta = _meta(claim)
    same = (ref.get("namespace"), ref.get("name")) == (meta.get("namespace"), meta.get("name"))
    return same and ref.get("uid") in (None, "", meta.get("uid"))


def bound_status(volume: Mapping[str, Any]) -> Obj:
    """A bound claim's status: the volume's access modes and capacity."""
    spec = _spec(volume)
    return {
        "phase": "Bound",
        "accessModes": list(spec.get("accessModes") or []),
        "capacity": dict(spec.get("capacity") or {}),
    }


def claim_step(
    claim: Mapping[str, Any],
    volumes: Mapping[str, Obj],
    classes: Mapping[str, Obj],
    *,
    directory: str,
) -> ClaimStep:
    """The decision for one live claim (module docstring); ``directory`` is where a volume
    provisioned for it would live."""
    spec, status = _spec(claim), claim.get("status") or {}
    bound_to = str(spec.get("volumeName") or "")
    if bound_to:
        volume = volumes.get(bound_to)
        if volume is None:
            return ClaimStep(status=None if status.get("phase") == "Lost" else {"phase": "Lost"})
        if not refers_to(volume, claim):
            if (_spec(volume).get("claimRef") or None) is None:
                return ClaimStep(bind=bound_to, status=bound_status(volume))  # pre-bound claim
            return ClaimStep()  # the volume is another claim's: stays Pending
        wanted = bound_status(volume)
        same = all(status.get(k) == v for k, v in wanted.items())
        return ClaimStep(status=None if same else wanted)
    class_name = spec.get("storageClassName")
    annotations = _meta(claim).get("annotations") or {}
    if class_name is None and BETA_CLASS_ANNOTATION not in annotations:
        default = default_class_of(classes)
        if default:
            return ClaimStep(assign_class=default)
    match = best_match(claim, volumes.values())
    if match is not None:
        return ClaimStep(bind=str(_meta(match)["name"]), status=bound_status(match))
    chosen = classes.get(str(class_name)) if class_name else None
    if chosen is None or chosen.get("provisioner") != PROVISIONER:
        return ClaimStep()
    if spec.get("volumeMode") == "Block":
        message = f"{PROVISIONER} makes directories: volumeMode Block is not supported"
        return ClaimStep(event=("Warning", "ProvisioningFailed", message))
    volume = provisioned_volume(claim, chosen, directory=directory)
    message = f"Successfully provisioned volume {volume['metadata']['name']}"
    return ClaimStep(
        create=volume,
        bind=str(volume["metadata"]["name"]),
        status=bound_status(volume),
        event=("Normal", "ProvisioningSucceeded", message),
    )


def volume_name(claim: Mapping[str, Any]) -> str:
    """The name of the volume provisioned for ``claim``: ``pvc-<uid>``."""
    return f"pvc-{_meta(claim).get('uid', '')}"


def provisioned_volume(
    claim: Mapping[str, Any], storage_class: Mapping[str, Any], *, directory: str
) -> Obj:
    """A new volume for ``claim`` in ``storage_class``, its data in ``directory``."""
    spec = _spec(claim)
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {
            "name": volume_name(claim),
            "annotations": {PROVISIONED_BY: PROVISIONER},
        },
        "spec": {
            "capacity": {"storage": requested(claim)},
            "accessModes": list(spec.get("accessModes") or []),
            "persistentVolumeReclaimPolicy": storage_class.get("reclaimPolicy") or "Delete",
            "storageClassName": _meta(storage_class).get("name", ""),
            "volumeMode": spec.get("volumeMode") or "Filesystem",
            "hostPath": {"path": directory, "type": "Directory"},
            "claimRef": claim_ref(claim),
        },
    }


def best_match(claim: Mapping[str, Any], volumes: Iterable[Obj]) -> Obj | None:
    """The smallest ``Available`` volume that fits the claim (module docstring), or None."""
    spec = _spec(claim)
    wanted_modes = set(spec.get("accessModes") or [])
    wanted_size = _size(requested(claim))
    wanted_class = spec.get("storageClassName") or ""
    fitting = []
    for volume in volumes:
        vspec = _spec(volume)
        ref = vspec.get("claimRef")
        if ref and not refers_to(volume, claim):
            continue
        phase = (volume.get("status") or {}).get("phase")
        if phase != "Available" and not (ref and phase == "Bound"):  # Bound: half-bound to it
            continue
        if (vspec.get("storageClassName") or "") != wanted_class:
            continue
        if not wanted_modes <= set(vspec.get("accessModes") or []):
            continue
        size = _size((vspec.get("capacity") or {}).get("storage"))
        if size >= wanted_size:
            fitting.append((0 if ref else 1, size, str(_meta(volume).get("name")), volume))
    return min(fitting, key=lambda item: item[:3])[3] if fitting else None


def volume_step(volume: Mapping[str, Any], claims: Mapping[tuple[str, str], Obj]) -> VolumeStep:
    """The decision for one volume (module docstring)."""
    spec, status = _spec(volume), volume.get("status") or {}
    phase = status.get("phase")
    ref = spec.get("claimRef")
    if not ref:
        return VolumeStep(status=None if phase == "Available" else {"phase": "Available"})
    claim = claims.get((str(ref.get("namespace", "")), str(ref.get("name", ""))))
    gone = claim is None or (ref.get("uid") and _meta(claim).get("uid") != ref.get("uid"))
    if gone:
        if spec.get("persistentVolumeReclaimPolicy") == "Delete":
            return VolumeStep(delete=True)
        if phase == "Released":
            return VolumeStep()
        return VolumeStep(status={"phase": "Released"})
    return VolumeStep(status=None if phase == "Bound" else {"phase": "Bound"})


def claims_in_use(pods: Iterable[Mapping[str, Any]]) -> set[tuple[str, str]]:
    """(namespace, claim) of every claim a pod that has not finished mounts."""
    found: set[tuple[str, str]] = set()
    for pod in pods:
        if (pod.get("status") or {}).get("phase") in _TERMINAL:
            continue
        namespace = str(_meta(pod).get("namespace") or "")
        for volume in _spec(pod).get("volumes") or []:
            source = volume.get("persistentVolumeClaim") if isinstance(volume, Mapping) else None
            if isinstance(source, Mapping) and source.get("claimName"):
                found.add((namespace, str(source["claimName"])))
    return found
