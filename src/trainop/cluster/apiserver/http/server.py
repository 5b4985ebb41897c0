"""The embedded API server: an aiohttp application with one dispatching handler.

Role: own the store, registry, garbage collector and log source; authenticate; route each
request (``routing``) to discovery or to a resource handler (``reads``, ``writes``,
``deletion``, ``watch``, ``logs``); render every ``RequestError`` as a ``Status`` body, and
anything unexpected as a 500 ``InternalError`` with the traceback logged once here.

CRDs add resources at run time, so aiohttp's router (frozen once an app runs) is not used:
aiohttp's low-level ``web.Server`` hands every request to one handler and ``routing.parse``
does the splitting (an ``Application`` with one catch-all route cost ~5% of the server's CPU
per write in its router and middleware machinery). Handlers are cancelled
when their client disconnects (``handler_cancellation``), which is what ends an idle watch.

Lifecycle: ``await ApiServer.start()`` binds (127.0.0.1, port 0 picks a free port), serving
HTTPS with the state directory's certificate (``tls``) unless ``insecure_http``, writes the
kubeconfig, and returns; ``await stop()`` stops accepting, ends watches and closes the store
after every queued write is durable.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aiohttp import web

from trainop.cluster.apiserver import gc, serviceaccounts, store
from trainop.cluster.apiserver.admission.limits import Limits
from trainop.cluster.apiserver.apply import apply
from trainop.cluster.apiserver.http import auth, bodies, discovery, openapi, routing, status, tls
from trainop.cluster.apiserver.rest import (
    binding,
    clusterips,
    crds,
    deletion,
    logs,
    patch,
    reads,
    resources,
    reviews,
    watch,
    writes,
)
from trainop.cluster.apiserver.rest.call import ApiState, Call
from trainop.cluster.apiserver.streams import portforward, streams
from trainop.kube import podlogs

log = logging.getLogger(__name__)


@dataclass(slots=True)
class ServerConfig:
    """How to run the server. ``port=0`` picks a free port."""

    state_dir: Path
    host: str = "127.0.0.1"
    port: int = 0
    kubeconfig: Path | None = None
    # Plain HTTP instead of TLS (kubectl then sends no token): only when asked for.
    insecure_http: bool = False
    bookmark_interval: float = 60.0
    history: int = 10_000
    log_source: podlogs.LogSource = field(default_factory=podlogs.MemoryLogSource)
    # Admission ceilings (``limits``): replicas per job and pods in the cluster.
    limits: Limits = field(default_factory=Limits)
    # Judge training jobs by the webhook's rules; off only to test a stand-in job CRD.
    job_admission: bool = True
    # The range Services' cluster IPs come from (kube's default service CIDR).
    service_cidr: str = clusterips.DEFAULT_RANGE
    # Seconds an Event lives after its last write (kube-apiserver's ``--event-ttl``, 1 h).
    event_ttl: float = 3600.0


# Events live in the store's volatile part, as kube keeps them (TTL'd, not fsynced): those
# of core/v1 and of events.k8s.io/v1 (two store keys).
EVENTS = frozenset({"core/events", "events.k8s.io/events"})


def _now() -> datetime:
    return datetime.now(UTC)


class ApiServer:
    """One embedded API server instance (see the module docstring)."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.token = auth.load_or_create_token(config.state_dir)
        db = store.Store(
            path=config.state_dir / "store.db",
            history=config.history,
            volatile=EVENTS,
            volatile_ttl=config.event_ttl,
        )
        self.state = ApiState(
            store=db,
            registry=resources.Registry(),
            clock=_now,
            log_source=config.log_source,
            bookmark_interval=config.bookmark_interval,
            limits=config.limits,
            job_admission=config.job_admission,
            cluster_ips=clusterips.ClusterIPs(config.service_cidr),
        )
        self._pager = reads.Pager()
        self._openapi = openapi.OpenApi(self.state)
        self._gc = gc.GarbageCollector(self.state)
        self.serviceaccounts = serviceaccounts.DefaultServiceAccounts(self.state)
        self._runner: web.ServerRunner | None = None
        self.port = 0

    @property
    def url(self) -> str:
        """The base URL clients use."""
        scheme = "http" if self.config.insecure_http else "https"
        return f"{scheme}://{self.config.host}:{self.port}"

    @property
    def kubeconfig_path(self) -> Path:
        """Where the kubeconfig is written."""
        return self.config.kubeconfig or self.config.state_dir / "kubeconfig"

    async def start(self) -> None:
        """Open the store, serve, and write the kubeconfig."""
        self.state.store.start()
        self.state.cluster_ips.start(self.state.store)
        crds.install_stored(self.state)
        self._gc.start()
        self.serviceaccounts.start()
        loop = asyncio.get_running_loop()

        def make_request(
            message: Any, payload: Any, protocol: Any, writer: Any, task: Any
        ) -> web.Request:
            return web.Request(
                message,
                payload,
                protocol,
                writer,
                task,
                loop,
                client_max_size=bodies.MAX_BODY_BYTES,
            )

        handler = web.Server(
            self._serve,
            request_factory=make_request,
            handler_cancellation=True,
            access_log=None,
        )
        self._runner = web.ServerRunner(handler, shutdown_timeout=1.0)
        await self._runner.setup()
        ca_pem, ssl_context = b"", None
        if not self.config.insecure_http:
            ca_pem = tls.ensure_bundle(self.config.state_dir, now=_now()).ca_cert
            ssl_context = tls.server_context(self.config.state_dir)
        site = web.TCPSite(
            self._runner,
            self.config.host,
            self.config.port,
            backlog=1024,
            ssl_context=ssl_context,
        )
        await site.start()
        server = getattr(site, "_server", None)
        sockets = getattr(server, "sockets", None) or []
        self.port = sockets[0].getsockname()[1] if sockets else self.config.port
        auth.write_kubeconfig(
            self.kubeconfig_path, server=self.url, token=self.token, ca_pem=ca_pem
        )
        log.info("embedded API server listening on %s", self.url)

    async def stop(self) -> None:
        """Stop serving, stop the collector, and close the store durably."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        await self._gc.stop()
        await self.serviceaccounts.stop()
        await self.state.store.close()

    # ---- dispatch ------------------------------------------------------------------------

    async def _serve(self, request: web.BaseRequest) -> web.StreamResponse:
        assert isinstance(request, web.Request)  # ``make_request`` builds every one
        if request.headers.get("Expect", "").lower() == "100-continue":
            await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")  # as the router did
            request.writer.output_size = 0
        return await self._dispatch(request)

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        try:
            return await self._route(request)
        except status.RequestError as exc:
            return _status_response(exc)
        except store.StoreError as exc:
            log.error("store failure: %s", exc)
            return _status_response(
                status.RequestError(str(exc), status=500, reason="InternalError")
            )
        except (asyncio.CancelledError, ConnectionResetError):
            raise
        except Exception as exc:
            log.exception("internal error serving %s %s", request.method, request.path)
            err = status.RequestError(
                f"Internal error occurred: {exc!r}", status=500, reason="InternalError"
            )
            return _status_response(err)

    async def _route(self, request: web.Request) -> web.StreamResponse:
        route = routing.parse(request.path)
        if route not in auth.PUBLIC_PATHS and not auth.is_authorized(
            request.headers.get("Authorization"), self.token
        ):
            raise status.unauthorized()
        if isinstance(route, routing.ResourcePath):
            return await self._resource(request, route)
        if request.method not in ("GET", "HEAD"):
            raise status.method_not_allowed(request.method)
        if isinstance(route, routing.OpenApiPath):
            return self._openapi.serve(request, route.tail)
        return _json(self._document(route))

    def _document(self, route: routing.Route) -> Any:
        registry = self.state.registry
        if isinstance(route, routing.DiscoveryPath):
            if route.what == "api":
                return discovery.api_versions(f"{self.config.host}:{self.port}")
            if route.what == "apis":
                return discovery.api_groups(registry)
            if route.what == "group":
                return discovery.api_group(registry, route.group)
            return discovery.resource_list(registry, route.group, route.version)
        documents: dict[str, Callable[[], Any]] = {
            "version": discovery.version,
        }
        if route in ("healthz", "readyz", "livez"):
            return "ok"
        if isinstance(route, str) and route in documents:
            return documents[route]()
        raise status.path_not_found(str(route))

    async def _resource(
        self, request: web.Request, path: routing.ResourcePath
    ) -> web.StreamResponse:
        rt = self.state.registry.find(group=path.group, version=path.version, plural=path.plural)
        if rt is None or (path.namespace is not None and not rt.namespaced):
            raise status.path_not_found(request.path)
        if path.subresource and path.subresource not in rt.subresources:
            raise status.path_not_found(request.path)
        body = await bodies.read(request)
        ctype = request.headers.get("Content-Type", "").split(";")[0].strip().lower()
        call = Call(
            rt=rt,
            namespace=path.namespace,
            name=path.name,
            subresource=path.subresource,
            query=request.query,
            body=body,
            content_type=ctype,
            request=request,
        )
        handler = self._handler(request.method, call)
        return await handler(self.state, call)

    def _handler(
        self, method: str, call: Call
    ) -> Callable[[ApiState, Call], Awaitable[web.StreamResponse]]:
        if call.rt.unserved:
            raise status.RequestError(call.rt.unserved, status=405, reason="MethodNotAllowed")
        if call.rt.verbs == ("create",):
            return reviews.create
        if call.name is None:
            collection = {
                "GET": self._list_or_watch,
                "POST": writes.create,
                "DELETE": deletion.delete_collection,
            }
            if method in collection:
                return collection[method]
            raise status.method_not_allowed(method.lower(), call.rt)
        if call.subresource == "log":
            if method != "GET":
                raise status.method_not_allowed(method.lower(), call.rt)
            return logs.serve
        if call.subresource == "token":
            raise status.RequestError(
                streams.TOKEN_UNSUPPORTED, status=405, reason="MethodNotAllowed"
            )
        if call.subresource in STREAMING:
            if method not in ("GET", "POST"):
                raise status.method_not_allowed(method.lower(), call.rt)
            return STREAMING[call.subresource]
        if call.subresource == "binding":
            if method != "POST":
                raise status.method_not_allowed(method.lower(), call.rt)
            return binding.bind
        if call.subresource == "scale":
            if method == "GET":
                return _sync(writes.get_scale)
            if method in ("PUT", "PATCH"):
                return writes.write_scale
            raise status.method_not_allowed(method.lower(), call.rt)
        single = {
            "GET": _sync(reads.get),
            "PUT": writes.update,
            "PATCH": apply.patch if call.content_type == patch.APPLY else writes.patch_,
            "DELETE": deletion.delete,
        }
        if call.subresource == "status" and method == "DELETE":
            raise status.method_not_allowed("delete", call.rt)
        if method in single:
            return single[method]
        raise status.method_not_allowed(method.lower(), call.rt)

    async def _list_or_watch(self, state: ApiState, call: Call) -> web.StreamResponse:
        if call.flag("watch"):
            return await watch.watch(state, call)
        return reads.list_(state, self._pager, call)


STREAMING: dict[str, Callable[[ApiState, Call], Awaitable[web.StreamResponse]]] = {
    "exec": streams.exec_,
    "attach": streams.attach,
    "portforward": portforward.serve,
}


def _sync(
    fn: Callable[[ApiState, Call], web.StreamResponse],
) -> Callable[[ApiState, Call], Awaitable[web.StreamResponse]]:
    async def run(state: ApiState, call: Call) -> web.StreamResponse:
        return fn(state, call)

    return run


def _json(value: Any) -> web.Response:
    if isinstance(value, str):
        return web.Response(text=value, content_type="text/plain")
    return reads.respond(json.dumps(value, separators=(",", ":")).encode())


def _status_response(exc: status.RequestError) -> web.Response:
    return reads.respond(store.encode(exc.body()), code=exc.status)
