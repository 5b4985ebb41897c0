"""Transports under ``HttpClient``: how the bytes of one request reach the API server and back.

``HttpClient`` builds every request itself (method, path, query, headers, JSON body) and hands
the bytes to a ``Transport``; the transport only moves them. Two exist:

- ``AiohttpTransport``, what ``HttpClient.from_kubeconfig`` uses: aiohttp's client (already a
  dependency for the servers), about 0.25 ms of CPU per request where httpx2 + httpcore2 spend
  1.2 to 1.5 ms (measured on this machine: 4,000 POSTs of a pod, 4 concurrent tasks, keep-alive),
  which made httpx most of the operator's CPU (docs/benchmarks.md, Controller). Connections are
  kept alive and reused; the session is made on first use, inside the running event loop; a
  proxy from the environment is looked up once. Without a proxy, requests and streams
  (watches, logs) skip aiohttp's request path for ``kube.http1`` (the same request bytes,
  ~0.1 ms of CPU per GET instead of ~0.2 on the controller benchmark's server, TLS included);
  requests through a proxy stay on aiohttp.
  TLS and credentials come from lightkube's reading of the kubeconfig: its ``SSLContext`` (CA,
  client certificate) and its ``httpx2.Auth``, whose flow is asked once for the
  ``Authorization`` header and again after a 401 (a rotated token file, an exec plugin).
- ``HttpxTransport``, over an injected ``httpx2.AsyncClient`` (tests inject mock transports).

``AiohttpTransport`` encodes the query with ``urllib.parse.urlencode``, as httpx2 encodes
``params``, so both transports send the same request line. Transport failures (refused or dropped
connections, timeouts) are raised as ``TransportError`` for ``HttpClient`` to map.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlencode

import aiohttp
import httpx2
from aiohttp.helpers import get_env_proxy_for_url
from yarl import URL

from trainop.kube import http1
from trainop.kube.http1 import Http1Error, Pool

_TIMEOUT_S = 30.0  # connect and read, as the httpx2 client lightkube configures (30 s)
_UNAUTHORIZED = 401


class TransportError(Exception):
    """No answer: the connection failed, dropped or timed out."""


@dataclass(frozen=True, slots=True)
class Answer:
    """A complete answer: its status code and body."""

    status: int
    body: bytes


class Stream(Protocol):
    """A streamed answer (watch, logs): its status, then its body in chunks."""

    status: int

    async def read(self) -> bytes: ...

    def chunks(self) -> AsyncIterator[bytes]: ...

    async def close(self) -> None: ...


class Transport(Protocol):
    """Moves one request's bytes; see the module docstring."""

    host: str

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, str] | None,
        headers: dict[str, str],
        body: bytes | None,
    ) -> Answer: ...

    async def stream(self, path: str, params: dict[str, str]) -> Stream: ...

    async def close(self) -> None: ...


class _HttpxStream:
    def __init__(self, response: httpx2.Response) -> None:
        self._response = response
        self.status = response.status_code

    async def read(self) -> bytes:
        try:
            return await self._response.aread()
        except httpx2.TransportError as exc:
            raise TransportError(str(exc)) from exc

    async def chunks(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._response.aiter_bytes():
                yield chunk
        except httpx2.TransportError as exc:
            raise TransportError(str(exc)) from exc

    async def close(self) -> None:
        await self._response.aclose()


class HttpxTransport:
    """A ``Transport`` over an ``httpx2.AsyncClient`` (its base URL, TLS and auth)."""

    def __init__(self, http: httpx2.AsyncClient) -> None:
        self._http = http
        self.host = http.base_url.netloc.decode("ascii", errors="replace")

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, str] | None,
        headers: dict[str, str],
        body: bytes | None,
    ) -> Answer:
        try:
            response = await self._http.request(
                method, path, content=body, params=params, headers=headers
            )
        except httpx2.TransportError as exc:
            raise TransportError(str(exc)) from exc
        return Answer(response.status_code, response.content)

    async def stream(self, path: str, params: dict[str, str]) -> Stream:
        timeout = httpx2.Timeout(_TIMEOUT_S, read=None)
        request = self._http.build_request("GET", path, params=params, timeout=timeout)
        try:
            return _HttpxStream(await self._http.send(request, stream=True))
        except httpx2.TransportError as exc:
            raise TransportError(str(exc)) from exc

    async def close(self) -> None:
        await self._http.aclose()


