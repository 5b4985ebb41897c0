"""The per-pod sandbox directory: volumes, the ``mountPath`` mapping, home, tmp and logs.

Processes run on the host, so a container cannot see ``/etc/mpi``. Each pod gets::

    <root>/<namespace>/<pod>/<uid>/
        home/                        HOME          (shared by the pod's containers)
        tmp/                         TMPDIR
        volumes/<volume>/            emptyDir, configMap and secret contents
        fs/<container>/<mountPath>   a symlink to the mounted volume (or its subPath, or the
                                     hostPath itself): the container's view of its mounts
        logs/<container>/<n>.log     output of the container's n-th run (``logfiles``)

The mapping rule is one line: **an absolute path ``P`` of the manifest is
``$TRAINOP_ROOT/P``** where ``TRAINOP_ROOT`` is ``fs/<container>``. Nothing in the manifest is
rewritten (DESIGN §4); each container's environment carries ``TRAINOP_ROOT``,
``TRAINOP_SANDBOX`` (the pod directory) and ``TRAINOP_VOLUME_<NAME>`` (each volume's real
directory; the name upper-cased, ``-``/``.`` as ``_``). A ``workingDir`` inside a mount, or one
that does not exist on the host, is mapped the same way (and created); an existing host path is
used as is. Volumes: ``emptyDir`` (any medium), ``configMap`` and ``secret`` (``items``,
``defaultMode``/``mode``, ``optional``), ``hostPath`` (``DirectoryOrCreate`` creates it; the
other types must exist). ``readOnly`` is not enforced. Any other volume type is a
``ConfigError`` naming it. Neighbours: ``podrun`` (calls ``prepare``), ``environment``.
"""

from __future__ import annotations

import base64
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainop.local.kubelet.environment import ConfigError

Raw = dict[str, Any]
_UNSAFE = re.compile(r"[^A-Za-z0-9_]")
_SUPPORTED = ("emptyDir", "configMap", "secret", "hostPath")


@dataclass(frozen=True, slots=True)
class Sandbox:
    """Paths of one pod's sandbox (see the module docstring)."""

    path: Path

    @staticmethod
    def of(root: Path, namespace: str, name: str, uid: str) -> Sandbox:
        return Sandbox(root / namespace / name / uid)

    @property
    def home(self) -> Path:
        return self.path / "home"

    @property
    def tmp(self) -> Path:
        return self.path / "tmp"

    def volume(self, name: str) -> Path:
        return self.path / "volumes" / name

    def fs(self, container: str) -> Path:
        return self.path / "fs" / container

    def logs(self, container: str) -> Path:
        return self.path / "logs" / container

    def mapped(self, container: str, path: str) -> Path:
        """Where the manifest's absolute ``path`` lies for ``container``."""
        return self.fs(container) / path.lstrip("/")

    def remove(self) -> None:
        """Delete the sandbox (symlinked host paths are unlinked, never followed)."""
        shutil.rmtree(self.path, ignore_errors=True)


def prepare(
    sandbox: Sandbox, pod: Raw, config_maps: dict[str, Raw | None], secrets: dict[str, Raw | None]
) -> dict[str, Path]:
    """Create the directories and every volume; return each volume's real directory."""
    for directory in (sandbox.home, sandbox.tmp):
        directory.mkdir(parents=True, exist_ok=True)
    found: dict[str, Path] = {}
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        found[str(volume["name"])] = _volume(sandbox, volume, config_maps, secrets)
    return found


def _volume(
    sandbox: Sandbox,
    volume: Raw,
    config_maps: dict[str, Raw | None],
    secrets: dict[str, Raw | None],
) -> Path:
    name = str(volume["name"])
    kinds = [k for k in volume if k != "name"]
    if not kinds or kinds[0] not in _SUPPORTED:
        kind = kinds[0] if kinds else "(no type)"
        raise ConfigError(f"volume {name}: {kind} volumes are not supported in local mode")
    if "hostPath" in volume:
        return _host_path(name, volume["hostPath"])
    target = sandbox.volume(name)
    target.mkdir(parents=True, exist_ok=True)
    if "configMap" in volume:
        source = volume["configMap"]
        obj = config_maps.get(str(source.get("name")))
        _project(target, source, obj, f'configmap "{source.get("name")}"', _config_files)
    elif "secret" in volume:
        source = volume["secret"]
        obj = secrets.get(str(source.get("secretName")))
        _project(target, source, obj, f'secret "{source.get("secretName")}"', _secret_files)
    return target


