"""``HttpClient``: the ``Client`` protocol over HTTP, for real and embedded API servers.

lightkube does what it does well here — reading kubeconfig files and in-cluster service
account configuration, authentication, TLS — and hands us its ``SSLContext`` and ``httpx2.Auth``,
which ``from_kubeconfig`` gives to an ``AiohttpTransport`` (``kube.transport``: a quarter of
httpx2's CPU per request); tests may pass an ``httpx2.AsyncClient`` instead. TLS verification
uses the kubeconfig's ``certificate-authority-data`` (or file), as the local API server's
kubeconfig provides; a server whose certificate does not verify is unreachable.
On top of it this module sends plain REST calls and decodes JSON into dicts: no model classes
on the hot path (DESIGN §12). Failures become ``trainop.errors`` through ``kube.status``, the one
mapping; transport failures become ``UnreachableError``. Watches request bookmarks and surface
410 (as an HTTP status or an ``ERROR`` event) as ``GoneError`` for the informer to relist.

``on_request(verb, plural)`` is called for every request (the API-calls metric);
``on_response(code, method, host, seconds)`` for every answer, with client-go's labels of
``rest_client_requests_total`` (code ``<error>`` when no answer came) and the time until the
answer's headers (``rest_client_request_duration_seconds``).
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx2
import yaml
from lightkube.config import client_adapter
from lightkube.config.kubeconfig import KubeConfig
from lightkube.core.exceptions import ConfigError

from trainop import errors
from trainop.kube.client import JsonPatch, Obj, ObjectList, PatchType, WatchEvent
from trainop.kube.resources import PODS, Resource
from trainop.kube.status import error_from_status
from trainop.kube.transport import AiohttpTransport, HttpxTransport, Transport, TransportError

_PATCH_CONTENT_TYPES = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "apply": "application/apply-patch+yaml",  # JSON is YAML: the body is sent as JSON
}
RequestHook = Callable[[str, str], None]
ResponseHook = Callable[[str, str, str, float], None]
PODS_PATH = "/api/v1/namespaces/{namespace}/pods/{name}/log"


def _ignore(verb: str, plural: str) -> None:
    del verb, plural


def _ignore_response(code: str, method: str, host: str, seconds: float) -> None:
    del code, method, host, seconds


class HttpClient:
    """A Kubernetes API client speaking JSON over a ``Transport`` (or an ``httpx2.AsyncClient``)."""

    def __init__(
        self,
        http: httpx2.AsyncClient | Transport,
        *,
        on_request: RequestHook = _ignore,
        on_response: ResponseHook = _ignore_response,
    ) -> None:
        self._transport = HttpxTransport(http) if isinstance(http, httpx2.AsyncClient) else http
        self._on_request = on_request
        self._on_response = on_response
        self._host = self._transport.host

    @classmethod
    def from_kubeconfig(
        cls,
        *,
        path: str | None = None,
        context: str | None = None,
        on_request: RequestHook = _ignore,
        on_response: ResponseHook = _ignore_response,
    ) -> HttpClient:
        """A client for ``path`` (else ``KUBECONFIG``, ``~/.kube/config`` or in-cluster)."""
        try:
            loaded = KubeConfig.from_file(path) if path else KubeConfig.from_env()
            config = loaded.get(context_name=context)
            if config is None:
                raise errors.UnreachableError(
                    f"no Kubernetes context {context!r} in the configuration"
                )
            params = client_adapter.ConnectionParams().httpx_params(config)
        except (ConfigError, OSError, ValueError, KeyError, yaml.YAMLError) as exc:
            raise errors.UnreachableError(f"cannot load Kubernetes configuration: {exc}") from exc
        transport = AiohttpTransport(
            str(params["base_url"]), ssl_context=params["verify"], auth=params["auth"]
        )
        return cls(transport, on_request=on_request, on_response=on_response)

    async def get(
        self, resource: Resource, *, name: str, namespace: str | None = None, subresource: str = ""
    ) -> Obj:
        path = resource.path(namespace=namespace, name=name, subresource=subresource)
        return await self._call("get", resource, "GET", path)

    async def list(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str = "",
        field_selector: str = "",
        limit: int = 0,
        continue_token: str = "",
    ) -> ObjectList:
        params = _params(
            labelSelector=label_selector,
            fieldSelector=field_selector,
            limit=limit or "",
            **{"continue": continue_token},
        )
        body = await self._call(
            "list", resource, "GET", resource.path(namespace=namespace), params=params
        )
        meta = body.get("metadata", {})
        return ObjectList(
            body.get("items") or [], meta.get("resourceVersion", ""), meta.get("continue", "")
        )

    async def create(self, resource: Resource, obj: Obj, *, namespace: str | None = None) -> Obj:
        namespace = namespace or obj.get("metadata", {}).get("namespace")
        path = resource.path(namespace=namespace)
        return await self._call("create", resource, "POST", path, body=obj)

    async def patch(
        self,
        resource: Resource,
        *,
        name: str,
        patch: Obj | JsonPatch,
        namespace: str | None = None,
        patch_type: PatchType = "merge",
        subresource: str = "",
        field_manager: str = "",
        force: bool = False,
    ) -> Obj:
        path = resource.path(namespace=namespace, name=name, subresource=subresource)
        headers = {"Content-Type": _PATCH_CONTENT_TYPES[patch_type]}
        params = _params(fieldManager=field_manager, force="true" if force else "")
        return await self._call(
            "patch", resource, "PATCH", path, body=patch, headers=headers, params=params or None
        )

    async def bind(self, *, name: str, namespace: str, node: str, uid: str = "") -> None:
        """Assign a pod to ``node`` through its ``binding`` subresource (what a scheduler does)."""
        meta = {"name": name, **({"uid": uid} if uid else {})}
        target = {"apiVersion": "v1", "kind": "Node", "name": node}
        body = {"apiVersion": "v1", "kind": "Binding", "metadata": meta, "target": target}
        path = PODS.path(namespace=namespace, name=name, subresource="binding")
        await self._call("create", PODS, "POST", path, body=body)

    async def replace(
        self, resource: Resource, obj: Obj, *, namespace: str | None = None, subresource: str = ""
    ) -> Obj:
        meta = obj["metadata"]
        path = resource.path(
            namespace=namespace or meta.get("namespace"), name=meta["name"], subresource=subresource
        )
        return await self._call("update", resource, "PUT", path, body=obj)

    async def delete(
        self,
        resource: Resource,
        *,
        name: str,
        namespace: str | None = None,
        propagation_policy: str = "Background",
        preconditions_uid: str = "",
    ) -> None:
        options: Obj = {"kind": "DeleteOptions", "apiVersion": "v1"}
        options["propagationPolicy"] = propagation_policy
        if preconditions_uid:
            options["preconditions"] = {"uid": preconditions_uid}
        path = resource.path(namespace=namespace, name=name)
        await self._call("delete", resource, "DELETE", path, body=options)

    async def watch(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str = "",
        resource_version: str = "",
        timeout_seconds: int = 0,
    ) -> AsyncIterator[WatchEvent]:
        self._on_request("watch", resource.plural)
        params = _params(
            watch="true",
            allowWatchBookmarks="true",
            labelSelector=label_selector,
            resourceVersion=resource_version,
            timeoutSeconds=timeout_seconds or "",
        )
        what = f"watch {resource.plural}"
        async for line in self._lines(resource.path(namespace=namespace), params, what=what):
            if line.strip():
                yield _watch_event(line, what=what)

    async def stream_log(
        self,
        *,
        name: str,
        namespace: str,
        container: str = "",
        follow: bool = False,
        previous: bool = False,
        tail_lines: int | None = None,
    ) -> AsyncIterator[str]:
        """Lines of a container's log (``pods/log``); with ``follow``, until the container ends."""
        self._on_request("get", "pods/log")
        params = _params(
            container=container,
            follow="true" if follow else "",
            previous="true" if previous else "",
            tailLines="" if tail_lines is None else tail_lines,
        )
        path = PODS_PATH.format(namespace=namespace, name=name)
        async for line in self._lines(path, params, what=f"log of pod {namespace}/{name}"):
            yield line

    async def _lines(self, path: str, params: dict[str, str], *, what: str) -> AsyncIterator[str]:
        """The lines of a streamed GET (no read timeout); errors mapped like every call."""
        started = time.perf_counter()
        try:
            stream = await self._transport.stream(path, params)
        except TransportError as exc:
            self._answered("<error>", "GET", started)
            raise errors.UnreachableError(f"{what}: {exc}") from exc
        self._answered(str(stream.status), "GET", started)
        try:
            if stream.status >= 400:
                raise error_from_status(stream.status, _json(await stream.read()), what=what)
            async for line in _split_lines(stream.chunks()):
                yield line
        except TransportError as exc:
            raise errors.UnreachableError(f"{what}: {exc}") from exc
        finally:
            await stream.close()

    async def close(self) -> None:
        await self._transport.close()

    def _answered(self, code: str, method: str, started: float) -> None:
        self._on_response(code, method, self._host, time.perf_counter() - started)

    async def _call(
        self,
        verb: str,
        resource: Resource,
        method: str,
        path: str,
        *,
        body: object = None,
        params: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> Obj:
        self._on_request(verb, resource.plural)
        content = json.dumps(body).encode() if body is not None else None
        all_headers = {"Content-Type": "application/json", **(headers or {})}
        started = time.perf_counter()
        try:
            answer = await self._transport.request(
                method, path, params=params, headers=all_headers, body=content
            )
        except TransportError as exc:
            self._answered("<error>", method, started)
            raise errors.UnreachableError(f"{verb} {resource.plural}: {exc}") from exc
        self._answered(str(answer.status), method, started)
        decoded = _json(answer.body)
        if answer.status >= 400:
            raise error_from_status(answer.status, decoded, what=f"{verb} {path}")
        return decoded if isinstance(decoded, dict) else {}


def _params(**values: object) -> dict[str, str]:
    return {key: str(value) for key, value in values.items() if value not in ("", None)}


def _json(content: bytes) -> Any:
    try:
        return json.loads(content) if content else None
    except ValueError:
        return {"message": content[:200].decode(errors="replace")}


_EVENT_TYPES = ("ADDED", "MODIFIED", "DELETED", "BOOKMARK")


def _watch_event(line: str, *, what: str) -> WatchEvent:
    try:
        raw = json.loads(line)
    except ValueError as exc:
        raise errors.BrokenStreamError(f"{what}: a line that is not JSON: {exc}") from exc
    if not isinstance(raw, dict):
        raise errors.BrokenStreamError(f"{what}: a line that is not a watch event")
    event_type, obj = raw.get("type"), raw.get("object")
    if event_type == "ERROR":
        status = obj if isinstance(obj, dict) else {}
        raise error_from_status(int(status.get("code", 500)), status, what=what)
    if event_type not in _EVENT_TYPES or not isinstance(obj, dict):
        raise errors.BrokenStreamError(f"{what}: an event without a known type or an object")
    return WatchEvent(event_type, obj)


async def _split_lines(chunks: AsyncIterator[bytes]) -> AsyncIterator[str]:
    """Lines ended by ``\n`` only (a trailing ``\r`` dropped), decoded as UTF-8.

    Watch and log streams end lines with ``\n``; JSON may carry U+0085, U+2028 and U+2029
    unescaped inside strings, and ``str.splitlines`` (which httpx's ``aiter_lines`` follows)
    would cut an event there.
    """
    pending = bytearray()
    scanned = 0
    async for chunk in chunks:
        pending += chunk
        start = 0
        while (end := pending.find(b"\n", max(start, scanned))) >= 0:
            yield bytes(pending[start:end]).rstrip(b"\r").decode("utf-8", "replace")
            start = end + 1
        del pending[:start]
        scanned = len(pending)
    if pending:
        yield bytes(pending).rstrip(b"\r").decode("utf-8", "replace")
