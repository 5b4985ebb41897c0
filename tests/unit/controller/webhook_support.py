"""Helpers for webhook tests: a server on 127.0.0.1 and an HTTPS client that trusts its CA."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from trainop.api.kinds import kind_info
from trainop.controller import admission, certs
from trainop.controller.webhook import WebhookServer, WebhookSettings


@dataclass
class Served:
    server: WebhookServer
    session: aiohttp.ClientSession

    @property
    def base_url(self) -> str:
        return f"https://127.0.0.1:{self.server.port}"

    async def post(self, kind: str, body: bytes | dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """POST to the kind's path; returns the HTTP status and the decoded JSON body."""
        url = self.base_url + admission.path_of(kind_info(kind))
        data = body if isinstance(body, bytes) else None
        json_body = None if isinstance(body, bytes) else body
        async with self.session.post(url, data=data, json=json_body) as response:
            return response.status, await response.json()


def settings(cert_dir: Path) -> WebhookSettings:
    return WebhookSettings(host="127.0.0.1", port=0, cert_dir=cert_dir, reload_interval=0)


def trusting(ca_cert: bytes) -> ssl.SSLContext:
    """A client TLS context that trusts only ``ca_cert`` and checks the host name."""
    return ssl.create_default_context(cadata=ca_cert.decode())


@asynccontextmanager
async def serving(
    cert_dir: Path, *, bundle: certs.CertBundle | None = None
) -> AsyncIterator[Served]:
    server = WebhookServer(settings=settings(cert_dir), bundle=bundle)
    await server.start()
    connector = aiohttp.TCPConnector(ssl=trusting(server.ca_cert))
    try:
        async with aiohttp.ClientSession(connector=connector) as session:
            yield Served(server, session)
    finally:
        await server.stop()


def admission_review(
    obj: dict[str, Any] | None,
    *,
    operation: str = "CREATE",
    old: dict[str, Any] | None = None,
    uid: str = "0d9a4c8e-1",
) -> dict[str, Any]:
    """An AdmissionReview as the API server sends it for a job."""
    request: dict[str, Any] = {"uid": uid, "operation": operation}
    kind = (obj or old or {}).get("kind")
    if kind:
        request["kind"] = {"group": "kubeflow.org", "version": "v1", "kind": kind}
    if obj is not None:
        request["object"] = obj
    if old is not None:
        request["oldObject"] = old
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
