"""``/openapi/v2`` and ``/openapi/v3``: the served resources' schemas, for kubectl.

Built from what the server validates with: kubernetes-validate's definitions for built-in
kinds (``cluster.apiserver.schemas``; the closure of each kind's ``$ref``s, type arrays reduced
to one type, int-or-string unions to ``string`` with format ``int-or-string``) and each CRD
version's ``openAPIV3Schema`` (``metadata`` pointing at ``ObjectMeta``), each kind's schema
carrying ``x-kubernetes-group-version-kind``. Paths list every resource's operations with that
extension; PATCH, POST and PUT declare the ``fieldValidation`` query parameter, which is how
kubectl (``--validate``, on by default) learns that the server validates fields itself and
sends ``fieldValidation=Strict`` instead of validating client-side. PATCH bodies list only JSON
and merge patch, so ``kubectl apply`` takes strategic-merge metadata from its own types.

``/openapi/v3`` is the index ``{"paths": {"apis/G/V": {"serverRelativeURL": ...?hash=H}}}``;
one document per group-version, built on first request and cached until the group-version's
resources change (for a CRD: its resourceVersion). ``/openapi/v2`` is JSON only: a request
that accepts only protobuf gets 406, as kube-apiserver answers formats it does not serve, and
client-go's next try, ``/swagger-2.0.0.pb-v1``, gets a 406 that says why (kubectl <= 1.28).
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import re
from typing import Any

from aiohttp import web

from trainop.cluster.apiserver import schemas, store
from trainop.cluster.apiserver.http import discovery, routing, status
from trainop.cluster.apiserver.rest import crds, resources
from trainop.cluster.apiserver.rest.call import ApiState

JSON = "application/json"
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_REF = re.compile(r'"#/\$defs/([^"]+)"')
_WRITE_PARAMS = ("dryRun", "fieldManager", "fieldValidation")
_LIST_PARAMS = ("labelSelector", "fieldSelector", "limit", "continue", "watch", "resourceVersion")
_PARAM_TYPES = {"limit": "integer", "watch": "boolean", "force": "boolean"}
_PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
)


@functools.cache
def _definitions() -> dict[str, Any]:
    return schemas.load_definitions()


def accepts_json(accept: str | None) -> bool:
    """Whether an Accept header admits JSON (no header does)."""
    if not accept:
        return True
    kinds = {media.split(";")[0].strip() for media in accept.split(",")}
    return bool(kinds & {JSON, "application/*", "*/*"})


def not_acceptable() -> status.RequestError:
    """406 for a format this server does not produce (protobuf)."""
    return status.RequestError(
        f"only the following media types are accepted: {JSON}", status=406, reason="NotAcceptable"
    )


class OpenApi:
    """Builds and caches the OpenAPI documents of one server's registry."""

    def __init__(self, state: ApiState) -> None:
        self._state = state
        self._v3: dict[str, tuple[tuple[Any, ...], bytes, str]] = {}
        self._v2: tuple[tuple[Any, ...], bytes] | None = None

    def serve(self, request: web.Request, tail: str) -> web.Response:
        """Answer ``/openapi/v2``, ``/openapi/v3`` or ``/openapi/v3/<group-version path>``."""
        if tail == routing.LEGACY_SWAGGER:
            raise status.RequestError(
                "protobuf OpenAPI v2 is not served by the trainop local API server; kubectl "
                "1.29 and newer read OpenAPI v3 (JSON) instead",
                status=406,
                reason="NotAcceptable",
            )
        if not accepts_json(request.headers.get("Accept")):
            raise not_acceptable()
        if tail == "v2":
            return _respond(self.v2())
        if tail == "v3":
            return _respond(store.encode(self.v3_index()))
        return _respond(self.v3_document(tail.removeprefix("v3/"))[0])

    def _groups(self) -> dict[str, list[resources.ResourceType]]:
        out: dict[str, list[resources.ResourceType]] = {}
        for rt in self._state.registry:
            path = f"apis/{rt.group}/{rt.version}" if rt.group else "api/v1"
            out.setdefault(path, []).append(rt)
        return out

    def _fingerprint(self, types: list[resources.ResourceType]) -> tuple[Any, ...]:
        marks: list[Any] = []
        for rt in types:
            marks.append((rt.group, rt.version, rt.plural))
            if rt.custom:
                crd = self._state.store.get(_crd_key(rt))
                marks.append(crd.obj["metadata"].get("resourceVersion") if crd else None)
        return tuple(marks)

    def v3_index(self) -> dict[str, Any]:
        """The ``/openapi/v3`` discovery document."""
        paths = {}
        for gv in self._groups():
            digest = self.v3_document(gv)[1]
            paths[gv] = {"serverRelativeURL": f"/openapi/v3/{gv}?hash={digest}"}
        return {"paths": paths}

    def v3_document(self, gv: str) -> tuple[bytes, str]:
        """The OpenAPI 3 document of one group-version path (``api/v1``, ``apis/G/V``)."""
        types = self._groups().get(gv)
        if not types:
            raise status.path_not_found(f"/openapi/v3/{gv}")
        mark = self._fingerprint(types)
        cached = self._v3.get(gv)
        if cached is None or cached[0] != mark:
            body = store.encode(_document(self._state, types, v3=True))
            cached = (mark, body, hashlib.sha512(body).hexdigest().upper())
            self._v3[gv] = cached
        return cached[1], cached[2]

    def v2(self) -> bytes:
        """The Swagger 2.0 document of every served resource."""
        types = list(self._state.registry)
        mark = self._fingerprint(types)
        if self._v2 is None or self._v2[0] != mark:
            self._v2 = (mark, store.encode(_document(self._state, types, v3=False)))
        return self._v2[1]


