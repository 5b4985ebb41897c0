"""Kubernetes' own rules for the names and paths in a pod spec and in ConfigMap/Secret keys.

These are the rules of kube-apiserver's core validation that keep a manifest's names and paths
well-formed; in local mode they are also the first half of the sandbox boundary (see
docs/design/080-local-trust-model.md), because the process kubelet turns these strings into
file names. Stated in our own words, with kube's messages:

- container and init container names: required, DNS-1123 labels, unique across both lists;
- volume names: required, DNS-1123 labels, unique;
- ``volumeMounts[].name`` names a volume of the pod; ``mountPath`` is required and unique per
  container (kube does not forbid ``..`` there: a container's ``/..`` is ``/``, and the
  kubelet maps it that way); ``subPath`` / ``subPathExpr`` are relative, with no ``..``
  element, and not both set;
- ``configMap`` / ``secret`` ``items[]``: ``key`` and ``path`` required, ``path`` relative,
  without a ``..`` element and not starting with ``..``; ``defaultMode`` / ``mode`` within
  0..0777; ``hostPath.path`` required, without a ``..`` element;
- ConfigMap / Secret data keys: ``[-._a-zA-Z0-9]+``, at most 253 characters, neither ``.`` nor
  ``..`` nor starting with ``..``.

Input is an untyped mapping of unknown shape: every access is guarded, bad input yields a
``FieldError``, never an exception. Each ``detail`` is kube's ``field.Error`` body
(``Invalid value: "x": must not contain '..'``). Pure: no I/O.
Neighbours: ``validation`` (job templates), the embedded API server's admission (pods,
ConfigMaps, Secrets) and the process kubelet (``cluster.kubelet.sandbox``) call these.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from trainop.errors import FieldError

_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LABEL_MAX = 63
_LABEL_DETAIL = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
_KEY_MAX = 253
_KEY_DETAIL = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' "
    "(e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
    "'[-._a-zA-Z0-9]+')"
)
_MODE_DETAIL = "must be a number between 0 and 0777 (octal), both inclusive"
_DATA_FIELDS = ("data", "binaryData", "stringData")


def pod_spec_errors(spec: Mapping[str, Any], *, path: str) -> list[FieldError]:
    """Problems with the names and paths of the pod spec at ``path`` (e.g. ``spec``)."""
    if not isinstance(spec, Mapping):
        return []
    volumes, errors = _volumes_errors(_list(spec.get("volumes")), f"{path}.volumes")
    seen: set[str] = set()
    for field in ("initContainers", "containers"):
        for index, container in _items(spec.get(field)):
            where = f"{path}.{field}[{index}]"
            errors += _container_errors(container, where, volumes, seen)
    return errors


def data_key_errors(obj: Mapping[str, Any], *, path: str = "") -> list[FieldError]:
    """Problems with the keys of a ConfigMap's or Secret's data, binaryData and stringData."""
    errors: list[FieldError] = []
    if not isinstance(obj, Mapping):
        return errors
    prefix = f"{path}." if path else ""
    for field in _DATA_FIELDS:
        data = obj.get(field)
        if not isinstance(data, Mapping):
            continue
        for key in data:
            where = f"{prefix}{field}[{key}]"
            errors += [_invalid(where, key, m) for m in config_key_problems(str(key))]
    return errors


def config_key_problems(key: str) -> list[str]:
    """Why ``key`` is not a valid ConfigMap/Secret key (kube's ``IsConfigMapKey``); [] if it is."""
    problems = []
    if len(key) > _KEY_MAX:
        problems.append(f"must be no more than {_KEY_MAX} characters")
    if not _KEY.match(key):
        problems.append(_KEY_DETAIL)
    if key == ".":
        problems.append("must not be '.'")
    elif key == "..":
        problems.append("must not be '..'")
    elif key.startswith(".."):
        problems.append("must not start with '..'")
    return problems


def label_problems(name: str) -> list[str]:
    """Why ``name`` is not a DNS-1123 label (kube's ``IsDNS1123Label``); [] if it is."""
    problems = []
    if len(name) > _LABEL_MAX:
        problems.append(f"must be no more than {_LABEL_MAX} characters")
    if not _LABEL.match(name):
        problems.append(_LABEL_DETAIL)
    return problems


def descending_path_problems(value: str) -> list[str]:
    """Why ``value`` is not a relative path that stays below its base; [] if it is."""
    problems = []
    if value.startswith("/"):
        problems.append("must be a relative path")
    if ".." in value.split("/"):
        problems.append("must not contain '..'")
    return problems


def local_path_problems(value: str) -> list[str]:
    """``descending_path_problems``, and not starting with ``..`` (a projected file's path)."""
    problems = descending_path_problems(value)
    if value.startswith("..") and not value.startswith("../"):
        problems.append("must not start with '..'")
    return problems


# --- volumes -------------------------------------------------------------------------------


def _volumes_errors(volumes: list[Any], path: str) -> tuple[set[str], list[FieldError]]:
    names: set[str] = set()
    errors: list[FieldError] = []
    for index, volume in enumerate(volumes):
        where = f"{path}[{index}]"
        if not isinstance(volume, Mapping):
            errors.append(FieldError(where, "Invalid", "must be an object (a Volume)"))
            continue
        found = _name_errors(volume.get("name"), f"{where}.name", names)
        found += _source_errors(volume, where)
        if not found:
            names.add(str(volume["name"]))
        errors += found
    return names, errors


def _name_errors(name: object, where: str, seen: set[str]) -> list[FieldError]:
    if name is None or name == "":
        return [FieldError(where, "Required", "Required value")]
    if not isinstance(name, str):
        return [_invalid(where, name, "must be a string")]
    errors = [_invalid(where, name, m) for m in label_problems(name)]
    if name in seen:
        errors.append(FieldError(where, "Duplicate", f"Duplicate value: {_quote(name)}"))
    return errors


def _source_errors(volume: Mapping[str, Any], where: str) -> list[FieldError]:
    errors: list[FieldError] = []
    for kind in ("configMap", "secret"):
        source = volume.get(kind)
        if isinstance(source, Mapping):
            errors += _mode_errors(source.get("defaultMode"), f"{where}.{kind}.defaultMode")
            for index, item in _items(source.get("items")):
                errors += _key_to_path_errors(item, f"{where}.{kind}.items[{index}]")
    host = volume.get("hostPath")
    if isinstance(host, Mapping):
        value = host.get("path")
        if not isinstance(value, str) or not value:
            errors.append(FieldError(f"{where}.hostPath.path", "Required", "Required value"))
        elif ".." in value.split("/"):
            errors.append(_invalid(f"{where}.hostPath.path", value, "must not contain '..'"))
    return errors


def _key_to_path_errors(item: object, where: str) -> list[FieldError]:
    if not isinstance(item, Mapping):
        return [FieldError(where, "Invalid", "must be an object (a KeyToPath)")]
    errors: list[FieldError] = []
    for key in ("key", "path"):
        value = item.get(key)
        if not isinstance(value, str) or not value:
            errors.append(FieldError(f"{where}.{key}", "Required", "Required value"))
    target = item.get("path")
    if isinstance(target, str) and target:
        problems = local_path_problems(target)
        errors += [_invalid(f"{where}.path", target, m) for m in problems]
    return errors + _mode_errors(item.get("mode"), f"{where}.mode")


def _mode_errors(mode: object, where: str) -> list[FieldError]:
    if mode is None:
        return []
    if isinstance(mode, bool) or not isinstance(mode, int) or not 0 <= mode <= 0o777:
        return [_invalid(where, mode, _MODE_DETAIL)]
    return []


# --- containers ----------------------------------------------------------------------------


def _container_errors(
    container: object, where: str, volumes: set[str], seen: set[str]
) -> list[FieldError]:
    if not isinstance(container, Mapping):
        return []  # reported by the caller's structural checks
    errors = _name_errors(container.get("name"), f"{where}.name", seen)
    if isinstance(container.get("name"), str):
        seen.add(container["name"])
    mount_points: set[str] = set()
    for index, mount in _items(container.get("volumeMounts")):
        errors += _mount_errors(mount, f"{where}.volumeMounts[{index}]", volumes, mount_points)
    working_dir = container.get("workingDir")
    if working_dir is not None and not isinstance(working_dir, str):
        errors.append(_invalid(f"{where}.workingDir", working_dir, "must be a string"))
    return errors


def _mount_errors(
    mount: object, where: str, volumes: set[str], mount_points: set[str]
) -> list[FieldError]:
    if not isinstance(mount, Mapping):
        return [FieldError(where, "Invalid", "must be an object (a VolumeMount)")]
    errors: list[FieldError] = []
    name = mount.get("name")
    if not isinstance(name, str) or not name:
        errors.append(FieldError(f"{where}.name", "Required", "Required value"))
    elif name not in volumes:
        errors.append(FieldError(f"{where}.name", "NotFound", f"Not found: {_quote(name)}"))
    mount_path = mount.get("mountPath")
    if not isinstance(mount_path, str) or not mount_path:
        errors.append(FieldError(f"{where}.mountPath", "Required", "Required value"))
    elif mount_path in mount_points:
        errors.append(_invalid(f"{where}.mountPath", mount_path, "must be unique"))
    else:
        mount_points.add(mount_path)
    return errors + _sub_path_errors(mount, where)


def _sub_path_errors(mount: Mapping[str, Any], where: str) -> list[FieldError]:
    errors: list[FieldError] = []
    for key in ("subPath", "subPathExpr"):
        value = mount.get(key)
        if value is None or value == "":
            continue
        if not isinstance(value, str):
            errors.append(_invalid(f"{where}.{key}", value, "must be a string"))
            continue
        errors += [_invalid(f"{where}.{key}", value, m) for m in descending_path_problems(value)]
    if mount.get("subPath") and mount.get("subPathExpr"):
        detail = "Invalid value: subPathExpr and subPath are mutually exclusive"
        errors.append(FieldError(f"{where}.subPathExpr", "Invalid", detail))
    return errors


# --- shared --------------------------------------------------------------------------------


def _invalid(where: str, value: object, message: str) -> FieldError:
    return FieldError(where, "Invalid", f"Invalid value: {_quote(value)}: {message}")


def _quote(value: object) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) < 80 else text[:77] + "..."


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _items(value: object) -> Iterator[tuple[int, Any]]:
    return enumerate(_list(value))
