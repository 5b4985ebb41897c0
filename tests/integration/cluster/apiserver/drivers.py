"""Three client drivers with one interface, so each scenario is written once.

- ``OfficialDriver``: the official ``kubernetes`` client through its typed APIs (CoreV1Api,
  CoordinationV1Api, EventsV1Api, AutoscalingV2Api, ApiextensionsV1Api), CustomObjectsApi for
  custom resources, and ``watch.Watch`` for watches.
- ``LightkubeDriver``: lightkube's ``AsyncClient`` with generic resources (create, get,
  replace, patch, delete, watch), and raw requests through its own HTTP session where
  lightkube has no parameter for what is tested (selector strings, paging, bookmarks, logs).
- ``TrainopDriver``: trainop's own ``HttpClient`` (the one the controller uses).

All return plain dicts and raise ``ApiFailureError(code, body)`` for an error response.
"""

from __future__ import annotations

import json
import re
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import httpx2 as httpx
from kubernetes import client, config, watch
from lightkube import AsyncClient, KubeConfig
from lightkube.core.exceptions import ApiError
from lightkube.core.resource_registry import resource_registry
from lightkube.generic_resource import create_global_resource, create_namespaced_resource
from lightkube.types import PatchType

from trainop import errors as trainop_errors
from trainop.kube.http import HttpClient
from trainop.kube.resources import Resource
from trainop.sdk.bridge import LoopThread

T = TypeVar("T")


