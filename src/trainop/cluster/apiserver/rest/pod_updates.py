"""What an update may change in a Pod's spec: kube-apiserver's ``ValidatePodUpdate``.

Role: on an update of a Pod's main resource (PUT, every PATCH, server-side apply; not
``/status`` or ``/binding``), ``errors(old, new)`` compares the stored spec with the new one,
both defaulted, and lists kube's field errors:

- containers or init containers added or removed: ``spec.containers: Forbidden: pod updates
  may not add or remove containers`` (and nothing else is checked);
- an empty image is ``Required``, one with surrounding spaces ``Invalid``;
- ``activeDeadlineSeconds`` may be set, or lowered, never raised or unset;
- tolerations may only be added (an existing one may change its ``tolerationSeconds``);
  scheduling gates may only be removed;
- anything else that differs, once the images, the deadline, the tolerations, the gates and
  a negative ``terminationGracePeriodSeconds`` set to 1 are taken from the old spec, is
  ``spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,
  ...`` followed by a diff of the changed fields.

The diff names each changed field by its path and shows the old (``-``) and new (``+``)
value; kube prints go-cmp's rendering of its Go structs there, which this does not imitate
line for line. Departure: a gated pod (``schedulingGates``) may not add to its node selector
or node affinity here, which kube allows (the local scheduler reads no gates).
Neighbours: ``writes`` (calls it after admission), ``http.status`` (renders the errors).
"""

from __future__ import annotations

import copy
import json
from typing import Any

from trainop.cluster.apiserver.http import status
from trainop.cluster.apiserver.rest import resources

MAX_INT32 = 2**31 - 1
UPDATABLE = ",".join(
    (
        "`spec.containers[*].image`",
        "`spec.initContainers[*].image`",
        "`spec.activeDeadlineSeconds`",
        "`spec.tolerations` (only additions to existing tolerations)",
        "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously "
        "negative)",
    )
)
Obj = dict[str, Any]
Cause = tuple[str, str, str]  # field, reason, kube's error body ("Forbidden: ...")


def check(rt: resources.ResourceType, name: str, old: Obj, new: Obj) -> None:
    """422 Invalid when ``new`` changes what kube does not let an update change."""
    causes = errors(old.get("spec") or {}, new.get("spec") or {})
    if causes:
        raise status.rejected(rt, name, causes)


def errors(old: Obj, new: Obj) -> list[Cause]:
    """kube's errors for the spec update ``old`` → ``new`` (see the module docstring)."""
    found: list[Cause] = []
    for key in ("containers", "initContainers"):
        more, stop = _container_errors(old.get(key) or [], new.get(key) or [], f"spec.{key}")
        found += more
        if stop:
            return found
    deadline, stop = _deadline_errors(old.get("activeDeadlineSeconds"), new)
    found += deadline
    if stop:
        return found
    found += _toleration_errors(old.get("tolerations") or [], new.get("tolerations") or [])
    found += _gate_errors(old.get("schedulingGates") or [], new.get("schedulingGates") or [])
    if new == old:
        return found
    munged = _munged(old, new)
    if munged != old:
        detail = f"pod updates may not change fields other than {UPDATABLE}\n{diff(old, munged)}"
        found.append(("spec", "FieldValueForbidden", f"Forbidden: {detail}"))
    return found


def _container_errors(old: list[Any], new: list[Any], path: str) -> tuple[list[Cause], bool]:
    if len(old) != len(new):
        body = "Forbidden: pod updates may not add or remove containers"
        return [(path, "FieldValueForbidden", body)], True
    found: list[Cause] = []
    for index, container in enumerate(new):
        image = container.get("image") if isinstance(container, dict) else None
        where = f"{path}[{index}].image"
        if not image:
            found.append((where, "FieldValueRequired", "Required value"))
        elif isinstance(image, str) and image.strip() != image:
            body = (
                f"Invalid value: {json.dumps(image)}: must not have leading or trailing whitespace"
            )
            found.append((where, "FieldValueInvalid", body))
    return found, False


