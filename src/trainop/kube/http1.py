"""A lean HTTP/1.1 client for API requests and streams: one protocol object per connection.

Why: every request the operator sends went through aiohttp's ``ClientSession._request`` (a
request object, a headers multidict, tracing, cookies, the connector, a response object and
its stream): about half of the operator's CPU per job (docs/benchmarks.md, Operator CPU). An
API request needs none of that: this client writes the request line and headers as one
``bytes`` (the same method, target, ``Content-Type``, body and the headers aiohttp sends:
``Host``, ``Accept``, ``Accept-Encoding``, ``User-Agent``, ``Content-Length``). Answers are
parsed by httptools (llhttp, the C parser uvicorn and Node.js use: status line, headers,
``Content-Length`` and chunked bodies); what is ours is around it: 1xx answers skipped,
read-to-close bodies ended at the server's close (httptools has no call for that), HEAD answers
ended at their headers, gzip/deflate decoding (the encodings it accepts, as aiohttp does).

Connections are kept alive and reused, last in first out; one idle for ``KEEPALIVE_S`` (15 s,
aiohttp's default) is closed rather than reused, and one the server marked ``Connection:
close`` is not reused. A request on a reused connection that the server closed before any
byte of the answer is sent again on a new one when its method is idempotent, as aiohttp does
(RFC 9112 9.3.1); otherwise it is a failure. Reading stops after ``READ_TIMEOUT_S`` without
data (aiohttp's ``sock_read``); connecting after ``CONNECT_TIMEOUT_S``. A stream (``Pool.stream``:
a watch, a log) gets a connection of its own, closed with it, and no read timeout; its body is
decoded as it arrives. Every failure is an ``Http1Error``. Pools belong to one event loop
(``Pool`` is made per loop by its owner).
"""

from __future__ import annotations

import asyncio
import ssl
import time
import zlib
from collections.abc import AsyncIterator, Mapping
from typing import cast

from aiohttp.http import SERVER_SOFTWARE
from httptools import HttpParserError, HttpParserUpgrade, HttpResponseParser
from yarl import URL

KEEPALIVE_S = 15.0
READ_TIMEOUT_S = 30.0
CONNECT_TIMEOUT_S = 30.0
MAX_HEAD = 64 * 1024  # status line and headers of one answer
IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"})
_READ = frozenset({b"content-length", b"transfer-encoding", b"content-encoding"})
_WITH_BODY = frozenset({"POST", "PUT", "PATCH"})  # Content-Length: 0 even without a body


class Http1Error(Exception):
    """No (complete, parseable) answer: connect, send, read or timeout failure."""


class _ClosedError(Http1Error):
    """The server closed the connection; ``before_answer`` when no byte of the answer came."""

    def __init__(self, message: str, *, before_answer: bool) -> None:
        super().__init__(message)
        self.before_answer = before_answer


