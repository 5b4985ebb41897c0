"""HTTP endpoints of the operator process: ``/metrics`` and the ``/healthz``/``/readyz`` probes.

Addresses use controller-runtime's form (``:8080``, ``127.0.0.1:8080``; ``0`` disables). The
metrics and probe endpoints may share an address. ``/readyz`` answers 200 only when the
``ready`` callback says so (caches synced, webhook certificates loaded), otherwise 500 with the
reason, as controller-runtime's checks do.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from aiohttp import web

from trainop.controller.metrics import Metrics

Readiness = Callable[[], tuple[bool, str]]


@dataclass(frozen=True, slots=True)
class Address:
    host: str
    port: int

    @classmethod
    def parse(cls, text: str) -> Address | None:
        """``:8080`` → all interfaces; ``host:port``; ``0`` (or empty) → disabled (None)."""
        if text in ("", "0"):
            return None
        host, _, port = text.rpartition(":")
        return cls(host or "0.0.0.0", int(port))


class ProbeServer:
    """Serves metrics and probes on one or two addresses."""

    def __init__(
        self, *, metrics: Metrics, ready: Readiness, metrics_address: str, health_address: str
    ) -> None:
        self._metrics = metrics
        self._ready = ready
        self._addresses = {
            "metrics": Address.parse(metrics_address),
            "health": Address.parse(health_address),
        }
        self._runners: list[web.AppRunner] = []
        self.ports: dict[str, int] = {}

    async def start(self) -> None:
        by_address: dict[Address, list[str]] = {}
        for role, address in self._addresses.items():
            if address is not None:
                by_address.setdefault(address, []).append(role)
        for address, roles in by_address.items():
            runner = web.AppRunner(self._app(roles), access_log=None)
            await runner.setup()
            site = web.TCPSite(runner, address.host, address.port)
            await site.start()
            port = runner.addresses[0][1]
            self.ports |= dict.fromkeys(roles, port)
            self._runners.append(runner)

    async def stop(self) -> None:
        for runner in self._runners:
            await runner.cleanup()
        self._runners.clear()

    def _app(self, roles: list[str]) -> web.Application:
        app = web.Application()
        if "metrics" in roles:
            app.router.add_get("/metrics", self._serve_metrics)
        if "health" in roles:
            app.router.add_get("/healthz", self._serve_healthz)
            app.router.add_get("/readyz", self._serve_readyz)
        return app

    async def _serve_metrics(self, request: web.Request) -> web.Response:
        del request
        body = self._metrics.exposition()
        return web.Response(body=body, content_type="text/plain", charset="utf-8")

    async def _serve_healthz(self, request: web.Request) -> web.Response:
        del request
        return web.Response(text="ok")

    async def _serve_readyz(self, request: web.Request) -> web.Response:
        del request
        ready, reason = self._ready()
        return web.Response(text="ok" if ready else reason, status=200 if ready else 500)
