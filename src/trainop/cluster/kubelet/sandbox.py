"""The per-pod sandbox directory: volumes, the ``mountPath`` mapping, home, tmp and logs.

Processes run on the host, so a container cannot see ``/etc/mpi``. Each pod gets::

    <root>/<namespace>/<pod>/<uid>/
        home/                        HOME          (shared by the pod's containers)
        tmp/                         TMPDIR
        volumes/<volume>/            emptyDir, configMap and secret contents
        readonly/<container>/<n>/    a read-only copy of a claim for the n-th read-only mount
        fs/<container>/<mountPath>   a symlink to the mounted volume (or its subPath, or the
                                     hostPath itself): the container's view of its mounts
        logs/<container>/<n>.log     output of the container's n-th run (``logfiles``)

The mapping rule is one line: **an absolute path ``P`` of the manifest is
``$TRAINOP_ROOT/P``** where ``TRAINOP_ROOT`` is ``fs/<container>``; ``P`` is first normalised
as inside a container, where ``/..`` is ``/``. Nothing in the manifest is rewritten (DESIGN §4);
each container's environment carries ``TRAINOP_ROOT``, ``TRAINOP_SANDBOX`` (the pod directory)
and ``TRAINOP_VOLUME_<NAME>`` (each volume's real directory; the name upper-cased, ``-``/``.``
as ``_``). A ``workingDir`` inside a mount, or one that does not exist on the host, is mapped
the same way (and created); an existing host directory is used as is. Volumes: ``emptyDir``
(any medium), ``configMap`` and ``secret`` (``items``, ``defaultMode``/``mode``,
``optional``), ``hostPath`` (``DirectoryOrCreate`` creates it; the other types must exist),
``persistentVolumeClaim`` (the directory of the volume the claim is bound to, which the
kubelet looked up through the API beforehand: ``claims.resolve``; note 132). ``readOnly`` is not
enforced on host processes, except for claims: a claim mounted read-only (the mount's
``readOnly``, or the volume's, which ``claims.read_only_mounts`` copies onto every mount, as
kubelet does) is a copy of the claim taken at the pod's first start with every write
permission removed, so nothing written through it reaches the claim (the container runtimes
mount the claim itself read-only instead). Any other volume type is a ``ConfigError`` naming
it.

The sandbox is a boundary (docs/design/080-local-trust-model.md). Every name and path of the
manifest must pass Kubernetes' own rules (``api.pod_rules``; ``invalid`` says why not, and the
pod fails with ``CreateContainerConfigError``), and every path built from one is checked
again where it is used: a name is one path component; a ``subPath`` resolves (symlinks
followed) inside its volume; a projected ConfigMap/Secret file is written only below its
volume directory, through no symlink (``O_NOFOLLOW``, component by component); a mount link or
a created ``workingDir`` resolves inside the sandbox (so not through a ``hostPath`` mount);
a ``mountPath`` never replaces anything it did not create itself. A breach raises
``SandboxError`` (a ``ConfigError``) and touches nothing. ``hostPath`` is the one deliberate
door out: its directory is linked (and created for ``DirectoryOrCreate``) where the manifest
says. Directories are 0700; projected files get their ``defaultMode``/``mode`` inside them.
A pod whose containers may run as another user than the session's (a ``securityContext``
``runAsUser`` that is not ours, a ``runAsGroup`` or ``fsGroup``: the container runtimes'
``--user``) gets its volume directories as a cluster makes them, emptyDir 0777, configMap and
secret 0755, so that user can use them; they stay inside the 0700 sandbox, which no other
host user can enter (note 080).
Neighbours: ``podrun`` (calls ``invalid`` and ``prepare``), ``environment``, ``cluster.privacy``.
"""

from __future__ import annotations

import base64
import os
import posixpath
import re
import shutil
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainop.api import pod_rules
from trainop.cluster import privacy
from trainop.cluster.kubelet import claims
from trainop.cluster.kubelet.environment import ConfigError

