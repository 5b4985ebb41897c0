"""The aiohttp transport sends what the httpx2 one sends, renews credentials on 401, maps errors.

A real aiohttp server on 127.0.0.1 records each request's method, path, raw query, Content-Type
and body; the same ``HttpClient`` calls go through both transports and must record the same.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest
from aiohttp import web
from lightkube.config.client_adapter import BearerTokenFileAuth

from trainop import errors
from trainop.kube.http import HttpClient
from trainop.kube.resources import PODS
from trainop.kube.transport import AiohttpTransport

Recorded = tuple[str, str, str, str, Any]


class Recorder:
    """Answers like an API server would, enough for the client; records every request."""

    def __init__(self, token: str = "") -> None:
        self.seen: list[Recorded] = []
        self.authorizations: list[str] = []
        self.token = token

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        self.authorizations.append(request.headers.get("Authorization", ""))
        if self.token and request.headers.get("Authorization") != f"Bearer {self.token}":
            return web.json_response({"kind": "Status", "code": 401}, status=401)
        decoded = json.loads(body) if body else None
        content_type = request.headers.get("Content-Type", "")
        self.seen.append(
            (request.method, request.path, request.query_string, content_type, decoded)
        )
        if request.query.get("watch") == "true":
            return await self._watch(request)
        if request.path.endswith("/missing"):
            return web.json_response(
                {"kind": "Status", "reason": "NotFound", "code": 404}, status=404
            )
        items = {"items": [], "metadata": {"resourceVersion": "7"}}
        return web.json_response(items if request.method == "GET" else {"metadata": {"name": "a"}})

    async def _watch(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        event = {
            "type": "ADDED",
            "object": {"metadata": {"name": "a\u2028b", "resourceVersion": "8"}},
        }
        line = json.dumps(event, ensure_ascii=False).encode()
        await response.write(line[:10])  # an event split across chunks
        await response.write(line[10:] + b"\n")
        await response.write_eof()
        return response


def serve(recorder: Recorder, body: Callable[[str], Awaitable[None]]) -> None:
    async def main() -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", recorder.handle)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        try:
            await body(f"http://127.0.0.1:{port}")
        finally:
            await runner.cleanup()

    asyncio.run(main())


async def every_call(client: HttpClient) -> list[str]:
    await client.create(PODS, {"metadata": {"name": "a", "namespace": "ns"}, "n": 1.5, "u": "é"})
    await client.patch(PODS, name="a", namespace="ns", patch={"status": {"phase": "Running"}})
    await client.patch(
        PODS,
        name="a",
        namespace="ns",
        patch={"metadata": {"labels": {"x": "y"}}},
        patch_type="apply",
        field_manager="trainop",
        force=True,
    )
    await client.patch(PODS, name="a", namespace="ns", patch=[{"op": "remove"}], patch_type="json")
    await client.list(PODS, namespace="ns", label_selector="a=b,c in (d, e),!f", limit=5)
    await client.replace(PODS, {"metadata": {"name": "a", "namespace": "ns"}}, subresource="status")
    await client.delete(PODS, name="a", namespace="ns", preconditions_uid="u-1")
    with pytest.raises(errors.NotFoundError):
        await client.get(PODS, name="missing", namespace="ns")
    return [str(event.obj["metadata"]["name"]) async for event in client.watch(PODS)]


def test_both_transports_send_the_same_requests() -> None:
    by_transport: dict[str, list[Recorded]] = {}

    async def body(url: str) -> None:
        for name, transport in (
            ("httpx2", httpx2.AsyncClient(base_url=url)),
            ("aiohttp", AiohttpTransport(url)),
        ):
            recorder.seen.clear()
            client = HttpClient(transport)
            assert await every_call(client) == ["a\u2028b"]
            await client.close()
            by_transport[name] = list(recorder.seen)

    recorder = Recorder()
    serve(recorder, body)
    assert len(by_transport["aiohttp"]) == 9
    assert by_transport["aiohttp"] == by_transport["httpx2"]
    methods = [seen[0] for seen in by_transport["aiohttp"]]
    assert methods == ["POST", "PATCH", "PATCH", "PATCH", "GET", "PUT", "DELETE", "GET", "GET"]
    apply = by_transport["aiohttp"][2]
    assert apply[2] == "fieldManager=trainop&force=true"
    assert apply[3] == "application/apply-patch+yaml"


def test_a_401_renews_the_token_from_its_file_and_retries_once(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("old\n")
    recorder = Recorder(token="new")

    async def body(url: str) -> None:
        client = HttpClient(AiohttpTransport(url, auth=BearerTokenFileAuth(str(token))))
        with pytest.raises(errors.ApiError):
            await client.get(PODS, name="a", namespace="ns")  # old token, renewed to old again
        token.write_text("new\n")  # the kubelet rotated the token
        await client.get(PODS, name="a", namespace="ns")
        await client.get(PODS, name="a", namespace="ns")
        await client.close()

    serve(recorder, body)
    assert (
        recorder.authorizations == ["Bearer old", "Bearer old", "Bearer old"] + ["Bearer new"] * 2
    )
    assert len(recorder.seen) == 2


def test_an_unreachable_server_is_one_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    async def main() -> None:
        client = HttpClient(AiohttpTransport(f"http://127.0.0.1:{port}"))
        with pytest.raises(errors.UnreachableError, match="get pods"):
            await client.get(PODS, name="x", namespace="default")
        with pytest.raises(errors.UnreachableError, match="watch pods"):
            async for _ in client.watch(PODS):
                pass
        await client.close()

    asyncio.run(main())


def test_a_client_used_from_a_second_event_loop_opens_a_session_there() -> None:
    recorder = Recorder()

    async def body(url: str) -> None:
        client = HttpClient(AiohttpTransport(url))
        await client.get(PODS, name="a", namespace="ns")
        done = asyncio.Event()

        def in_another_loop() -> None:
            asyncio.run(client.get(PODS, name="b", namespace="ns"))
            done.set()

        await asyncio.to_thread(in_another_loop)
        assert done.is_set()
        await client.get(PODS, name="c", namespace="ns")
        await client.close()

    serve(recorder, body)
    assert [seen[1] for seen in recorder.seen] == [
        "/api/v1/namespaces/ns/pods/a",
        "/api/v1/namespaces/ns/pods/b",
        "/api/v1/namespaces/ns/pods/c",
    ]