@dataclass(frozen=True)
class Res:
    """A resource as a test names it."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None, name: str | None = None, sub: str | None = None) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else "/api/v1"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name:
            base += f"/{name}"
        if sub:
            base += f"/{sub}"
        return base


NAMESPACES = Res("", "v1", "namespaces", "Namespace", namespaced=False)
PODS = Res("", "v1", "pods", "Pod")
SERVICES = Res("", "v1", "services", "Service")
ENDPOINTS = Res("", "v1", "endpoints", "Endpoints")
CONFIGMAPS = Res("", "v1", "configmaps", "ConfigMap")
SECRETS = Res("", "v1", "secrets", "Secret")
SERVICEACCOUNTS = Res("", "v1", "serviceaccounts", "ServiceAccount")
EVENTS = Res("", "v1", "events", "Event")
NEW_EVENTS = Res("events.k8s.io", "v1", "events", "Event")
LEASES = Res("coordination.k8s.io", "v1", "leases", "Lease")
HPAS = Res("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler")
ROLES = Res("rbac.authorization.k8s.io", "v1", "roles", "Role")
ROLEBINDINGS = Res("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding")
CRDS = Res(
    "apiextensions.k8s.io",
    "v1",
    "customresourcedefinitions",
    "CustomResourceDefinition",
    namespaced=False,
)
PYTORCHJOBS = Res("kubeflow.org", "v1", "pytorchjobs", "PyTorchJob")
JOBS = Res("batch", "v1", "jobs", "Job")

PATCH_TYPES = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
}


class ApiFailureError(Exception):
    """An error response: HTTP code and the decoded Status body."""

    def __init__(self, code: int, body: dict[str, Any]) -> None:
        super().__init__(f"{code}: {body.get('reason')}: {body.get('message')}")
        self.code = code
        self.body = body


class Driver(Protocol):
    """What scenarios may do; every method returns plain dicts."""

    name: str
    kubeconfig: Path

    def create(
        self, res: Res, body: dict[str, Any], namespace: str | None = None
    ) -> dict[str, Any]: ...
    def get(self, res: Res, name: str, namespace: str | None = None) -> dict[str, Any]: ...
    def list(self, res: Res, namespace: str | None = None, **params: Any) -> dict[str, Any]: ...
    def replace(
        self,
        res: Res,
        name: str,
        body: dict[str, Any],
        namespace: str | None = None,
        status: bool = False,
    ) -> dict[str, Any]: ...
    def patch(
        self,
        res: Res,
        name: str,
        body: Any,
        kind: str,
        namespace: str | None = None,
        sub: str | None = None,
    ) -> dict[str, Any]: ...
    def delete(
        self, res: Res, name: str, namespace: str | None = None, propagation: str | None = None
    ) -> dict[str, Any]: ...
    def watch(
        self,
        res: Res,
        namespace: str | None,
        resource_version: str | None,
        bookmarks: bool = False,
        timeout: int = 5,
        stop_after: int = 0,
    ) -> list[tuple[str, dict[str, Any]]]: ...
    def log(self, pod: str, namespace: str, **params: Any) -> Iterator[str]: ...
    def scale(self, res: Res, name: str, namespace: str) -> dict[str, Any]: ...
    def close(self) -> None: ...


def make(kind: str, kubeconfig: Path) -> Driver:
    """The driver called ``kind``."""
    if kind == "official":
        return OfficialDriver(kubeconfig)
    if kind == "trainop":
        return TrainopDriver(kubeconfig)
    return LightkubeDriver(kubeconfig)


# ---- official client ---------------------------------------------------------------------


def _snake(kind: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", kind).lower()


class OfficialDriver:
    """The official client's typed APIs; CustomObjectsApi for custom resources."""

    name = "official"

    def __init__(self, kubeconfig: Path) -> None:
        self.kubeconfig = kubeconfig
        self.client = config.new_client_from_config(config_file=str(kubeconfig))
        self._apis: dict[str, Any] = {
            "": client.CoreV1Api(self.client),
            "coordination.k8s.io": client.CoordinationV1Api(self.client),
            "events.k8s.io": client.EventsV1Api(self.client),
            "autoscaling": client.AutoscalingV2Api(self.client),
            "apiextensions.k8s.io": client.ApiextensionsV1Api(self.client),
            "batch": client.BatchV1Api(self.client),
        }
        self.custom = client.CustomObjectsApi(self.client)

    def close(self) -> None:
        self.client.close()

    def _plain(self, value: Any) -> dict[str, Any]:
        if isinstance(value, dict):
            return value
        out: dict[str, Any] = self.client.sanitize_for_serialization(value)
        return out

    def _call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except client.ApiException as exc:
            raise ApiFailureError(exc.status, json.loads(exc.body or "{}")) from exc

    def _typed(self, res: Res, verb: str, suffix: str = "") -> Any:
        scope = "namespaced_" if res.namespaced else ""
        return getattr(self._apis[res.group], f"{verb}_{scope}{_snake(res.kind)}{suffix}")

    def _args(self, res: Res, namespace: str | None) -> list[Any]:
        if res.group in self._apis:
            return [namespace] if res.namespaced else []
        return [res.group, res.version, *([namespace] if res.namespaced else []), res.plural]

    def _custom(self, res: Res, verb: str, suffix: str = "") -> Any:
        scope = "namespaced_" if res.namespaced else "cluster_"
        return getattr(self.custom, f"{verb}_{scope}custom_object{suffix}")

    def _fn(self, res: Res, verb: str, suffix: str = "") -> Any:
        if res.group in self._apis:
            return self._typed(res, verb, suffix)
        return self._custom(res, verb, suffix)

    def create(
        self, res: Res, body: dict[str, Any], namespace: str | None = None
    ) -> dict[str, Any]:
        fn = self._fn(res, "create")
        return self._plain(self._call(fn, *self._args(res, namespace), body))

    def get(self, res: Res, name: str, namespace: str | None = None) -> dict[str, Any]:
        fn = self._fn(res, "read" if res.group in self._apis else "get")
        if res.group in self._apis:
            return self._plain(self._call(fn, name, *self._args(res, namespace)))
        return self._plain(self._call(fn, *self._args(res, namespace), name))

    def list(self, res: Res, namespace: str | None = None, **params: Any) -> dict[str, Any]:
        fn = self._fn(res, "list")
        if res.group in self._apis and not res.namespaced:
            fn = getattr(self._apis[res.group], f"list_{_snake(res.kind)}")
        return self._plain(self._call(fn, *self._args(res, namespace), **params))

    def replace(
        self,
        res: Res,
        name: str,
        body: dict[str, Any],
        namespace: str | None = None,
        status: bool = False,
    ) -> dict[str, Any]:
        suffix = "_status" if status else ""
        fn = self._fn(res, "replace", suffix)
        if res.group in self._apis:
            return self._plain(self._call(fn, name, *self._args(res, namespace), body))
        return self._plain(self._call(fn, *self._args(res, namespace), name, body))

    def patch(
        self,
        res: Res,
        name: str,
        body: Any,
        kind: str,
        namespace: str | None = None,
        sub: str | None = None,
    ) -> dict[str, Any]:
        suffix = f"_{sub}" if sub else ""
        fn = self._fn(res, "patch", suffix)
        ctype = {"_content_type": PATCH_TYPES[kind]}
        if res.group in self._apis:
            return self._plain(self._call(fn, name, *self._args(res, namespace), body, **ctype))
        return self._plain(self._call(fn, *self._args(res, namespace), name, body, **ctype))

    def delete(
        self, res: Res, name: str, namespace: str | None = None, propagation: str | None = None
    ) -> dict[str, Any]:
        fn = self._fn(res, "delete")
        kwargs = {"propagation_policy": propagation} if propagation else {}
        if res.group in self._apis:
            result = self._call(fn, name, *self._args(res, namespace), **kwargs)
        else:
            result = self._call(fn, *self._args(res, namespace), name, **kwargs)
        return self._plain(result)

    def watch(
        self,
        res: Res,
        namespace: str | None,
        resource_version: str | None,
        bookmarks: bool = False,
        timeout: int = 5,
        stop_after: int = 0,
    ) -> list[tuple[str, dict[str, Any]]]:
        fn = self._fn(res, "list")
        w = watch.Watch()
        kwargs: dict[str, Any] = {"timeout_seconds": timeout, "allow_watch_bookmarks": bookmarks}
        if resource_version is not None:
            kwargs["resource_version"] = resource_version
        out: list[tuple[str, dict[str, Any]]] = []
        try:
            for ev in w.stream(fn, *self._args(res, namespace), **kwargs):
                raw = ev["raw_object"] if "raw_object" in ev else ev["object"]
                out.append((ev["type"], raw))
                if stop_after and len(out) >= stop_after:
                    w.stop()
        except client.ApiException as exc:
            raise ApiFailureError(exc.status, {"code": exc.status, "reason": exc.reason}) from exc
        return out

    def log(self, pod: str, namespace: str, **params: Any) -> Iterator[str]:
        api = self._apis[""]
        resp = self._call(
            api.read_namespaced_pod_log, pod, namespace, _preload_content=False, **params
        )
        for line in resp.stream(decode_content=True):
            yield line.decode()

    def scale(self, res: Res, name: str, namespace: str) -> dict[str, Any]:
        fn = self._custom(res, "get", "_scale")
        return self._plain(self._call(fn, *self._args(res, namespace), name))


