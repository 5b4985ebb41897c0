"""``persistentVolumeClaim`` volumes: from a claim to its volume's directory, and read-only use.

``resolve`` looks up, through the API, each claim a pod's volumes name and the volume it is
bound to, as kubelet's volume manager does before it mounts anything; it answers each claim's
directory (the bound volume's ``hostPath`` or ``local`` path), or kubelet's words for why the
pod cannot use it yet: the claim is missing, being deleted, not ``Bound``, or its volume is
missing or bound to another claim. ``sandbox.prepare`` raises those as a ``ConfigError``.

Read-only: ``read_only_mounts`` makes every mount of a volume whose claim source says
``readOnly`` read-only (kubelet ORs the two); the container runtimes mount such a claim with
``ro``; host processes get ``read_only_copy``, a copy of the claim without write permission
(see ``sandbox``). ``writable`` undoes that so the sandbox can be removed.
Neighbours: ``podconfig`` (calls ``resolve`` where it fetches ConfigMaps and Secrets),
``sandbox``, ``cluster.controllers.volumes`` (binds the claims).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from trainop import errors
from trainop.cluster import privacy
from trainop.kube.client import Client
from trainop.kube.resources import Resource

Raw = dict[str, Any]
CLAIMS = Resource("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim")
VOLUMES = Resource("", "v1", "persistentvolumes", "PersistentVolume", namespaced=False)


async def resolve(client: Client, pod: Raw) -> dict[str, Path | str]:
    """Each claim the pod's volumes name: its volume's directory, or why the pod cannot use
    it yet (module docstring)."""
    namespace = str((pod.get("metadata") or {}).get("namespace") or "default")
    found: dict[str, Path | str] = {}
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        source = volume.get("persistentVolumeClaim")
        if isinstance(source, dict) and source.get("claimName"):
            name = str(source["claimName"])
            found[name] = await _directory(client, namespace, name)
    return found


async def _directory(client: Client, namespace: str, name: str) -> Path | str:
    where = f"error processing PVC {namespace}/{name}"
    try:
        claim = await client.get(CLAIMS, name=name, namespace=namespace)
    except errors.NotFoundError:
        missing = f'persistentvolumeclaims "{name}" not found'
        return f"{where}: failed to fetch PVC from API server: {missing}"
    if claim["metadata"].get("deletionTimestamp"):
        return f"{where}: can't start pod because PVC is being deleted"
    phase = str((claim.get("status") or {}).get("phase") or "")
    volume_name = str((claim.get("spec") or {}).get("volumeName") or "")
    if phase != "Bound" or not volume_name:
        return (
            f'{where}: PVC {namespace}/{name} has non-bound phase ("{phase}") '
            f'or empty pvc.Spec.VolumeName ("{volume_name}")'
        )
    try:
        volume = await client.get(VOLUMES, name=volume_name)
    except errors.NotFoundError:
        missing = f'persistentvolumes "{volume_name}" not found'
        return f"{where}: failed to fetch PV {volume_name} from API server: {missing}"
    spec = volume.get("spec") or {}
    ref = spec.get("claimRef") or {}
    if ref.get("uid") != claim["metadata"].get("uid"):
        return f"{where}: PV {volume_name} is bound to another claim"
    source = spec.get("hostPath") or spec.get("local") or {}
    if not source.get("path"):
        return f"{where}: PV {volume_name}: only hostPath and local volumes mount in local mode"
    return Path(str(source["path"]))


def claim_volumes(pod: Raw) -> set[str]:
    """The names of the pod's ``persistentVolumeClaim`` volumes."""
    volumes = (pod.get("spec") or {}).get("volumes") or []
    return {str(v["name"]) for v in volumes if v.get("persistentVolumeClaim")}


def read_only_mounts(pod: Raw, container: Raw) -> Raw:
    """``container`` with ``readOnly: true`` on every mount of a claim volume that says
    ``readOnly`` (kubelet mounts those read-only whatever the mount says); others as given."""
    volumes = (pod.get("spec") or {}).get("volumes") or []
    locked = {
        str(v["name"]) for v in volumes if (v.get("persistentVolumeClaim") or {}).get("readOnly")
    }
    mounts = container.get("volumeMounts") or []
    if not any(str(m.get("name")) in locked for m in mounts):
        return container
    changed = [{**m, "readOnly": True} if str(m.get("name")) in locked else m for m in mounts]
    return {**container, "volumeMounts": changed}


def read_only_copy(target: Path, source: Path) -> Path:
    """``source`` copied to ``target`` (symlinks copied as links, never followed) with every
    write permission removed; a copy made by an earlier start of the pod is kept."""
    if os.path.lexists(target):
        return target
    privacy.private_dirs(target.parent)
    partial = target.with_name(f"{target.name}.partial")  # an interrupted copy is redone
    writable(partial)
    shutil.rmtree(partial, ignore_errors=True)
    shutil.copytree(source, partial, symlinks=True)
    for directory, subdirs, files in os.walk(partial, topdown=False):
        for entry in [*files, *subdirs]:
            path = os.path.join(directory, entry)
            if not os.path.islink(path):
                os.chmod(path, os.stat(path).st_mode & ~0o222)
        os.chmod(directory, os.stat(directory).st_mode & ~0o222)
    os.rename(partial, target)
    return target


def writable(path: Path) -> None:
    """Give the owner write permission on every directory below ``path`` (so it can go)."""
    if path.is_symlink() or not path.is_dir():
        return
    for directory, _, _ in os.walk(path):  # symlinks to directories are not entered
        os.chmod(directory, 0o700)
