"""DELETE and DELETECOLLECTION: finalizers, graceful pods, propagation policy.

Rules (as kube-apiserver):

- an object with finalizers is not removed: it gets ``deletionTimestamp`` and
  ``deletionGracePeriodSeconds`` and stays until an update removes its last finalizer, which
  then removes it (``store_or_finish``);
- ``propagationPolicy: Foreground`` adds the ``foregroundDeletion`` finalizer and ``Orphan``
  the ``orphan`` finalizer; the garbage collector (``gc``) acts on both and removes them;
  ``Background`` (the default) removes the object at once and lets the collector delete its
  dependents afterwards;
- a pod bound to a node (``spec.nodeName``) that has not terminated is deleted gracefully:
  its grace period is the request's ``gracePeriodSeconds``, else its
  ``terminationGracePeriodSeconds``; it gets ``deletionGracePeriodSeconds`` = that and
  ``deletionTimestamp`` = now + that (the moment its kubelet kills what still runs), and its
  kubelet deletes it again with grace period 0. A later DELETE may only shorten the grace
  period (the timestamp moves by the difference; 0 removes it at once); an unbound or
  finished pod, or grace period 0, is removed at once. Once a pod being deleted has finished,
  a DELETE naming no grace period removes it too: that is the local kubelets' final DELETE
  (kube's kubelet sends grace period 0);
- a namespace becomes ``Terminating``; the collector empties it and then removes it;
- removing a CRD stops serving its resource and removes all its objects;
- preconditions (``uid``, ``resourceVersion``) that do not hold are a 409 Conflict.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from aiohttp import web

from trainop.cluster.apiserver import store
from trainop.cluster.apiserver.http import status
from trainop.cluster.apiserver.rest import crds, objects, reads, selectors
from trainop.cluster.apiserver.rest.call import ApiState, Call
from trainop.errors import FieldError

FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"
_POLICIES = ("Background", "Foreground", "Orphan")


def _options(call: Call) -> dict[str, Any]:
    opts: dict[str, Any] = {}
    if call.body.strip():
        opts = call.json_body()
    if "propagationPolicy" in call.query:
        opts["propagationPolicy"] = call.query["propagationPolicy"]
    grace = call.integer("gracePeriodSeconds")
    if grace is not None:
        opts["gracePeriodSeconds"] = grace
    policy = opts.get("propagationPolicy")
    if policy is None and opts.get("orphanDependents") is True:
        opts["propagationPolicy"] = "Orphan"
    if policy is not None and policy not in _POLICIES:
        raise status.RequestError(
            f'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: '
            f'"{policy}": supported values: "Foreground", "Background", "Orphan"',
            status=422,
            reason="Invalid",
        )
    return opts


def _check_preconditions(call: Call, opts: dict[str, Any], current: store.Stored) -> None:
    pre = opts.get("preconditions") or {}
    meta = current.obj["metadata"]
    if pre.get("uid") and pre["uid"] != meta.get("uid"):
        raise status.conflict(
            call.rt,
            call.name or "",
            f"Precondition failed: UID in precondition: {pre['uid']}, "
            f"UID in object meta: {meta.get('uid')}",
        )
    if pre.get("resourceVersion") and pre["resourceVersion"] != str(current.rv):
        raise status.conflict(
            call.rt,
            call.name or "",
            "Precondition failed: ResourceVersion in precondition: "
            f"{pre['resourceVersion']}, ResourceVersion in object meta: "
            f"{current.rv}",
        )


def success(call: Call, obj: dict[str, Any]) -> dict[str, Any]:
    """The ``Status`` kube-apiserver answers for an immediate delete of most kinds."""
    details: dict[str, Any] = {
        "name": obj["metadata"]["name"],
        "kind": call.rt.plural,
        "uid": obj["metadata"].get("uid"),
    }
    if call.rt.group:
        details["group"] = call.rt.group
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    }


async def delete(state: ApiState, call: Call) -> web.Response:
    """DELETE one object."""
    opts = _options(call)
    current = state.store.latest(call.key())
    if current is None:
        raise status.not_found(call.rt, call.name or "")
    _check_preconditions(call, opts, current)
    if call.query.get("dryRun"):
        return reads.respond(current.raw)
    stored, removed = await remove(
        state,
        call.key(),
        policy=opts.get("propagationPolicy"),
        grace=opts.get("gracePeriodSeconds"),
    )
    if removed and not call.rt.returns_deleted_object:
        return reads.respond(store.encode(success(call, stored.obj)))
    code = 202 if not removed and opts.get("propagationPolicy") == "Foreground" else 200
    return reads.respond(reads.render(call.rt, stored), code=code)


async def delete_collection(state: ApiState, call: Call) -> web.Response:
    """DELETE on a collection: every object matching the selectors."""
    opts = _options(call)
    match = selectors.combine(
        selectors.label_matcher(call.query.get("labelSelector")),
        selectors.field_matcher(call.query.get("fieldSelector"), allowed=call.rt.field_labels),
    )
    namespace = call.namespace if call.rt.namespaced else None
    items = state.store.select(resource=call.rt.store_key, namespace=namespace)
    for item in items:
        if (match is None or match(item.obj)) and state.store.latest(item.key) is not None:
            await remove(
                state,
                item.key,
                policy=opts.get("propagationPolicy"),
                grace=opts.get("gracePeriodSeconds"),
            )
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
    return reads.respond(store.encode(body))


async def remove(
    state: ApiState, key: store.Key, *, policy: str | None, grace: int | None
) -> tuple[store.Stored, bool]:
    """Delete ``key`` honouring finalizers and graceful pod deletion; returns (newest version,
    whether it is gone)."""
    current = state.store.latest(key)
    if current is None:
        raise status.RequestError(f"{key.name} vanished", status=404, reason="NotFound")
    obj = json.loads(current.raw)
    meta = obj["metadata"]
    if grace is not None and grace < 0:
        grace = 1  # kube: a negative grace period is one second on the delete path
    before = list(meta.get("finalizers") or [])
    finalizers = list(before)
    for wanted, marker in (("Foreground", FOREGROUND), ("Orphan", ORPHAN)):
        if policy == wanted and marker not in finalizers:
            finalizers.append(marker)
    is_ns = key.resource == "core/namespaces"
    if meta.get("deletionTimestamp"):
        if grace is None and _pod_grace(key, obj, None) == 0:
            grace = 0  # a finished pod: what the kubelet's final DELETE means (kubelet sends 0)
        if _is_pending(meta, grace):
            return current, False  # graceful deletion under way: nothing changes
        if meta.get("deletionGracePeriodSeconds"):  # a shorter grace period than before
            _shorten(meta, grace or 0)
        elif finalizers == before and not (finalizers or is_ns):
            return await _erase(state, key, None), True
        elif finalizers == before:
            return current, False
    else:
        period = _pod_grace(key, obj, grace)
        if not (finalizers or is_ns or period):
            return await _erase(state, key, None), True
        now = state.clock()
        meta["deletionTimestamp"] = objects.timestamp(now + timedelta(seconds=period or 0))
        meta["deletionGracePeriodSeconds"] = period or 0
    if finalizers:
        meta["finalizers"] = finalizers
    if is_ns:
        obj.setdefault("status", {})["phase"] = "Terminating"
    if not (finalizers or is_ns or meta.get("deletionGracePeriodSeconds")):
        return await _erase(state, key, obj), True  # shortened to 0: gone now, as kube
    return await state.store.put(key, obj), False


def _is_pending(meta: dict[str, Any], grace: int | None) -> bool:
    """A graceful deletion is under way and the request does not shorten it."""
    current = int(meta.get("deletionGracePeriodSeconds") or 0)
    return current > 0 and (grace is None or grace >= current)


def _shorten(meta: dict[str, Any], grace: int) -> None:
    """kube's rule for a second DELETE with a shorter grace period: the deletion moment moves
    by the difference (``deletionTimestamp`` - old grace + new grace)."""
    current = int(meta.get("deletionGracePeriodSeconds") or 0)
    stamp = objects.parse_timestamp(str(meta["deletionTimestamp"]))
    meta["deletionTimestamp"] = objects.timestamp(stamp + timedelta(seconds=grace - current))
    meta["deletionGracePeriodSeconds"] = grace


def _pod_grace(key: store.Key, obj: dict[str, Any], grace: int | None) -> int | None:
    """A pod's grace period as kube's pod strategy decides it (None for other kinds): the
    request's, else the pod's ``terminationGracePeriodSeconds``; 0 for a pod not bound to a
    node or already finished (deleted at once); a negative one is 1."""
    if key.resource != "core/pods":
        return None
    spec, phase = obj.get("spec") or {}, (obj.get("status") or {}).get("phase")
    if not spec.get("nodeName") or phase in ("Succeeded", "Failed"):
        return 0
    period = grace if grace is not None else int(spec.get("terminationGracePeriodSeconds", 30))
    return 1 if period < 0 else period


def check_new_finalizers(call: Call, old: dict[str, Any], new: dict[str, Any]) -> None:
    """422 when an update adds a finalizer to an object that is being deleted."""
    if not old["metadata"].get("deletionTimestamp"):
        return
    before = set(old["metadata"].get("finalizers") or [])
    added = [f for f in new["metadata"].get("finalizers") or [] if f not in before]
    if not added:
        return
    quoted = ", ".join(json.dumps(f) for f in added)
    detail = (
        "no new finalizers can be added if the object is being deleted, found new finalizers "
        f"[]string{{{quoted}}}"
    )
    error = FieldError(path="metadata.finalizers", type="Forbidden", detail=detail)
    raise status.invalid(call.rt, call.name or "", [error])


async def store_or_finish(
    state: ApiState, key: store.Key, new: dict[str, Any]
) -> tuple[store.Stored, bool]:
    """Write ``new``; when it is being deleted and has no finalizers left, remove it."""
    meta = new["metadata"]
    pending_ns = key.resource == "core/namespaces" and (new.get("spec") or {}).get("finalizers")
    graceful_pod = key.resource == "core/pods" and meta.get("deletionGracePeriodSeconds")
    finished = not (meta.get("finalizers") or pending_ns or graceful_pod)
    if meta.get("deletionTimestamp") and finished:
        return await _erase(state, key, new), True
    return await state.store.put(key, new), False


async def _erase(state: ApiState, key: store.Key, final: dict[str, Any] | None) -> store.Stored:
    stored = await state.store.delete(key, final)
    if key.resource == crds.CRD_STORE_KEY:
        await _drop_custom_resources(state, stored.obj)
    return stored


async def _drop_custom_resources(state: ApiState, crd: dict[str, Any]) -> None:
    crds.uninstall(state, crd)
    resource = f"{crd['spec']['group']}/{crd['spec']['names']['plural']}"
    for item in state.store.select(resource=resource):
        if state.store.latest(item.key) is not None:
            await state.store.delete(item.key)