def _host_path(name: str, source: Raw) -> Path:
    path = Path(str(source.get("path") or ""))
    kind = source.get("type") or ""
    if kind == "DirectoryOrCreate":
        path.mkdir(parents=True, exist_ok=True)
    elif kind and not path.exists():
        raise ConfigError(f"volume {name}: hostPath {path} ({kind}) does not exist")
    return path


def _config_files(obj: Raw) -> dict[str, bytes]:
    files = {str(k): str(v).encode() for k, v in (obj.get("data") or {}).items()}
    for key, value in (obj.get("binaryData") or {}).items():
        files[str(key)] = base64.b64decode(value)
    return files


def _secret_files(obj: Raw) -> dict[str, bytes]:
    files = {str(k): base64.b64decode(v) for k, v in (obj.get("data") or {}).items()}
    files.update({str(k): str(v).encode() for k, v in (obj.get("stringData") or {}).items()})
    return files


def _project(target: Path, source: Raw, obj: Raw | None, what: str, files_of: Any) -> None:
    if obj is None:
        if source.get("optional"):
            return
        raise ConfigError(f"{what} not found")
    files: dict[str, bytes] = files_of(obj)
    mode = int(source.get("defaultMode") or 0o644)
    items = source.get("items")
    wanted = [(str(i["key"]), str(i["path"]), i.get("mode")) for i in items or []] or [
        (key, key, None) for key in files
    ]
    for key, relative, item_mode in wanted:
        if key not in files:
            if source.get("optional"):
                continue
            raise ConfigError(f"couldn't find key {key} in {what}")
        path = target / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(files[key])
        path.chmod(int(item_mode) if item_mode is not None else mode)


def mount(sandbox: Sandbox, container: Raw, volumes: dict[str, Path]) -> None:
    """Link each of the container's ``volumeMounts`` at its mapped path."""
    name = str(container["name"])
    sandbox.fs(name).mkdir(parents=True, exist_ok=True)
    for entry in container.get("volumeMounts") or []:
        volume = volumes.get(str(entry.get("name")))
        if volume is None:
            raise ConfigError(f"volumeMount {entry.get('name')}: no volume of that name")
        source = volume / str(entry["subPath"]) if entry.get("subPath") else volume
        if entry.get("subPath") and not source.exists():
            source.mkdir(parents=True, exist_ok=True)
        link = sandbox.mapped(name, str(entry["mountPath"]))
        link.parent.mkdir(parents=True, exist_ok=True)
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(source)


def working_dir(sandbox: Sandbox, container: Raw, default: Path) -> Path:
    """The directory the container's process starts in (see the module docstring)."""
    wanted = container.get("workingDir")
    if not wanted:
        return default
    name = str(container["name"])
    mounts = [str(m["mountPath"]).rstrip("/") for m in container.get("volumeMounts") or []]
    inside_mount = any(wanted == m or wanted.startswith(m + "/") for m in mounts)
    if not inside_mount and Path(wanted).is_dir():
        return Path(wanted)
    mapped = sandbox.mapped(name, str(wanted))
    mapped.mkdir(parents=True, exist_ok=True)
    return mapped


def variables(sandbox: Sandbox, container: Raw, volumes: dict[str, Path]) -> dict[str, str]:
    """The sandbox's variables for ``container`` (the pod's own ``env`` may override them)."""
    found = {
        "HOME": str(sandbox.home),
        "TMPDIR": str(sandbox.tmp),
        "TRAINOP_SANDBOX": str(sandbox.path),
        "TRAINOP_ROOT": str(sandbox.fs(str(container["name"]))),
    }
    for name, path in volumes.items():
        found["TRAINOP_VOLUME_" + _UNSAFE.sub("_", name).upper()] = str(path)
    return found


def is_within(path: Path, root: Path) -> bool:
    """Whether ``path`` is ``root`` or below it (no symlinks followed)."""
    return os.path.commonpath([path, root]) == str(root)
