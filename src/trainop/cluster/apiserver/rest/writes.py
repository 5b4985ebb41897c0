"""CREATE, UPDATE (PUT) and PATCH of objects and of their ``status`` and ``scale``.

Each handler reads the newest version (``Store.latest``), checks, and queues the write with no
``await`` in between, so checks and write are atomic on the event loop; it then awaits
durability before answering. Optimistic concurrency: a body ``resourceVersion`` that is not
the stored one is a 409 Conflict; an update without one is unconditional, as kube-apiserver
allows for these kinds. An update that changes nothing is not written (no new
resourceVersion), as in kube-apiserver.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from aiohttp import web

from trainop.cluster.apiserver import store
from trainop.cluster.apiserver.admission import admission, integers, limits
from trainop.cluster.apiserver.apply import managedfields
from trainop.cluster.apiserver.http import status
from trainop.cluster.apiserver.rest import (
    clusterips,
    crds,
    deletion,
    objects,
    patch,
    pod_updates,
    reads,
)
from trainop.cluster.apiserver.rest.call import ApiState, Call

_NAMESPACES = "core/namespaces"
_PODS = "core/pods"
_AUTO_NAMESPACES = frozenset({"default"})


def _respond(stored: store.Stored, call: Call, *, code: int, warnings: list[str]) -> web.Response:
    return _warned(reads.respond(reads.render(call.rt, stored), code=code), warnings)


def _dry_run(obj: dict[str, Any], *, code: int, warnings: list[str]) -> web.Response:
    """What a ``dryRun=All`` write answers: the object it would store, with the same
    ``Warning`` headers the real write sends (kube adds them before storage is reached)."""
    return _warned(reads.respond(store.encode(obj), code=code), warnings)


def _warned(resp: web.Response, warnings: list[str]) -> web.Response:
    for w in warnings:
        resp.headers.add("Warning", warning_header(w))
    return resp


def warning_header(text: str) -> str:
    """An RFC 7234 ``Warning`` value; the text is escaped to printable ASCII (field names in a
    client's body may hold control characters, which a header must never carry)."""
    return f'299 - "{json.dumps(text)[1:-1]}"'


# Sets the managedFields of the object about to be stored (``old`` is ``{}`` on create).
Recorder = Callable[[dict[str, Any], dict[str, Any]], None]


async def create(state: ApiState, call: Call) -> web.Response:
    """POST to a collection: 201 with the stored object."""
    obj = call.json_body()
    admission.check_type(call.rt, obj)
    return await insert(state, call, obj, record=None)


async def insert(
    state: ApiState, call: Call, obj: dict[str, Any], *, record: Recorder | None
) -> web.Response:
    """Create ``obj`` (type already checked): 201 with the stored object. ``record`` sets its
    managedFields (default: an ``Update`` by the request's ``fieldManager``, if any)."""
    meta = admission.check_metadata(call, obj)
    _check_integers(call, obj)
    if call.rt.namespaced:
        await _ensure_namespace(state, call.namespace or "")
    if not meta.get("name") and meta.get("generateName"):
        meta["name"] = objects.generated_name(str(meta["generateName"]))
    objects.prepare_create(call.rt, obj, namespace=call.namespace, now=state.clock())
    warnings = admission.admit(state, call, obj)
    objects.initial_status(call.rt, obj)
    (record or _recorder(state, call))({}, obj)
    is_crd = call.rt.store_key == crds.CRD_STORE_KEY
    if is_crd:
        _admit_crd(call, obj)
    key = call.key(str(meta["name"]))
    if state.store.latest(key) is not None:
        raise status.already_exists(call.rt, key.name)
    if call.rt.store_key == _PODS:
        limits.check_pod_quota(key.name, state.store.count(_PODS), state.limits.max_pods)
    if call.rt.store_key == clusterips.SERVICES:
        dry_run = bool(call.query.get("dryRun"))
        state.cluster_ips.assign(call.rt, key, obj, old=None, dry_run=dry_run)
    if call.query.get("dryRun"):
        return _dry_run(obj, code=201, warnings=warnings)
    stored = await state.store.put(key, obj)
    if is_crd:
        crds.install(state, stored.obj)
    return _respond(stored, call, code=201, warnings=warnings)


def _check_integers(call: Call, obj: dict[str, Any]) -> None:
    """``integers.check``, whose schema walk is skipped when no number in ``obj`` could fail
    it (the usual object: integers within ``int32``, no floats)."""
    if objects.may_hold_bad_integer(obj):
        integers.check(call, obj)


def _admit_crd(call: Call, obj: dict[str, Any]) -> None:
    errors = crds.errors(obj)
    if errors:
        raise status.invalid(call.rt, str(obj["metadata"].get("name", "")), errors)
    crds.accept(obj)


async def _ensure_namespace(state: ApiState, namespace: str) -> None:
    key = store.Key(resource=_NAMESPACES, namespace="", name=namespace)
    current = state.store.latest(key)
    if current is None and namespace in _AUTO_NAMESPACES:
        ns: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": namespace},
        }
        rt = state.registry.find(group="", version="v1", plural="namespaces")
        assert rt is not None
        objects.prepare_create(rt, ns, namespace=None, now=state.clock())
        objects.initial_status(rt, ns)
        if state.store.latest(key) is None:
            await state.store.put(key, ns)
        return
    if current is None:
        raise status.namespace_not_found(namespace)
    if current.obj["metadata"].get("deletionTimestamp"):
        raise status.forbidden(
            f"unable to create new content in namespace {namespace} because it is being terminated"
        )


