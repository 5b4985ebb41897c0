"""The three patch formats kube-apiserver accepts, applied to plain JSON dicts.

- ``application/merge-patch+json`` (RFC 7386): maps merge recursively, ``null`` deletes, lists
  replace.
- ``application/json-patch+json`` (RFC 6902), through the ``jsonpatch`` library; a failed
  ``test`` or a missing path is the client's mistake (422), a malformed document a 400.
- ``application/strategic-merge-patch+json`` for built-in kinds: like merge patch, except
  that the lists Kubernetes declares with a merge key (containers, env, ports, volumes...)
  merge element-by-element by that key, primitive lists declared ``merge`` (finalizers) are
  unioned, and the directives ``$patch: replace|delete|merge``, ``$retainKeys``,
  ``$deleteFromPrimitiveList/<field>`` and ``$setElementOrder/<field>`` are honoured. The merge
  keys come from a table keyed by field name (the same field name has the same key wherever
  it appears in the core API), with ``ports`` resolved by the key present in the items.

Custom resources never take strategic merge (415), as in kube-apiserver; that check lives in
the handler, which knows the resource type.
"""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch

from trainop.cluster.apiserver.http import bodies, status
from trainop.kube.patches import merge_patch

MERGE = "application/merge-patch+json"
JSON = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"

MERGE_KEYS: dict[str, tuple[str, ...]] = {
    "containers": ("name",),
    "initContainers": ("name",),
    "ephemeralContainers": ("name",),
    "env": ("name",),
    "volumes": ("name",),
    "volumeMounts": ("mountPath",),
    "volumeDevices": ("devicePath",),
    "imagePullSecrets": ("name",),
    "ports": ("containerPort", "port"),
    "conditions": ("type",),
    "ownerReferences": ("uid",),
    "hostAliases": ("ip",),
    "topologySpreadConstraints": ("topologyKey",),
    "resourceClaims": ("name",),
    "schedulingGates": ("name",),
    "secrets": ("name",),
    "containerStatuses": ("name",),
    "initContainerStatuses": ("name",),
    "addresses": ("ip",),
}
MERGED_PRIMITIVE_LISTS = frozenset({"finalizers"})


def apply(content_type: str, target: dict[str, Any], body: bytes) -> dict[str, Any]:
    """Apply a patch document of ``content_type`` to a copy of ``target``."""
    document = _decode(body)
    if content_type == JSON:
        return _json_patch(target, document)
    if not isinstance(document, dict):
        raise status.bad_request("the patch is not a JSON object")
    if content_type == MERGE:
        result: dict[str, Any] = merge_patch(target, document)
        return result
    merged: dict[str, Any] = strategic_merge(target, document)
    return merged


def _decode(body: bytes) -> Any:
    return bodies.decode(body, what="the patch")


def _json_patch(target: dict[str, Any], document: Any) -> dict[str, Any]:
    if not isinstance(document, list):
        raise status.bad_request("json patch must be a list of operations")
    try:
        result = jsonpatch.JsonPatch(document).apply(target)
    except (jsonpatch.JsonPatchConflict, jsonpatch.JsonPatchTestFailed) as exc:
        raise status.RequestError(str(exc), status=422, reason="Invalid") from exc
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
        raise status.bad_request(f"invalid json patch: {exc}") from exc
    except (TypeError, KeyError, IndexError, ValueError) as exc:
        raise status.bad_request(f"invalid json patch: {exc!r}") from exc
    if not isinstance(result, dict):
        raise status.RequestError("patch result is not an object", status=422, reason="Invalid")
    return result


def strategic_merge(target: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """Kubernetes strategic merge patch over built-in kinds (see the module docstring)."""
    merged: dict[str, Any] = _merge_map(target, patch) or {}
    return merged


def _merge_map(target: Any, patch: dict[str, Any]) -> Any:
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return None
    out = dict(target) if isinstance(target, dict) else {}
    retain = patch.get("$retainKeys")
    for k, v in patch.items():
        if k.startswith("$"):
            _primitive_directive(out, k, v)
            continue
        if v is None:
            out.pop(k, None)
        elif isinstance(v, dict):
            merged = _merge_map(out.get(k), v)
            if merged is None:
                out.pop(k, None)
            else:
                out[k] = merged
        elif isinstance(v, list):
            out[k] = _merge_list(k, out.get(k), v)
        else:
            out[k] = v
    if isinstance(retain, list):
        out = {k: v for k, v in out.items() if k in retain}
    return out


def _primitive_directive(out: dict[str, Any], key: str, value: Any) -> None:
    prefix = "$deleteFromPrimitiveList/"
    if key.startswith(prefix) and isinstance(value, list):
        field = key[len(prefix) :]
        if isinstance(out.get(field), list):
            out[field] = [x for x in out[field] if x not in value]


def _merge_list(field: str, target: Any, patch: list[Any]) -> list[Any]:
    current = target if isinstance(target, list) else []
    if any(isinstance(x, dict) and x.get("$patch") == "replace" for x in patch):
        return [x for x in patch if not (isinstance(x, dict) and "$patch" in x)]
    if field in MERGED_PRIMITIVE_LISTS:
        return current + [x for x in patch if x not in current]
    key = _merge_key(field, current, patch)
    if key is None:
        return copy.deepcopy(patch)
    return _merge_by_key(key, current, patch)


def _merge_key(field: str, current: list[Any], patch: list[Any]) -> str | None:
    candidates = MERGE_KEYS.get(field)
    if not candidates:
        return None
    for candidate in candidates:
        if any(isinstance(x, dict) and candidate in x for x in [*patch, *current]):
            return candidate
    return None


def _merge_by_key(key: str, current: list[Any], patch: list[Any]) -> list[Any]:
    out = list(current)
    for item in patch:
        if not isinstance(item, dict):
            raise status.bad_request(f"strategic merge: list items under {key!r} must be maps")
        idx = next(
            (i for i, x in enumerate(out) if isinstance(x, dict) and x.get(key) == item.get(key)),
            None,
        )
        if item.get("$patch") == "delete":
            if idx is not None:
                out.pop(idx)
            continue
        if idx is None:
            out.append({k: v for k, v in item.items() if k != "$patch"})
        else:
            out[idx] = _merge_map(out[idx], item)
    return out