class _AiohttpStream:
    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self._response = response
        self.status = response.status

    async def read(self) -> bytes:
        try:
            return await self._response.read()
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise TransportError(_describe(exc)) from exc

    async def chunks(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._response.content.iter_any():
                yield chunk
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise TransportError(_describe(exc)) from exc

    async def close(self) -> None:
        self._response.close()  # a stream read part-way: its connection is not reused


class _LeanStream:
    """A ``kube.http1`` stream with its failures as ``TransportError``."""

    def __init__(self, stream: http1.Stream) -> None:
        self._stream = stream
        self.status = stream.status

    async def read(self) -> bytes:
        try:
            return await self._stream.read()
        except Http1Error as exc:
            raise TransportError(_describe(exc)) from exc

    async def chunks(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._stream.chunks():
                yield chunk
        except Http1Error as exc:
            raise TransportError(_describe(exc)) from exc

    async def close(self) -> None:
        self._stream.close()


class AuthHeader:
    """The ``Authorization`` header an ``httpx2.Auth`` flow gives, asked once, renewed on 401."""

    def __init__(self, auth: httpx2.Auth | None) -> None:
        self._auth = auth
        self._value: str | None = None
        self._asked = auth is None

    async def headers(self) -> dict[str, str]:
        if not self._asked:
            self._value = await self._ask(None)
            self._asked = True
        return {"Authorization": self._value} if self._value else {}

    async def renew(self) -> bool:
        """After a 401: a new header from the flow; False when it has none to offer."""
        if self._auth is None:
            return False
        value = await self._ask(_UNAUTHORIZED)
        if value is None:
            return False
        self._value = value
        return True

    async def _ask(self, status: int | None) -> str | None:
        assert self._auth is not None
        flow = self._auth.async_auth_flow(httpx2.Request("GET", "https://kubernetes.invalid/"))
        try:
            sent = await flow.__anext__()
            if status is not None:
                sent = await flow.asend(httpx2.Response(status, request=sent))
        except StopAsyncIteration:
            return None
        finally:
            await flow.aclose()
        return sent.headers.get("Authorization")


class AiohttpTransport:
    """A ``Transport`` over aiohttp's client; see the module docstring."""

    def __init__(
        self,
        base_url: str,
        *,
        ssl_context: ssl.SSLContext | None = None,
        auth: httpx2.Auth | None = None,
        trust_env: bool = True,
    ) -> None:
        self._base = base_url.rstrip("/")
        self.host = URL(self._base).raw_authority
        self._ssl = ssl_context
        self._auth = AuthHeader(auth)
        self._proxy: dict[str, Any] = _env_proxy(self._base) if trust_env else {}
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pool: Pool | None = None  # plain requests without a proxy (``kube.http1``)
        self._pool_loop: asyncio.AbstractEventLoop | None = None
        self._timeout = aiohttp.ClientTimeout(total=None, connect=_TIMEOUT_S, sock_read=_TIMEOUT_S)
        self._stream_timeout = aiohttp.ClientTimeout(total=None, connect=_TIMEOUT_S)

    def _url(self, path: str, params: dict[str, str] | None) -> URL:
        query = f"?{urlencode(params)}" if params else ""
        return URL(f"{self._base}{path}{query}", encoded=True)

    def _client(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        if self._session is None or self._loop is not loop:
            # A session belongs to one event loop; a client used from a later one (a second
            # ``asyncio.run``) gets a new session there, as httpx2 would open new connections.
            if self._session is not None:
                _abandon(self._session)
            self._loop = loop
            connector = aiohttp.TCPConnector(ssl=self._ssl if self._ssl is not None else True)
            self._session = aiohttp.ClientSession(
                connector=connector,
                timeout=self._timeout,
                cookie_jar=aiohttp.DummyCookieJar(),  # the API answers no cookies to keep
            )
        return self._session

    def _lean(self) -> Pool:
        """This loop's pool of ``kube.http1`` connections (a later loop gets its own)."""
        loop = asyncio.get_running_loop()
        if self._pool is None or self._pool_loop is not loop:
            if self._pool is not None and self._pool_loop is not None:
                _drop(self._pool, self._pool_loop)
            self._pool, self._pool_loop = Pool(self._base, self._ssl or True), loop
        return self._pool

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, str] | None,
        headers: dict[str, str],
        body: bytes | None,
    ) -> Answer:
        send = self._send if self._proxy else self._send_lean
        answer = await send(method, path, params, headers, body)
        if answer.status == _UNAUTHORIZED and await self._auth.renew():
            answer = await send(method, path, params, headers, body)
        return answer

    async def _send_lean(
        self,
        method: str,
        path: str,
        params: dict[str, str] | None,
        headers: dict[str, str],
        body: bytes | None,
    ) -> Answer:
        target = f"{path}?{urlencode(params)}" if params else path
        all_headers = {**headers, **await self._auth.headers()}
        try:
            status, content = await self._lean().request(method, target, all_headers, body)
        except Http1Error as exc:
            raise TransportError(_describe(exc)) from exc
        return Answer(status, content)

    async def _send(
        self,
        method: str,
        path: str,
        params: dict[str, str] | None,
        headers: dict[str, str],
        body: bytes | None,
    ) -> Answer:
        url = self._url(path, params)
        all_headers = {**headers, **await self._auth.headers()}
        try:
            async with self._client().request(
                method, url, data=body, headers=all_headers, **self._proxy
            ) as response:
                return Answer(response.status, await response.read())
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise TransportError(_describe(exc)) from exc

    async def stream(self, path: str, params: dict[str, str]) -> Stream:
        if not self._proxy:
            return await self._stream_lean(path, params)
        url = self._url(path, params)
        for attempt in range(2):
            try:
                response = await self._client().get(
                    url,
                    headers=await self._auth.headers(),
                    timeout=self._stream_timeout,
                    **self._proxy,
                )
            except (aiohttp.ClientError, TimeoutError) as exc:
                raise TransportError(_describe(exc)) from exc
            if response.status != _UNAUTHORIZED or attempt or not await self._auth.renew():
                return _AiohttpStream(response)
            response.close()
        raise AssertionError("unreachable")  # pragma: no cover

    async def _stream_lean(self, path: str, params: dict[str, str]) -> Stream:
        target = f"{path}?{urlencode(params)}" if params else path
        for attempt in range(2):
            try:
                stream = await self._lean().stream(target, await self._auth.headers())
            except Http1Error as exc:
                raise TransportError(_describe(exc)) from exc
            if stream.status != _UNAUTHORIZED or attempt or not await self._auth.renew():
                return _LeanStream(stream)
            stream.close()
        raise AssertionError("unreachable")  # pragma: no cover

    async def close(self) -> None:
        if self._session is not None and self._loop is asyncio.get_running_loop():
            await self._session.close()
        self._session = None
        if self._pool is not None and self._pool_loop is asyncio.get_running_loop():
            self._pool.close()
        self._pool = None


def _abandon(session: aiohttp.ClientSession) -> None:
    """Mark a session of another (usually finished) loop closed, dropping its connections
    without that loop, so it is not reported as unclosed."""
    with contextlib.suppress(Exception):
        session.connector._close()  # type: ignore[union-attr]


def _drop(pool: Pool, loop: asyncio.AbstractEventLoop) -> None:
    """Close a pool of another loop from that loop (when it still runs), never from this one."""
    with contextlib.suppress(RuntimeError):  # that loop is closed: left to the collector
        loop.call_soon_threadsafe(pool.close)


def _env_proxy(base_url: str) -> dict[str, Any]:
    """The proxy the environment names for the server (``HTTPS_PROXY``, ``NO_PROXY``...), as
    httpx2 honours them: looked up once here, not per request (aiohttp's ``trust_env`` looks it
    up, and ``.netrc``, in a thread for every request: ~0.3 ms each)."""
    try:
        proxy, proxy_auth = get_env_proxy_for_url(URL(base_url))
    except LookupError:
        return {}
    return {"proxy": proxy, "proxy_auth": proxy_auth}


def _describe(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__