async def update(state: ApiState, call: Call) -> web.Response:
    """PUT of an object or its status: 200 with the stored object."""
    obj = call.json_body()
    admission.check_type(call.rt, obj)
    admission.check_metadata(call, obj)
    current = _current(state, call)
    return await write(state, call, current, obj)


async def patch_(state: ApiState, call: Call) -> web.Response:
    """PATCH of an object or its status in one of the accepted patch formats (server-side
    apply is ``apply.patch``)."""
    ctype = _patch_type(call)
    check_patch_options(call, apply=False)
    current = _current(state, call)
    old = json.loads(current.raw)
    patched = patch.apply(ctype, old, call.body)
    if not isinstance(patched.get("metadata"), dict):
        raise status.RequestError("metadata must be an object", status=422, reason="Invalid")
    if patched.get("apiVersion") != call.rt.api_version or patched.get("kind") != call.rt.kind:
        admission.check_type(call.rt, patched)
    # A /status write is built on a private copy of the stored object: ``old`` is one when
    # the patch left it alone (merge and JSON patches never modify their target).
    reuse = call.subresource == "status" and ctype in (patch.MERGE, patch.JSON)
    return await write(state, call, current, patched, scratch=old if reuse else None)


def check_patch_options(call: Call, *, apply: bool) -> None:
    """422 for PatchOptions kube-apiserver refuses: apply without a ``fieldManager``,
    ``force`` on any other patch, a manager name over 128 bytes."""
    manager = call.query.get("fieldManager", "")
    if apply and not manager:
        raise _invalid_options(
            "fieldManager", "FieldValueRequired", "Required value", "is required for apply patch"
        )
    if not apply and "force" in call.query:
        raise _invalid_options(
            "force", "FieldValueForbidden", "Forbidden", "may not be specified for non-apply patch"
        )
    if len(manager.encode()) > 128:
        raise _invalid_options(
            "fieldManager", "FieldValueTooLong", "Too long", "may not be more than 128 bytes"
        )


def _invalid_options(field: str, reason: str, kind: str, detail: str) -> status.RequestError:
    return status.RequestError(
        f'PatchOptions.meta.k8s.io "" is invalid: {field}: {kind}: {detail}',
        status=422,
        reason="Invalid",
        details={
            "group": "meta.k8s.io",
            "kind": "PatchOptions",
            "causes": [{"reason": reason, "message": f"{kind}: {detail}", "field": field}],
        },
    )


def _patch_type(call: Call) -> str:
    ctype = call.content_type
    accepted = [patch.JSON, patch.MERGE]
    if call.rt.strategic_merge:
        accepted.append(patch.STRATEGIC)
    if ctype not in accepted:
        served = accepted if call.subresource == "scale" else [*accepted, patch.APPLY]
        raise status.unsupported_media_type(ctype, served)  # apply of /scale: not served
    return ctype


def _current(state: ApiState, call: Call) -> store.Stored:
    current = state.store.latest(call.key())
    if current is None:
        raise status.not_found(call.rt, call.name or "")
    return current


def _recorder(state: ApiState, call: Call, *, label: str = "") -> Recorder:
    def record(old: dict[str, Any], new: dict[str, Any]) -> None:
        now = objects.timestamp(state.clock())
        managedfields.record_update(state, call, old, new, now=now, label=label)

    return record