Raw = dict[str, Any]
_UNSAFE = re.compile(r"[^A-Za-z0-9_]")
_SUPPORTED = ("emptyDir", "configMap", "secret", "hostPath", "persistentVolumeClaim")
Claims = Mapping[str, Path | str]  # claim name -> its volume's directory, or why not
_DEFAULT_MODE = 0o644  # kube's default for configMap and secret volume files


class SandboxError(ConfigError):
    """A name or path of the manifest would leave the sandbox (or replace a file there)."""


@dataclass(frozen=True, slots=True)
class Sandbox:
    """Paths of one pod's sandbox (see the module docstring)."""

    path: Path

    @staticmethod
    def of(root: Path, namespace: str, name: str, uid: str) -> Sandbox:
        return Sandbox(
            root / _part(namespace, "namespace") / _part(name, "pod") / _part(uid, "uid")
        )

    @property
    def home(self) -> Path:
        return self.path / "home"

    @property
    def tmp(self) -> Path:
        return self.path / "tmp"

    def volume(self, name: str) -> Path:
        return self.path / "volumes" / _part(name, "volume")

    def fs(self, container: str) -> Path:
        return self.path / "fs" / _part(container, "container")

    def logs(self, container: str) -> Path:
        return self.path / "logs" / _part(container, "container")

    def record(self, container: str) -> Path:
        """Where the container's last start and exit are recorded (``recovery``)."""
        return self.path / "runs" / f"{_part(container, 'container')}.json"

    def mapped(self, container: str, path: str) -> Path:
        """Where the manifest's absolute ``path`` lies for ``container`` (``/..`` is ``/``)."""
        return self.fs(container) / container_path(path).lstrip("/")

    def remove(self) -> None:
        """Delete the sandbox (symlinked host paths are unlinked, never followed)."""
        claims.writable(self.path / "readonly")
        shutil.rmtree(self.path, ignore_errors=True)


def container_path(path: str) -> str:
    """``path`` normalised as a container sees it: absolute, no ``.``/``..``, ``/..`` is ``/``."""
    normal = posixpath.normpath("/" + path)
    return "/" + normal.lstrip("/")


def _part(name: str, what: str) -> str:
    """``name`` as exactly one path component, else ``SandboxError``."""
    if not name or name in (".", "..") or "/" in name or "\0" in name:
        raise SandboxError(f"{what} name {name!r} is not a single path component")
    return name


def invalid(pod: Raw) -> str:
    """Why the pod's names and paths break Kubernetes' rules ("" when they do not)."""
    found = pod_rules.pod_spec_errors(pod.get("spec") or {}, path="spec")
    return "; ".join(str(error) for error in found)


def prepare(
    sandbox: Sandbox,
    pod: Raw,
    config_maps: dict[str, Raw | None],
    secrets: dict[str, Raw | None],
    claim_dirs: Claims | None = None,
) -> dict[str, Path]:
    """Create the directories and every volume; return each volume's real directory.
    ``claim_dirs`` maps each claim the pod reads to its volume's directory, or to the reason the
    pod cannot use it yet (kubelet's message; a ``ConfigError`` here)."""
    problems = invalid(pod)
    if problems:
        raise SandboxError(problems)
    for directory in (sandbox.home, sandbox.tmp):
        privacy.private_dirs(directory)
    found: dict[str, Path] = {}
    shared = runs_as_another_user(pod)
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        path = _volume(sandbox, volume, config_maps, secrets, claim_dirs or {})
        found[str(volume["name"])] = path
        if shared and "hostPath" not in volume:  # the cluster's modes (module docstring)
            writable = "emptyDir" in volume or "persistentVolumeClaim" in volume
            path.chmod(0o777 if writable else 0o755)
    return found