class Connection(asyncio.Protocol):
    """One connection: feeds what arrives to its answer parser (httptools, llhttp's C
    parser) and wakes the one request reading it. The parser's callbacks below record the
    answer being read: its status, the headers read here, body pieces and its end."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._transport: asyncio.Transport | None = None
        self._parser = HttpResponseParser(self)
        self._waiter: asyncio.Future[None] | None = None
        self._closed = False
        self._error: BaseException | None = None
        self._last_data = 0.0
        self._busy = False  # a request is waiting for its answer
        self._stray = False  # bytes came while no request waited: never reused
        self._timer: asyncio.TimerHandle | None = None
        self.idle_since = 0.0
        self.reused = False
        self._new_answer(head_only=False)

    def _new_answer(self, *, head_only: bool) -> None:
        self._head_only = head_only
        self._started = False  # a byte of this answer came
        self._head_bytes = 0  # bytes received while the head is incomplete
        self._header_bytes = 0  # the parsed headers' names and values
        self._status = 0
        self._headers: dict[str, str] = {}
        self._body: list[bytes] = []
        self._head_done = False
        self._done = False
        self._keep = False

    # The parser's callbacks (1xx answers are parsed as messages of their own: skipped).

    def on_message_begin(self) -> None:
        if self._done:  # bytes past the answer: this connection is not reused
            self._stray = True
        self._headers = {}

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_bytes += len(name) + len(value)
        key = name.lower()
        if key in _READ:  # only the headers read below (an API answer has ~6 others)
            text, now = key.decode(), value.decode("latin-1").strip()
            old = self._headers.get(text)
            self._headers[text] = now if old is None else f"{old}, {now}"

    def on_headers_complete(self) -> None:
        status = self._parser.get_status_code()
        if 100 <= status < 200:
            return
        if self._header_bytes > MAX_HEAD:
            return  # not done: data_received fails the answer
        self._status = status
        self._head_done = True
        if self._head_only:  # a HEAD answer's Content-Length announces no body
            self._done = True
            self._keep = self._parser.should_keep_alive()

    def on_body(self, body: bytes) -> None:
        if body:
            self._body.append(body)

    def on_message_complete(self) -> None:
        if self._head_done:
            self._done = True
            self._keep = self._parser.should_keep_alive()

    # asyncio's protocol callbacks.

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement asyncio's interface without subclassing it.
        self._transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self._last_data = self._loop.time()
        self._started = True
        if not self._busy:
            self._stray = True
        try:
            self._parser.feed_data(data)
        except (HttpParserError, HttpParserUpgrade) as exc:
            self._fail(Http1Error(f"cannot parse the answer: {exc}"))
            return
        if not self._head_done:
            self._head_bytes += len(data)
            if self._head_bytes > MAX_HEAD or self._header_bytes > MAX_HEAD:
                self._fail(Http1Error("answer headers over 64 KiB"))
                return
        self._wake()

    def eof_received(self) -> bool:
        self._at_close()
        return False  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self._error = self._error or exc  # a read timeout closed it first: keep that
        self._at_close()

    def _at_close(self) -> None:
        """The server closed: an answer with neither length nor chunks ends here (httptools
        ends such a message only at a call it does not expose: llhttp_finish)."""
        self._closed = True
        if self._head_done and not self._done and self._error is None:
            length = "content-length" in self._headers
            if not length and "chunked" not in self._headers.get("transfer-encoding", "").lower():
                self._done = True
                self._keep = False
        self._wake()

    def _fail(self, error: Exception) -> None:
        self._error = error
        self.close()
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    @property
    def usable(self) -> bool:
        """Open, with nothing unread (an idle connection that got bytes is broken)."""
        return not self._closed and not self._stray and self._transport is not None

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    async def exchange(self, request: bytes, *, head_only: bool) -> tuple[int, bytes, bool]:
        """Send ``request``; its answer's status, decoded body and whether to keep this
        connection. Raises ``Http1Error``."""
        assert self._transport is not None
        self._new_answer(head_only=head_only)
        self._transport.write(request)
        self._last_data = self._loop.time()
        self._busy = True
        if self._timer is None:  # one timer while busy, re-armed every 30 s, not per request
            self._timer = self._loop.call_later(READ_TIMEOUT_S, self._check_timeout)
        try:
            while not self._done:
                await self._more()
        finally:
            self._busy = False
        if head_only:  # the parser may wait for the announced body: a fresh one
            self._parser = HttpResponseParser(self)
        body = self._body[0] if len(self._body) == 1 else b"".join(self._body)
        encoding = self._headers.get("content-encoding", "")
        return self._status, _decoded(body, encoding), self._keep

    def _check_timeout(self) -> None:
        self._timer = None
        if not self._busy:
            return  # idle in the pool: the keep-alive limit applies, not this one
        idle = self._loop.time() - self._last_data
        if idle < READ_TIMEOUT_S:
            self._timer = self._loop.call_later(READ_TIMEOUT_S - idle, self._check_timeout)
            return
        self._fail(TimeoutError(f"no data for {READ_TIMEOUT_S:.0f} s"))

    async def _more(self) -> None:
        error = self._error
        if isinstance(error, TimeoutError):
            raise Http1Error(f"timed out reading the answer: {error}")
        if isinstance(error, Http1Error):
            raise error
        if self._closed:
            why = f": {error}" if error else ""
            before = not self._started
            raise _ClosedError(f"connection closed by the server{why}", before_answer=before)
        self._waiter = self._loop.create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    async def open_stream(self, request: bytes) -> tuple[int, dict[str, str]]:
        """Send ``request``; the status and headers of its answer, whose body ``pieces``
        then reads as it comes (a watch: no read timeout)."""
        assert self._transport is not None
        self._new_answer(head_only=False)
        self._busy = True  # for good: a stream's connection is never reused
        self._transport.write(request)
        while not self._head_done:
            await self._more()
        return self._status, self._headers

    async def pieces(self, headers: Mapping[str, str]) -> AsyncIterator[bytes]:
        """A streamed answer's body, decoded, in the pieces it arrives in."""
        decoder = _decoder(headers.get("content-encoding", "").strip().lower())
        while True:
            if self._body:
                piece = self._body[0] if len(self._body) == 1 else b"".join(self._body)
                self._body.clear()
                yield decoder.decompress(piece) if decoder is not None else piece
            elif self._done:
                break
            else:
                await self._more()
        if decoder is not None and (rest := decoder.flush()):
            yield rest


def _decoder(encoding: str) -> zlib._Decompress | None:
    """An incremental decoder for a streamed answer's encoding (None: as it is)."""
    if encoding in ("", "identity"):
        return None
    if encoding in ("gzip", "x-gzip"):
        return zlib.decompressobj(16 + zlib.MAX_WBITS)
    if encoding == "deflate":
        return zlib.decompressobj()
    raise Http1Error(f"an answer in an encoding not asked for: {encoding}")