def _respond(body: bytes) -> web.Response:
    return web.Response(body=body, content_type=JSON)


def _crd_key(rt: resources.ResourceType) -> store.Key:
    return store.Key(resource=crds.CRD_STORE_KEY, namespace="", name=f"{rt.plural}.{rt.group}")


def _document(state: ApiState, types: list[resources.ResourceType], *, v3: bool) -> Any:
    prefix = "#/components/schemas/" if v3 else "#/definitions/"
    names: set[str] = set()
    custom: dict[str, Any] = {}
    paths: dict[str, Any] = {}
    for rt in types:
        name = _schema_name(rt)
        if rt.custom:
            custom[name] = _custom_schema(state, rt, prefix)
            names.add(OBJECT_META)
        elif rt.definition:
            names.add(rt.definition)
        paths.update(_paths(rt, f"{prefix}{name}", v3=v3))
    found = {n: _convert(d, prefix) for n, d in _closure(names).items()}
    found.update(custom)
    info = {"title": "Kubernetes", "version": discovery.GIT_VERSION}
    if v3:
        return {"openapi": "3.0.0", "info": info, "paths": paths, "components": {"schemas": found}}
    return {"swagger": "2.0", "info": info, "paths": paths, "definitions": found}


def _schema_name(rt: resources.ResourceType) -> str:
    if rt.definition and not rt.custom:
        return rt.definition
    domain = ".".join(reversed(rt.group.split(".")))
    return f"{domain}.{rt.version}.{rt.kind}"


def _closure(names: set[str]) -> dict[str, Any]:
    definitions = _definitions()
    out: dict[str, Any] = {}
    todo = [n for n in names if n in definitions]
    while todo:
        name = todo.pop()
        if name in out:
            continue
        out[name] = definitions[name]
        todo.extend(n for n in _REF.findall(json.dumps(out[name])) if n in definitions)
    return out


def _convert(node: Any, prefix: str) -> Any:
    """A kubernetes-validate JSON-schema node as an OpenAPI schema."""
    if isinstance(node, list):
        return [_convert(item, prefix) for item in node]
    if not isinstance(node, dict):
        return node
    if "oneOf" in node and all(set(b) == {"type"} for b in node["oneOf"]):
        kinds = {_one_type(b["type"]) for b in node["oneOf"]}
        rest = {k: v for k, v in node.items() if k != "oneOf"}
        fmt = {"format": "int-or-string"} if "integer" in kinds else {}
        return {**rest, "type": "string", **fmt}
    out = {key: _convert(value, prefix) for key, value in node.items()}
    if isinstance(out.get("type"), list):
        out["type"] = _one_type(out["type"])
    ref = out.pop("$ref", None)
    if isinstance(ref, str):
        target = prefix + ref.rsplit("/", 1)[-1]
        if not out:
            return {"$ref": target}
        out["allOf"] = [{"$ref": target}]
    return out