def runs_as_another_user(pod: Raw) -> bool:
    """Whether a container of ``pod`` may run as another user or group than the session's:
    a ``securityContext`` (the pod's or a container's) with a ``runAsUser`` that is not this
    process's, a ``runAsGroup`` or an ``fsGroup``."""
    spec = pod.get("spec") or {}
    contexts = [spec.get("securityContext") or {}]
    for key in ("initContainers", "containers"):
        contexts += [c.get("securityContext") or {} for c in spec.get(key) or []]
    for context in contexts:
        user = context.get("runAsUser")
        if user is not None and user != os.geteuid():
            return True
        if context.get("runAsGroup") is not None or context.get("fsGroup") is not None:
            return True
    return False


def _volume(
    sandbox: Sandbox,
    volume: Raw,
    config_maps: dict[str, Raw | None],
    secrets: dict[str, Raw | None],
    claim_dirs: Claims,
) -> Path:
    name = str(volume["name"])
    kinds = [k for k in volume if k != "name"]
    if not kinds or kinds[0] not in _SUPPORTED:
        kind = kinds[0] if kinds else "(no type)"
        raise ConfigError(f"volume {name}: {kind} volumes are not supported in local mode")
    if "hostPath" in volume:
        return _host_path(name, volume["hostPath"])
    if "persistentVolumeClaim" in volume:
        return _claim(name, volume["persistentVolumeClaim"], claim_dirs)
    target = privacy.private_dirs(sandbox.volume(name))
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


def _claim(name: str, source: Raw, claim_dirs: Claims) -> Path:
    claim = str(source.get("claimName") or "")
    found = claim_dirs.get(claim)
    if found is None:
        raise ConfigError(f'volume {name}: persistentvolumeclaim "{claim}" not found')
    if isinstance(found, str):
        raise ConfigError(found)
    return _host_path(name, {"path": str(found), "type": "Directory"})


def _config_files(obj: Raw) -> dict[str, bytes]:
    files = {str(k): str(v).encode() for k, v in (obj.get("data") or {}).items()}
    for key, value in (obj.get("binaryData") or {}).items():
        files[str(key)] = base64.b64decode(value)
    return files


def _secret_files(obj: Raw) -> dict[str, bytes]:
    files = {str(k): base64.b64decode(v) for k, v in (obj.get("data") or {}).items()}
    files.update({str(k): str(v).encode() for k, v in (obj.get("stringData") or {}).items()})
    return files


def _project(
    target: Path,
    source: Raw,
    obj: Raw | None,
    what: str,
    files_of: Callable[[Raw], dict[str, bytes]],
) -> None:
    if obj is None:
        if source.get("optional"):
            return
        raise ConfigError(f"{what} not found")
    files = files_of(obj)
    default = source.get("defaultMode")
    mode = int(default) if default is not None else _DEFAULT_MODE
    wanted = [(str(i["key"]), str(i["path"]), i.get("mode")) for i in source.get("items") or []]
    for key, relative, item_mode in wanted or [(key, key, None) for key in files]:
        if key not in files:
            if source.get("optional"):
                continue
            raise ConfigError(f"couldn't find key {key} in {what}")
        problems = pod_rules.local_path_problems(relative)  # as kubelet's atomic writer
        if problems:
            raise SandboxError(f"{what}: cannot project {relative!r}: {'; '.join(problems)}")
        chosen = int(item_mode) if item_mode is not None else mode
        _write_below(target, relative, files[key], chosen, what)


