"""What the API server does to an object's fields on create and update, apart from storage.

Role: the kube-apiserver "strategy" rules, for every kind at once:

- create: ``generateName`` → name, ``uid``, ``creationTimestamp``, ``generation: 1``, the URL
  namespace; ``status`` is dropped where a status subresource exists (custom resources), pods
  start ``Pending`` with a QoS class, namespaces ``Active`` with the ``kubernetes`` finalizer;
- update of the main resource: system metadata (uid, creationTimestamp, deletionTimestamp,
  generation) is carried over from the stored object, ``status`` too where a status
  subresource exists; ``generation`` is bumped when anything but ``metadata`` and ``status``
  changed;
- update of ``/status``: only ``status`` is taken from the request.

Time is an argument (``now``) so the rules are testable without a clock.

Cost: these run on every write, so they avoid per-call system calls and deep copies: uids
come from a pool of random bytes refilled 256 at a time, the second-precision timestamp
string is reused within its second, and a status update works on a copy decoded from the
stored bytes by the caller (``json.loads`` is several times cheaper than ``deepcopy``).
``may_hold_bad_integer`` lets the caller skip the schema walk of ``admission.integers``
for the (usual) object whose every number is an integer that fits an ``int32``.
"""

from __future__ import annotations

import json
import os
import secrets
import string
import uuid
from datetime import datetime
from typing import Any

from trainop.cluster.apiserver.admission import defaults
from trainop.cluster.apiserver.rest import resources

_SYSTEM_META = (
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "name",
    "namespace",
)
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_INT32 = (-(2**31), 2**31 - 1)
_UID_BATCH = 256
_uid_bytes: list[bytes] = []
_last_stamp: tuple[tuple[object, ...], str] = ((), "")


def timestamp(now: datetime) -> str:
    """RFC 3339 in UTC with second precision, as Kubernetes writes ``metav1.Time``."""
    global _last_stamp
    second = (now.second, now.minute, now.hour, now.day, now.month, now.year, now.tzinfo)
    if _last_stamp[0] == second:
        return _last_stamp[1]
    text = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    _last_stamp = (second, text)
    return text


def new_uid() -> str:
    """A random (version 4) UUID, as kube gives every object; the random bytes are read from
    the OS 256 uids at a time (one system call instead of one per write)."""
    if not _uid_bytes:
        pool = os.urandom(16 * _UID_BATCH)
        _uid_bytes.extend(pool[i : i + 16] for i in range(0, len(pool), 16))
    return str(uuid.UUID(bytes=_uid_bytes.pop(), version=4))


def may_hold_bad_integer(obj: Any) -> bool:
    """Whether ``obj`` holds a number that some Go integer field could not decode: a float,
    or an integer outside ``int32``. When False, ``admission.integers.first_bad`` cannot
    find anything and its (schema-directed, much slower) walk can be skipped.

    It runs on every write, so it tests the exact types JSON decodes to first (``type(v) is
    str`` is cheaper than ``isinstance``), and any other type the slow way."""
    low, high = _INT32
    stack: list[Any] = [[obj]]
    pop, push = stack.pop, stack.append
    while stack:
        node = pop()
        for value in node.values() if type(node) is dict else node:
            kind = type(value)
            if kind is str or kind is bool or value is None:
                continue
            if kind is dict or kind is list:
                push(value)
            elif kind is int:
                if not low <= value <= high:
                    return True
            elif kind is float:
                return True
            elif isinstance(value, (dict, list)):
                push(value)
            elif isinstance(value, float) or (
                isinstance(value, int) and not isinstance(value, bool) and not low <= value <= high
            ):
                return True
    return False


def parse_timestamp(text: str) -> datetime:
    """A ``metav1.Time`` read back (RFC 3339, ``Z`` or an offset)."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def generated_name(prefix: str) -> str:
    """``generateName`` + 5 random characters from Kubernetes' alphabet."""
    return prefix + "".join(secrets.choice(_SUFFIX_ALPHABET) for _ in range(5))