# ---- the two async clients: each on a private event loop ---------------------------------


class _AsyncClientDriver:
    """Runs an async client's calls on a private event loop (``self.client`` is made there)."""

    client: AsyncClient | HttpClient

    def __init__(self, kubeconfig: Path) -> None:
        self.kubeconfig = kubeconfig
        self._loop = LoopThread()

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self._loop.call(coro, timeout=30)

    def close(self) -> None:
        self._run(self.client.close())
        self._loop.close()


# ---- lightkube --------------------------------------------------------------------------


class LightkubeDriver(_AsyncClientDriver):
    """lightkube's AsyncClient (generic resources), run on a private event loop."""

    name = "lightkube"
    client: AsyncClient

    def __init__(self, kubeconfig: Path) -> None:
        super().__init__(kubeconfig)
        kc = KubeConfig.from_file(kubeconfig)
        self.client = self._run(self._make(kc))
        self._http: httpx.AsyncClient = self.client._client._client

    async def _make(self, kc: KubeConfig) -> AsyncClient:
        return AsyncClient(config=kc, field_manager=None)

    def _res(self, res: Res) -> Any:
        known = resource_registry.get(res.api_version, res.kind)
        if known is not None:  # lightkube's own typed model (Pod, for logs) is registered
            return known
        if res.namespaced:
            return create_namespaced_resource(res.group, res.version, res.kind, res.plural)
        return create_global_resource(res.group, res.version, res.kind, res.plural)

    async def _guard(self, coro: Coroutine[Any, Any, T]) -> T:
        try:
            return await coro
        except ApiError as exc:
            raise ApiFailureError(exc.status.code or 0, exc.response.json()) from exc

    def _ns(self, res: Res, namespace: str | None) -> dict[str, Any]:
        return {"namespace": namespace} if res.namespaced else {}

    def _obj(self, call: Coroutine[Any, Any, Any]) -> dict[str, Any]:
        """Runs one lightkube call: the object it returns as a plain dict."""
        return dict(self._run(self._guard(call)).to_dict())

    def create(
        self, res: Res, body: dict[str, Any], namespace: str | None = None
    ) -> dict[str, Any]:
        cls = self._res(res)
        return self._obj(self.client.create(cls.from_dict(body), **self._ns(res, namespace)))

    def get(self, res: Res, name: str, namespace: str | None = None) -> dict[str, Any]:
        return self._obj(self.client.get(self._res(res), name, **self._ns(res, namespace)))

    async def _raw(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        resp = await self._http.request(method, path, **kwargs)
        if resp.status_code >= 400:
            raise ApiFailureError(resp.status_code, resp.json())
        return resp

    def list(self, res: Res, namespace: str | None = None, **params: Any) -> dict[str, Any]:
        names = {
            "label_selector": "labelSelector",
            "field_selector": "fieldSelector",
            "_continue": "continue",
            "resource_version": "resourceVersion",
        }
        query = {names.get(k, k): v for k, v in params.items() if v is not None}
        resp = self._run(self._raw("GET", res.path(namespace), params=query))
        out: dict[str, Any] = resp.json()
        return out

    def replace(
        self,
        res: Res,
        name: str,
        body: dict[str, Any],
        namespace: str | None = None,
        status: bool = False,
    ) -> dict[str, Any]:
        cls = self._res(res)
        target = cls.Status if status else cls
        return self._obj(
            self.client.replace(target.from_dict(body), name, **self._ns(res, namespace))
        )

    def patch(
        self,
        res: Res,
        name: str,
        body: Any,
        kind: str,
        namespace: str | None = None,
        sub: str | None = None,
    ) -> dict[str, Any]:
        cls = self._res(res)
        target = {"status": cls.Status, "scale": cls.Scale}.get(sub or "", cls)
        ptype = {
            "merge": PatchType.MERGE,
            "json": PatchType.JSON,
            "strategic": PatchType.STRATEGIC,
        }[kind]
        return self._obj(
            self.client.patch(target, name, body, patch_type=ptype, **self._ns(res, namespace))
        )

    def delete(
        self, res: Res, name: str, namespace: str | None = None, propagation: str | None = None
    ) -> dict[str, Any]:
        params = {"propagationPolicy": propagation} if propagation else {}
        resp = self._run(self._raw("DELETE", res.path(namespace, name), params=params))
        out: dict[str, Any] = resp.json()
        return out

    async def _watch(
        self, res: Res, namespace: str | None, rv: str | None, timeout: int, stop_after: int
    ) -> list[tuple[str, dict[str, Any]]]:
        out: list[tuple[str, dict[str, Any]]] = []
        stream = self.client.watch(
            self._res(res), server_timeout=timeout, resource_version=rv, **self._ns(res, namespace)
        )
        try:
            async for kind, obj in stream:
                out.append((kind, dict(obj.to_dict())))
                if stop_after and len(out) >= stop_after:
                    break
        except ApiError as exc:
            raise ApiFailureError(exc.status.code or 0, {"code": exc.status.code}) from exc
        return out

    async def _raw_watch(
        self, res: Res, namespace: str | None, params: dict[str, Any], stop_after: int
    ) -> list[tuple[str, dict[str, Any]]]:
        out: list[tuple[str, dict[str, Any]]] = []
        path = res.path(namespace)
        async with self._http.stream("GET", path, params=params) as resp:
            async for line in resp.aiter_lines():
                if line.strip():
                    ev = json.loads(line)
                    out.append((ev["type"], ev["object"]))
                if stop_after and len(out) >= stop_after:
                    break
        return out

    def watch(
        self,
        res: Res,
        namespace: str | None,
        resource_version: str | None,
        bookmarks: bool = False,
        timeout: int = 5,
        stop_after: int = 0,
    ) -> list[tuple[str, dict[str, Any]]]:
        if not bookmarks:
            return self._run(self._watch(res, namespace, resource_version, timeout, stop_after))
        params = {"watch": "true", "allowWatchBookmarks": "true", "timeoutSeconds": timeout}
        if resource_version is not None:
            params["resourceVersion"] = resource_version
        return self._run(self._raw_watch(res, namespace, params, stop_after))

    def log(self, pod: str, namespace: str, **params: Any) -> Iterator[str]:
        names = {"tail_lines": "tailLines"}
        query = {
            names.get(k, k): (str(v).lower() if isinstance(v, bool) else v)
            for k, v in params.items()
        }
        stream = self.client.log(
            pod,
            namespace=namespace,
            container=query.pop("container", None),
            follow=query.pop("follow", "false") == "true",
            tail_lines=query.pop("tailLines", None),
        )
        yield from self._loop.iterate(stream, timeout=30)

    def scale(self, res: Res, name: str, namespace: str) -> dict[str, Any]:
        return self._obj(self.client.get(self._res(res).Scale, name, namespace=namespace))


# ---- trainop's own client (what the controller uses) -------------------------------------


class TrainopDriver(_AsyncClientDriver):
    """``trainop.kube.http.HttpClient``, the controller's client, on a private event loop."""

    name = "trainop"
    client: HttpClient

    def __init__(self, kubeconfig: Path) -> None:
        super().__init__(kubeconfig)
        self.client = self._run(self._make())

    async def _make(self) -> HttpClient:
        return HttpClient.from_kubeconfig(path=str(self.kubeconfig))

    @staticmethod
    def _res(res: Res) -> Resource:
        return Resource(res.group, res.version, res.plural, res.kind, res.namespaced)

    async def _guard(self, coro: Coroutine[Any, Any, T]) -> T:
        try:
            return await coro
        except trainop_errors.ApiError as exc:
            causes = [{"field": c.path, "reason": c.type, "message": c.detail} for c in exc.causes]
            body = {
                "kind": "Status",
                "code": exc.status,
                "reason": exc.reason,
                "message": str(exc),
                "details": {"causes": causes},
            }
            raise ApiFailureError(exc.status, body) from exc

    def create(
        self, res: Res, body: dict[str, Any], namespace: str | None = None
    ) -> dict[str, Any]:
        return self._run(self._guard(self.client.create(self._res(res), body, namespace=namespace)))

    def get(self, res: Res, name: str, namespace: str | None = None) -> dict[str, Any]:
        call = self.client.get(self._res(res), name=name, namespace=namespace)
        return self._run(self._guard(call))

    def list(self, res: Res, namespace: str | None = None, **params: Any) -> dict[str, Any]:
        call = self.client.list(
            self._res(res),
            namespace=namespace,
            label_selector=params.get("label_selector") or "",
            field_selector=params.get("field_selector") or "",
            limit=params.get("limit") or 0,
            continue_token=params.get("_continue") or "",
        )
        listed = self._run(self._guard(call))
        meta = {"resourceVersion": listed.resource_version}
        if listed.continue_token:
            meta["continue"] = listed.continue_token
        return {"items": listed.items, "metadata": meta}

    def replace(
        self,
        res: Res,
        name: str,
        body: dict[str, Any],
        namespace: str | None = None,
        status: bool = False,
    ) -> dict[str, Any]:
        call = self.client.replace(
            self._res(res), body, namespace=namespace, subresource="status" if status else ""
        )
        return self._run(self._guard(call))

    def patch(
        self,
        res: Res,
        name: str,
        body: Any,
        kind: str,
        namespace: str | None = None,
        sub: str | None = None,
    ) -> dict[str, Any]:
        call = self.client.patch(
            self._res(res),
            name=name,
            patch=body,
            namespace=namespace,
            patch_type=kind,  # type: ignore[arg-type]
            subresource=sub or "",
        )
        return self._run(self._guard(call))

    def delete(
        self, res: Res, name: str, namespace: str | None = None, propagation: str | None = None
    ) -> dict[str, Any]:
        call = self.client.delete(
            self._res(res),
            name=name,
            namespace=namespace,
            propagation_policy=propagation or "Background",
        )
        self._run(self._guard(call))
        return {"kind": "Status", "status": "Success"}

    async def _watch(
        self,
        res: Res,
        namespace: str | None,
        rv: str | None,
        timeout: int,
        stop_after: int,
        bookmarks: bool,
    ) -> list[tuple[str, dict[str, Any]]]:
        out: list[tuple[str, dict[str, Any]]] = []
        stream = self.client.watch(
            self._res(res),
            namespace=namespace,
            resource_version=rv or "",
            timeout_seconds=timeout,
        )
        async for event in stream:
            if event.type == "BOOKMARK" and not bookmarks:
                continue  # the client always asks for them; drop those the caller did not
            out.append((event.type, event.obj))
            if stop_after and len(out) >= stop_after:
                break
        return out

    def watch(
        self,
        res: Res,
        namespace: str | None,
        resource_version: str | None,
        bookmarks: bool = False,
        timeout: int = 5,
        stop_after: int = 0,
    ) -> list[tuple[str, dict[str, Any]]]:
        call = self._watch(res, namespace, resource_version, timeout, stop_after, bookmarks)
        return self._run(self._guard(call))

    def log(self, pod: str, namespace: str, **params: Any) -> Iterator[str]:
        follow = str(params.get("follow", "false")).lower() == "true"
        stream = self.client.stream_log(
            name=pod,
            namespace=namespace,
            container=params.get("container") or "",
            follow=follow,
            tail_lines=params.get("tail_lines"),
        )
        for line in self._loop.iterate(stream, timeout=30):
            yield line + "\n"  # the client yields lines unterminated

    def scale(self, res: Res, name: str, namespace: str) -> dict[str, Any]:
        call = self.client.get(self._res(res), name=name, namespace=namespace, subresource="scale")
        return self._run(self._guard(call))