def _write_below(base: Path, relative: str, data: bytes, mode: int, what: str) -> None:
    """Write ``base/relative`` (atomically), creating directories, following no symlink."""
    parts = [part for part in relative.split("/") if part not in ("", ".")]
    if not parts:
        raise SandboxError(f"{what}: cannot project {relative!r}: not a file name")
    *parents, name = parts
    directory = base
    for part in parents:
        directory = directory / part
        if not os.path.lexists(directory):
            os.mkdir(directory, privacy.DIR_MODE)
        elif directory.is_symlink() or not directory.is_dir():
            raise SandboxError(f"{what}: cannot project {relative!r}: {part} is not a directory")
    staged = directory / f"..{name}.tmp"  # no valid key starts with '..'
    try:
        staged.unlink(missing_ok=True)
        fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            os.fchmod(out.fileno(), mode)
        os.replace(staged, directory / name)  # replaces a planted symlink, never follows it
    except OSError as exc:
        raise SandboxError(f"{what}: cannot project {relative!r}: {exc.strerror}") from exc


def mount(
    sandbox: Sandbox, container: Raw, volumes: dict[str, Path], claimed: Collection[str] = ()
) -> None:
    """Link each of the container's ``volumeMounts`` at its mapped path (outer paths first);
    a read-only mount of one of the ``claimed`` volumes links a read-only copy."""
    name = str(container["name"])
    privacy.private_dirs(sandbox.fs(name))
    entries = sorted(
        enumerate(container.get("volumeMounts") or []),
        key=lambda item: container_path(str(item[1].get("mountPath") or "")).count("/"),
    )
    for index, entry in entries:
        volume = volumes.get(str(entry.get("name")))
        if volume is None:
            raise ConfigError(f"volumeMount {entry.get('name')}: no volume of that name")
        source = _sub_path(volume, entry) if entry.get("subPath") else volume
        if entry.get("readOnly") and str(entry.get("name")) in claimed:
            source = claims.read_only_copy(sandbox.path / "readonly" / name / str(index), source)
        _link(sandbox, sandbox.mapped(name, str(entry["mountPath"])), source, entry)


def _sub_path(volume: Path, entry: Raw) -> Path:
    """The volume's ``subPath`` directory, created if missing; it must resolve inside the volume."""
    sub = str(entry["subPath"])
    problems = pod_rules.descending_path_problems(sub)
    real_volume = Path(os.path.realpath(volume))
    source = Path(os.path.realpath(volume / sub))
    if problems or not is_within(source, real_volume):
        reason = "; ".join(problems) or "it resolves outside the volume"
        raise SandboxError(f"volumeMount {entry.get('name')}: subPath {sub}: {reason}")
    if not source.exists():
        privacy.private_dirs(source)
    return source


def _link(sandbox: Sandbox, link: Path, source: Path, entry: Raw) -> None:
    where = f"mountPath {entry.get('mountPath')}"
    parent = Path(os.path.realpath(link.parent))
    if not is_within(parent, Path(os.path.realpath(sandbox.path))):
        raise SandboxError(f"{where}: {parent} is outside the pod sandbox (inside a hostPath?)")
    privacy.private_dirs(parent)
    final = parent / link.name
    if final.is_symlink() and os.readlink(final) == str(source):
        return  # linked by an earlier attempt at this pod
    if os.path.lexists(final):
        raise SandboxError(f"{where}: {final} already exists; a mount never replaces a file")
    final.symlink_to(source)


def working_dir(sandbox: Sandbox, container: Raw, default: Path) -> Path:
    """The directory the container's process starts in (see the module docstring)."""
    wanted = container.get("workingDir")
    if not wanted:
        return default
    normal = container_path(str(wanted))
    mounts = [container_path(str(m["mountPath"])) for m in container.get("volumeMounts") or []]
    inside_mount = any(normal == m or normal.startswith(m.rstrip("/") + "/") for m in mounts)
    if not inside_mount and Path(normal).is_dir():
        return Path(normal)
    mapped = sandbox.mapped(str(container["name"]), normal)
    real = Path(os.path.realpath(mapped))
    if real.is_dir():
        return mapped
    if not is_within(real, Path(os.path.realpath(sandbox.path))):
        raise SandboxError(f"workingDir {wanted}: {real} would be created outside the sandbox")
    privacy.private_dirs(real)
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