def _decoded(body: bytes, encoding: str) -> bytes:
    encoding = encoding.strip().lower()
    if not body or encoding in ("", "identity"):
        return body
    try:
        if encoding in ("gzip", "x-gzip"):
            return zlib.decompress(body, 16 + zlib.MAX_WBITS)
        if encoding == "deflate":  # zlib-wrapped as the RFC says; raw deflate as some send
            try:
                return zlib.decompress(body)
            except zlib.error:
                return zlib.decompress(body, -zlib.MAX_WBITS)
    except zlib.error as exc:
        raise Http1Error(f"cannot decode the {encoding} answer: {exc}") from exc
    raise Http1Error(f"an answer in an encoding not asked for: {encoding}")


class Pool:
    """Keep-alive connections to one server, for one event loop."""

    def __init__(self, base_url: str, ssl_context: ssl.SSLContext | bool) -> None:
        url = URL(base_url)
        self._loop = asyncio.get_running_loop()
        self._host = url.raw_host or ""
        self._port = url.port or (443 if url.scheme == "https" else 80)
        self._ssl: ssl.SSLContext | None = None
        if url.scheme == "https":
            self._ssl = ssl_context if isinstance(ssl_context, ssl.SSLContext) else _default()
        self._prefix = url.raw_path.rstrip("/")
        # What aiohttp sends with every request (besides Content-Length and the caller's).
        fixed = f"Host: {url.host_port_subcomponent}\r\nAccept: */*\r\n"
        self._fixed = f"{fixed}Accept-Encoding: gzip, deflate\r\nUser-Agent: {SERVER_SOFTWARE}\r\n"
        self._idle: list[Connection] = []

    async def request(
        self, method: str, target: str, headers: Mapping[str, str], body: bytes | None
    ) -> tuple[int, bytes]:
        """The status and body of one request (``target``: path and query, encoded)."""
        lines = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
        with_length = body is not None or method in _WITH_BODY
        length = f"Content-Length: {len(body or b'')}\r\n" if with_length else ""
        head = f"{method} {self._prefix}{target} HTTP/1.1\r\n{self._fixed}{lines}{length}\r\n"
        data = head.encode("latin-1") + (body or b"")
        while True:
            conn = await self._acquire()
            try:
                status, answer, keep = await conn.exchange(data, head_only=method == "HEAD")
            except _ClosedError as exc:
                conn.close()
                if conn.reused and exc.before_answer and method in IDEMPOTENT:
                    continue  # a stale keep-alive connection: once more on a fresh one
                raise
            except BaseException:
                conn.close()  # an answer read part-way (or cancelled): never reused
                raise
            self._release(conn, keep)
            return status, answer

    async def stream(self, target: str, headers: Mapping[str, str]) -> Stream:
        """A GET whose answer is read as it arrives, on a connection of its own (closed
        with the stream, never reused: a watch lasts minutes)."""
        lines = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
        head = f"GET {self._prefix}{target} HTTP/1.1\r\n{self._fixed}{lines}\r\n"
        conn = await self._connect()
        try:
            status, answer_headers = await conn.open_stream(head.encode("latin-1"))
        except BaseException:
            conn.close()
            raise
        return Stream(conn, status, answer_headers)

    async def _acquire(self) -> Connection:
        now = time.monotonic()
        while self._idle:
            conn = self._idle.pop()
            if conn.usable and now - conn.idle_since < KEEPALIVE_S:
                conn.reused = True
                return conn
            conn.close()
        return await self._connect()

    async def _connect(self) -> Connection:
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT_S):
                _, conn = await self._loop.create_connection(
                    lambda: Connection(self._loop),
                    self._host,
                    self._port,
                    ssl=self._ssl,
                    server_hostname=self._host if self._ssl is not None else None,
                )
        except (OSError, TimeoutError) as exc:  # ssl.SSLError is an OSError
            raise Http1Error(f"cannot connect to {self._host}:{self._port}: {exc}") from exc
        return conn

    def _release(self, conn: Connection, keep: bool) -> None:
        if keep and conn.usable:
            conn.idle_since = time.monotonic()
            self._idle.append(conn)
        else:
            conn.close()

    def close(self) -> None:
        """Close every idle connection (those in use close when their request ends)."""
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


class Stream:
    """A streamed answer (``Pool.stream``): its status, then its body; ``close`` drops the
    connection. Failures are ``Http1Error``s."""

    def __init__(self, conn: Connection, status: int, headers: dict[str, str]) -> None:
        self._conn = conn
        self._headers = headers
        self.status = status

    async def read(self) -> bytes:
        """The whole body (an error answer's Status)."""
        return b"".join([piece async for piece in self.chunks()])

    def chunks(self) -> AsyncIterator[bytes]:
        return self._conn.pieces(self._headers)

    def close(self) -> None:
        self._conn.close()


def _default() -> ssl.SSLContext:
    return ssl.create_default_context()