def _deadline_errors(old: Any, new_spec: Obj) -> tuple[list[Cause], bool]:
    """``activeDeadlineSeconds``: set from nil, or lowered; (errors, stop checking)."""
    where, new = "spec.activeDeadlineSeconds", new_spec.get("activeDeadlineSeconds")
    if new is None:
        if old is None:
            return [], False
        body = 'Invalid value: "null": must not update from a positive integer to nil value'
        return [(where, "FieldValueInvalid", body)], False
    if not isinstance(new, int) or new < 0 or new > MAX_INT32:
        body = f"Invalid value: {new}: must be between 0 and {MAX_INT32}, inclusive"
        return [(where, "FieldValueInvalid", body)], True
    if isinstance(old, int) and old < new:
        body = f"Invalid value: {new}: must be less than or equal to previous value"
        return [(where, "FieldValueInvalid", body)], True
    return [], False


def _toleration_errors(old: list[Any], new: list[Any]) -> list[Cause]:
    """Every old toleration must still be there, its ``tolerationSeconds`` aside."""

    def same(a: Any, b: Any) -> bool:
        if not (isinstance(a, dict) and isinstance(b, dict)):
            return bool(a == b)
        ignored = "tolerationSeconds"
        return {k: v for k, v in a.items() if k != ignored} == {
            k: v for k, v in b.items() if k != ignored
        }

    if all(any(same(before, after) for after in new) for before in old):
        return []
    body = "Forbidden: existing toleration can not be modified except its tolerationSeconds"
    return [("spec.tolerations", "FieldValueForbidden", body)]


def _gate_errors(old: list[Any], new: list[Any]) -> list[Cause]:
    """Scheduling gates may only be removed."""
    before = {g.get("name") for g in old if isinstance(g, dict)}
    found: list[Cause] = []
    for index, gate in enumerate(new):
        name = gate.get("name") if isinstance(gate, dict) else None
        if name not in before:
            body = f"Forbidden: only deletion is allowed, but found new scheduling gate '{name}'"
            found.append((f"spec.schedulingGates[{index}].name", "FieldValueForbidden", body))
    return found


def _munged(old: Obj, new: Obj) -> Obj:
    """``new`` with the fields an update may change taken from ``old``."""
    munged = copy.deepcopy(new)
    for key in ("containers", "initContainers"):
        for before, after in zip(old.get(key) or [], munged.get(key) or [], strict=False):
            if isinstance(before, dict) and isinstance(after, dict):
                _take(after, before, "image")
    for key in ("activeDeadlineSeconds", "schedulingGates", "tolerations"):
        _take(munged, old, key)
    grace, new_grace = (
        old.get("terminationGracePeriodSeconds"),
        new.get("terminationGracePeriodSeconds"),
    )
    if isinstance(grace, int) and grace < 0 and new_grace == 1:
        munged["terminationGracePeriodSeconds"] = grace
    return munged


def _take(target: Obj, source: Obj, key: str) -> None:
    if key in source:
        target[key] = source[key]
    else:
        target.pop(key, None)


def diff(old: Any, new: Any) -> str:
    """The changed fields of a pod spec, one ``-``/``+`` pair each, in go-cmp's frame."""
    lines = ["  core.PodSpec{"]
    for path, before, after in _changes(old, new, ""):
        if before is not _MISSING:
            lines.append(f"- \t{path}: {_render(before)},")
        if after is not _MISSING:
            lines.append(f"+ \t{path}: {_render(after)},")
    lines.append("  }")
    return "\n".join(lines)


_MISSING = object()


def _changes(old: Any, new: Any, path: str) -> list[tuple[str, Any, Any]]:
    if isinstance(old, dict) and isinstance(new, dict):
        found: list[tuple[str, Any, Any]] = []
        for key in [*old, *(k for k in new if k not in old)]:
            before, after = old.get(key, _MISSING), new.get(key, _MISSING)
            if before != after:
                child = f"{path}.{_go_name(key)}" if path else _go_name(key)
                found += _changes(before, after, child)
        return found
    if _is_struct_list(old) and _is_struct_list(new) and len(old) == len(new):
        found = []
        for index, (before, after) in enumerate(zip(old, new, strict=True)):
            if before != after:
                found += _changes(before, after, f"{path}[{index}]")
        return found
    return [(path, old, new)]


def _is_struct_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, dict) for v in value)


def _go_name(key: str) -> str:
    return key[:1].upper() + key[1:]


def _render(value: Any) -> str:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "[]string{" + ", ".join(json.dumps(v) for v in value) + "}"
    return json.dumps(value, sort_keys=True)
