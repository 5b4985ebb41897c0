"""Writes whose answers the caller throws away (``kube.client.unread``) are sent unchanged but
not decoded; errors are still decoded and raised; a client without the view is used as it is."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from trainop import errors
from trainop.kube import http
from trainop.kube.client import Obj, unread
from trainop.kube.fake import FakeClient
from trainop.kube.http import HttpClient
from trainop.kube.ratelimit import RateLimitedClient, TokenBucket
from trainop.kube.resources import PODS
from trainop.kube.transport import Answer, Stream

STORED = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a", "resourceVersion": "7"}}


class StubTransport:
    """Records each request and answers with ``status`` and ``body``."""

    host = "stub"

    def __init__(self, status: int = 201, body: bytes = json.dumps(STORED).encode()) -> None:
        self.status, self.body = status, body
        self.sent: list[tuple[str, str, Any, dict[str, str], bytes | None]] = []

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, str] | None,
        headers: dict[str, str],
        body: bytes | None,
    ) -> Answer:
        self.sent.append((method, path, params, headers, body))
        return Answer(self.status, self.body)

    async def stream(self, path: str, params: dict[str, str]) -> Stream:
        raise AssertionError("no streams here")

    async def close(self) -> None:
        return None


@pytest.fixture
def decodes(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """The answers ``kube.http`` decodes."""
    seen: list[bytes] = []
    real = http._json

    def counting(content: bytes) -> Any:
        seen.append(content)
        return real(content)

    monkeypatch.setattr(http, "_json", counting)
    return seen


async def _writes(client: HttpClient) -> list[Obj]:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a", "namespace": "ns"}}
    return [
        await client.create(PODS, pod, namespace="ns"),
        await client.patch(PODS, name="a", namespace="ns", patch={"metadata": {"labels": {}}}),
        await client.patch(
            PODS, name="a", namespace="ns", patch=[{"op": "add"}], patch_type="json"
        ),
        await client.replace(PODS, {**pod, "status": {}}, namespace="ns", subresource="status"),
    ]


def test_unread_writes_send_the_same_requests_and_skip_decoding(decodes: list[bytes]) -> None:
    read_transport, unread_transport = StubTransport(), StubTransport()
    read_answers = asyncio.run(_writes(HttpClient(read_transport)))
    assert read_answers == [STORED] * 4
    assert len(decodes) == 4
    decodes.clear()
    unread_answers = asyncio.run(_writes(HttpClient(unread_transport).unread()))
    assert unread_answers == [{}] * 4
    assert decodes == []
    assert unread_transport.sent == read_transport.sent  # method, path, params, headers, bytes


def test_the_view_still_decodes_reads_and_errors(decodes: list[bytes]) -> None:
    conflict = {"kind": "Status", "code": 409, "reason": "AlreadyExists", "message": "taken"}
    transport = StubTransport(409, json.dumps(conflict).encode())
    view = HttpClient(transport).unread()
    with pytest.raises(errors.AlreadyExistsError, match="taken"):
        asyncio.run(view.create(PODS, {"metadata": {"name": "a"}}, namespace="ns"))
    transport.status, transport.body = 200, json.dumps(STORED).encode()
    assert asyncio.run(view.get(PODS, name="a", namespace="ns")) == STORED
    assert len(decodes) == 2


def test_the_view_is_made_once_and_shares_hooks() -> None:
    seen: list[tuple[str, str]] = []
    client = HttpClient(
        StubTransport(), on_request=lambda verb, plural: seen.append((verb, plural))
    )
    view = client.unread()
    assert view is client.unread()
    assert view.unread() is view
    assert view is not client
    asyncio.run(view.create(PODS, {"metadata": {"name": "a"}}, namespace="ns"))
    assert seen == [("create", "pods")]
    assert asyncio.run(client.create(PODS, {"metadata": {"name": "a"}}, namespace="ns")) == STORED


def test_fake_view_returns_nothing_but_stores_and_raises() -> None:
    async def body() -> None:
        fake = FakeClient()
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}}
        assert await unread(fake).create(PODS, pod, namespace="ns") == {}
        patched = await unread(fake).patch(
            PODS, name="a", namespace="ns", patch={"metadata": {"labels": {"x": "1"}}}
        )
        assert patched == {}
        stored = await fake.get(PODS, name="a", namespace="ns")
        assert stored["metadata"]["labels"] == {"x": "1"}
        assert await unread(fake).replace(PODS, stored, namespace="ns") == {}
        with pytest.raises(errors.AlreadyExistsError):
            await unread(fake).create(PODS, pod, namespace="ns")
        assert (await unread(fake).get(PODS, name="a", namespace="ns"))["metadata"]["name"] == "a"

    asyncio.run(body())


class Wrapper:
    """A client without ``unread`` (as tests' wrappers are)."""

    async def create(self, resource: Any, obj: Obj, *, namespace: str | None = None) -> Obj:
        return obj

    def watch(self, resource: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise AssertionError


def test_a_client_without_the_view_is_used_as_it_is() -> None:
    wrapper = Wrapper()
    assert unread(wrapper) is wrapper  # type: ignore[arg-type,comparison-overlap]


def test_rate_limited_view_takes_from_the_same_bucket(decodes: list[bytes]) -> None:
    bucket = TokenBucket(qps=0.001, burst=5)
    limited = RateLimitedClient(HttpClient(StubTransport()), bucket)
    answer = asyncio.run(unread(limited).create(PODS, {"metadata": {"name": "a"}}, namespace="n"))
    assert answer == {}
    assert decodes == []
    assert bucket._tokens < 5