async def write(
    state: ApiState,
    call: Call,
    current: store.Stored,
    obj: dict[str, Any],
    *,
    record: Recorder | None = None,
    scratch: dict[str, Any] | None = None,
) -> web.Response:
    """Store ``obj`` over ``current`` (precondition, update rules, admission, managedFields
    through ``record``); an update that changes nothing is answered without a write.
    ``scratch``: a private copy of the stored object that a ``/status`` write may be built
    on (decoded here when not given)."""
    want_rv = obj.get("metadata", {}).get("resourceVersion")
    if want_rv and want_rv != str(current.rv):
        raise status.conflict(
            call.rt,
            call.name or "",
            "the object has been modified; please apply your changes to the latest version "
            "and try again",
        )
    _check_integers(call, obj)
    old = json.loads(current.raw)
    if call.subresource == "status" and scratch is None:
        scratch = json.loads(current.raw)
    new = objects.prepare_update(call.rt, old, obj, subresource=call.subresource, scratch=scratch)
    deletion.check_new_finalizers(call, old, new)
    warnings = admission.admit(state, call, new, old)
    if call.rt.store_key == _PODS and call.subresource is None:
        pod_updates.check(call.rt, call.name or "", old, new)
    objects.settle_generation(old, new)
    new["metadata"]["resourceVersion"] = old["metadata"].get("resourceVersion")
    (record or _recorder(state, call))(old, new)
    if call.rt.store_key == clusterips.SERVICES and call.subresource is None:
        dry_run = bool(call.query.get("dryRun"))
        state.cluster_ips.assign(call.rt, call.key(), new, old=old, dry_run=dry_run)
    if new == old:
        return _respond(current, call, code=200, warnings=warnings)
    if call.query.get("dryRun"):
        return _dry_run(new, code=200, warnings=warnings)
    stored, removed = await deletion.store_or_finish(state, call.key(), new)
    if call.rt.store_key == crds.CRD_STORE_KEY and not removed:
        crds.install(state, stored.obj)
    return _respond(stored, call, code=200, warnings=warnings)


# ---- scale subresource -------------------------------------------------------------------


def _path(dotted: str) -> list[str]:
    return [p for p in dotted.split(".") if p]


def _read_path(obj: dict[str, Any], dotted: str) -> Any:
    cur: Any = obj
    for part in _path(dotted):
        cur = cur.get(part) if isinstance(cur, dict) else None
    return cur


def scale_of(call: Call, obj: dict[str, Any]) -> dict[str, Any]:
    """The ``autoscaling/v1`` Scale view of a custom resource."""
    assert call.rt.scale_paths is not None
    spec_path, status_path, selector_path = call.rt.scale_paths
    meta = obj["metadata"]
    scale_status: dict[str, Any] = {"replicas": _read_path(obj, status_path) or 0}
    selector = _read_path(obj, selector_path) if selector_path else None
    if selector:
        scale_status["selector"] = selector
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            k: meta[k]
            for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in meta
        },
        "spec": {"replicas": _read_path(obj, spec_path) or 0},
        "status": scale_status,
    }


def get_scale(state: ApiState, call: Call) -> web.Response:
    """GET .../scale."""
    current = state.store.get(call.key())
    if current is None:
        raise status.not_found(call.rt, call.name or "")
    return reads.respond(store.encode(scale_of(call, current.obj)))


async def write_scale(state: ApiState, call: Call) -> web.Response:
    """PUT or PATCH .../scale: set the replicas path of the custom resource."""
    current = _current(state, call)
    old = json.loads(current.raw)
    if call.request.method == "PATCH":
        scale = patch.apply(_patch_type(call), scale_of(call, old), call.body)
    else:
        scale = call.json_body()
    replicas = (scale.get("spec") or {}).get("replicas")
    if not isinstance(replicas, int) or replicas < 0:
        raise status.RequestError(
            'Scale.autoscaling "' + (call.name or "") + '" is invalid: spec.replicas: '
            "Invalid value: must be a non-negative integer",
            status=422,
            reason="Invalid",
        )
    assert call.rt.scale_paths is not None
    *parents, leaf = _path(call.rt.scale_paths[0])
    target = old
    for part in parents:
        target = target.setdefault(part, {})
    target[leaf] = replicas
    old["metadata"]["resourceVersion"] = scale.get("metadata", {}).get("resourceVersion")
    main = Call(
        rt=call.rt,
        namespace=call.namespace,
        name=call.name,
        subresource=None,
        query=call.query,
        body=b"",
        content_type="",
        request=call.request,
    )
    await write(state, main, current, old, record=_recorder(state, main, label="scale"))
    stored = state.store.get(call.key())
    assert stored is not None
    return reads.respond(store.encode(scale_of(call, stored.obj)))