def prepare_create(
    rt: resources.ResourceType, obj: dict[str, Any], *, namespace: str | None, now: datetime
) -> None:
    """Stamp a new object in place (name already resolved by the caller)."""
    meta = obj.setdefault("metadata", {})
    if rt.namespaced and namespace is not None:
        meta["namespace"] = namespace
    meta["uid"] = new_uid()
    meta["creationTimestamp"] = timestamp(now)
    meta["generation"] = 1
    for key in ("deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion"):
        meta.pop(key, None)
    obj["apiVersion"] = rt.api_version
    obj["kind"] = rt.kind
    if rt.custom and rt.has_status:
        obj.pop("status", None)


def initial_status(rt: resources.ResourceType, obj: dict[str, Any]) -> None:
    """Pods start Pending with a QoS class, namespaces Active (after validation)."""
    if rt.plural == "pods" and not rt.group:
        obj["status"] = {"phase": "Pending", "qosClass": qos_class(obj.get("spec") or {})}
    if rt.plural == "namespaces" and not rt.group:
        defaults.namespace(obj)  # also for those the server makes itself, without admission
        obj["spec"] = {"finalizers": ["kubernetes"]}
        obj["status"] = {"phase": "Active"}


def qos_class(spec: dict[str, Any]) -> str:
    """Guaranteed, Burstable or BestEffort, from container requests and limits."""
    containers = [
        c
        for c in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]
        if isinstance(c, dict)
    ]
    requests_seen = limits_equal = False
    all_guaranteed = bool(containers)
    for c in containers:
        res = c.get("resources") or {}
        req, lim = res.get("requests") or {}, res.get("limits") or {}
        requests_seen = requests_seen or bool(req) or bool(lim)
        limits_equal = all(k in lim for k in ("cpu", "memory")) and all(
            req.get(k, lim[k]) == lim[k] for k in ("cpu", "memory")
        )
        all_guaranteed = all_guaranteed and limits_equal
    if all_guaranteed:
        return "Guaranteed"
    return "Burstable" if requests_seen else "BestEffort"


def prepare_update(
    rt: resources.ResourceType,
    old: dict[str, Any],
    new: dict[str, Any],
    *,
    subresource: str | None,
    scratch: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The object to store for an update of ``old`` with ``new`` (both plain dicts).

    A ``/status`` update is built on ``scratch``, a private copy of ``old`` that the caller
    decoded from the stored bytes (made here with ``json.loads`` when not given)."""
    if subresource == "status":
        result = scratch if scratch is not None else json.loads(json.dumps(old))
        if "status" in new:
            result["status"] = new["status"]
        else:
            result.pop("status", None)
        return result
    result = new
    meta, old_meta = result.setdefault("metadata", {}), old.get("metadata", {})
    for key in _SYSTEM_META:
        if key in old_meta:
            meta[key] = old_meta[key]
        else:
            meta.pop(key, None)
    result["apiVersion"], result["kind"] = rt.api_version, rt.kind
    if rt.has_status:
        if "status" in old:
            result["status"] = old["status"]
        else:
            result.pop("status", None)
    if _spec_changed(old, result):
        meta["generation"] = int(old_meta.get("generation", 1)) + 1
    return result


def settle_generation(old: dict[str, Any], new: dict[str, Any]) -> None:
    """Undo a ``generation`` bump when admission pruned away the only change (kube drops
    unknown fields before it compares, so ``spec: {}`` sent to a ConfigMap changes nothing)."""
    before = old.get("metadata", {}).get("generation")
    if new.get("metadata", {}).get("generation") != before and not _spec_changed(old, new):
        if before is None:
            new["metadata"].pop("generation", None)
        else:
            new["metadata"]["generation"] = before


def _spec_changed(old: dict[str, Any], new: dict[str, Any]) -> bool:
    ignored = ("metadata", "status", "apiVersion", "kind")
    return {k: v for k, v in old.items() if k not in ignored} != {
        k: v for k, v in new.items() if k not in ignored
    }


def random_token() -> str:
    """A bearer token: 43 URL-safe characters."""
    alphabet = string.ascii_letters + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(43))