def _one_type(kinds: Any) -> Any:
    if isinstance(kinds, list):
        return next((k for k in kinds if k != "null"), "string")
    return kinds


def _gvk(rt: resources.ResourceType) -> dict[str, str]:
    return {"group": rt.group, "version": rt.version, "kind": rt.kind}


def _custom_schema(state: ApiState, rt: resources.ResourceType, prefix: str) -> dict[str, Any]:
    crd = state.store.get(_crd_key(rt))
    versions = (crd.obj.get("spec") or {}).get("versions") or [] if crd else []
    version: dict[str, Any] = next((v for v in versions if v.get("name") == rt.version), {})
    raw = (version.get("schema") or {}).get("openAPIV3Schema") or {"type": "object"}
    schema: dict[str, Any] = copy.deepcopy(raw)
    properties = schema.setdefault("properties", {})
    properties["metadata"] = {
        "description": "Standard object's metadata.",
        "allOf": [{"$ref": prefix + OBJECT_META}],
    }
    schema["x-kubernetes-group-version-kind"] = [_gvk(rt)]
    return schema


def _paths(rt: resources.ResourceType, ref: str, *, v3: bool) -> dict[str, Any]:
    base = f"/apis/{rt.group}/{rt.version}" if rt.group else "/api/v1"
    scope = "/namespaces/{namespace}" if rt.namespaced else ""
    collection = f"{base}{scope}/{rt.plural}"
    item = collection + "/{name}"
    out: dict[str, dict[str, Any]] = {
        collection: {
            "get": _operation(rt, "list", ref, _LIST_PARAMS, v3=v3),
            "post": _operation(rt, "post", ref, _WRITE_PARAMS, v3=v3),
        },
        item: _item_operations(rt, ref, v3=v3, suffix=""),
    }
    out[item]["delete"] = _operation(rt, "delete", ref, ("dryRun",), v3=v3)
    if rt.has_status:
        out[item + "/status"] = _item_operations(rt, ref, v3=v3, suffix="Status")
    for path in out:
        names = ["namespace"] if rt.namespaced else []
        names += ["name"] if path != collection else []
        out[path]["parameters"] = [_param(n, "path", v3=v3) for n in names]
    return out


def _item_operations(
    rt: resources.ResourceType, ref: str, *, v3: bool, suffix: str
) -> dict[str, Any]:
    ops = {
        "get": _operation(rt, "get", ref, (), v3=v3),
        "put": _operation(rt, "put", ref, _WRITE_PARAMS, v3=v3),
        "patch": _operation(rt, "patch", ref, (*_WRITE_PARAMS, "force"), v3=v3),
    }
    for op in ops.values():
        op["operationId"] += suffix
    return ops


def _operation(
    rt: resources.ResourceType, action: str, ref: str, query: tuple[str, ...], *, v3: bool
) -> dict[str, Any]:
    op: dict[str, Any] = {
        "operationId": f"{action}{rt.group.split('.')[0].title()}{rt.version.title()}{rt.kind}",
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": _gvk(rt),
        "parameters": [
            _param(name, "query", kind=_PARAM_TYPES.get(name, "string"), v3=v3) for name in query
        ],
    }
    schema = {"$ref": ref}
    if v3:
        op["responses"] = {"200": {"description": "OK", "content": {JSON: {"schema": schema}}}}
        if action == "patch":
            content = {t: {"schema": {"type": "object"}} for t in _PATCH_TYPES}
            op["requestBody"] = {"content": content, "required": True}
    else:
        op["responses"] = {"200": {"description": "OK", "schema": schema}}
        op["consumes"] = list(_PATCH_TYPES) if action == "patch" else [JSON]
        op["produces"] = [JSON]
    return op


def _param(name: str, where: str, *, kind: str = "string", v3: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "in": where, "uniqueItems": True}
    if where == "path":
        out["required"] = True
    if v3:
        out["schema"] = {"type": kind}
    else:
        out["type"] = kind
    return out
