"""``kube.http1``: the lean client's requests and its reading of every answer form.

A raw asyncio server on 127.0.0.1 records each request's bytes and answers with canned bytes,
so the answers can take forms an API server may send (chunked, gzip, read-to-close, 1xx, a
closed keep-alive connection) and the requests can be compared byte for byte with aiohttp's.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import zlib
from collections.abc import Awaitable, Callable
from pathlib import Path

import httptools
import pytest
from lightkube.config.client_adapter import BearerTokenFileAuth

from tests.unit.kube.test_transport import Recorder
from tests.unit.kube.test_transport import serve as serve_app
from trainop import errors
from trainop.kube import http1
from trainop.kube.http import HttpClient
from trainop.kube.resources import PODS
from trainop.kube.transport import AiohttpTransport

Answer = Callable[[bytes], bytes | None]  # a request's bytes -> answer bytes (None: close)


def ok(body: bytes, *headers: str) -> bytes:
    head = "".join(f"{h}\r\n" for h in headers)
    return f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n{head}\r\n".encode() + body


class RawServer:
    """Reads whole requests (head + Content-Length body), answers each with ``answer``."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.requests: list[bytes] = []
        self.connections = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                request = head + await reader.readexactly(length)
                self.requests.append(request)
                answer = self.answer(request)
                if answer is None:
                    break
                writer.write(answer)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()


def serve(answer: Answer, body: Callable[[str, RawServer], Awaitable[None]]) -> RawServer:
    server = RawServer(answer)

    async def main() -> None:
        listener = await asyncio.start_server(server.handle, "127.0.0.1", 0)
        port = listener.sockets[0].getsockname()[1]
        async with listener:
            await body(f"http://127.0.0.1:{port}", server)

    asyncio.run(main())
    return server


def test_requests_are_byte_for_byte_aiohttps_but_for_header_order() -> None:
    async def body(url: str, server: RawServer) -> None:
        transport = AiohttpTransport(url)
        for send in (transport._send, transport._send_lean):
            await send("PATCH", "/api/v1/pods/a", {"fieldManager": "x y", "force": "true"},
                       {"Content-Type": "application/apply-patch+yaml"}, b'{"a": 1}')  # fmt: skip
            await send("GET", "/api/v1/pods", None, {"Content-Type": "application/json"}, None)
            await send("POST", "/api/v1/pods", None, {"Content-Type": "application/json"}, None)
        await transport.close()

    server = serve(lambda request: ok(b"{}"), body)

    def parts(request: bytes) -> tuple[bytes, list[bytes], bytes]:
        head, _, content = request.partition(b"\r\n\r\n")
        first, *headers = head.split(b"\r\n")
        return first, sorted(headers), content

    assert len(server.requests) == 6
    via_aiohttp, lean = server.requests[:3], server.requests[3:]
    assert [parts(r) for r in lean] == [parts(r) for r in via_aiohttp]
    assert lean[0].startswith(b"PATCH /api/v1/pods/a?fieldManager=x+y&force=true HTTP/1.1\r\n")
    assert b"Content-Length: 0\r\n" in lean[2]


@pytest.mark.parametrize(
    "answer",
    [
        ok(b'{"kind": "Pod"}'),
        ok(gzip.compress(b'{"kind": "Pod"}'), "Content-Encoding: gzip"),
        ok(zlib.compress(b'{"kind": "Pod"}'), "Content-Encoding: deflate"),
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b'5;ext=1\r\n{"kin\r\nA\r\nd": "Pod"}\r\n0\r\nX-Trailer: 1\r\n\r\n',
        b"HTTP/1.1 100 Continue\r\n\r\n" + ok(b'{"kind": "Pod"}'),
    ],
    ids=["length", "gzip", "deflate", "chunked", "continue"],
)
def test_answer_forms_decode_and_keep_the_connection(answer: bytes) -> None:
    async def body(url: str, server: RawServer) -> None:
        client = HttpClient(AiohttpTransport(url))
        for _ in range(3):
            assert await client.get(PODS, name="a", namespace="ns") == {"kind": "Pod"}
        await client.close()

    server = serve(lambda request: answer, body)
    assert len(server.requests) == 3
    assert server.connections == 1


def test_an_answer_read_to_close_is_read_whole_and_not_reused() -> None:
    seen: list[bytes] = []

    async def once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(await reader.readuntil(b"\r\n\r\n"))
        writer.write(b'HTTP/1.1 200 OK\r\n\r\n{"kind": "Pod"}')  # no length: ends at close
        writer.close()

    async def main() -> None:
        listener = await asyncio.start_server(once, "127.0.0.1", 0)
        port = listener.sockets[0].getsockname()[1]
        async with listener:
            client = HttpClient(AiohttpTransport(f"http://127.0.0.1:{port}"))
            for _ in range(2):
                assert await client.get(PODS, name="a", namespace="ns") == {"kind": "Pod"}
            await client.close()

    asyncio.run(main())
    assert len(seen) == 2  # a connection each: the first was not reused


def test_connection_close_is_honoured() -> None:
    async def body(url: str, server: RawServer) -> None:
        client = HttpClient(AiohttpTransport(url))
        for _ in range(3):
            await client.get(PODS, name="a", namespace="ns")
        await client.close()

    server = serve(lambda request: ok(b"{}", "Connection: close"), body)
    assert server.connections == 3


def stale_after_first(methods: list[str]) -> Answer:
    """Answers the first request, then closes the connection at the next one (a server that
    dropped an idle keep-alive connection); later connections are answered normally."""
    answered: list[bytes] = []

    def answer(request: bytes) -> bytes | None:
        methods.append(request.split(b" ")[0].decode())
        answered.append(request)
        return None if len(answered) == 2 else ok(b"{}")

    return answer


def test_a_stale_connection_is_retried_for_idempotent_methods_only() -> None:
    methods: list[str] = []

    async def body(url: str, server: RawServer) -> None:
        client = HttpClient(AiohttpTransport(url))
        await client.get(PODS, name="a", namespace="ns")
        await client.get(PODS, name="a", namespace="ns")  # stale: sent again on a new one
        await client.close()

    server = serve(stale_after_first(methods), body)
    assert methods == ["GET", "GET", "GET"]
    assert server.connections == 2

    methods.clear()

    async def posting(url: str, server: RawServer) -> None:
        client = HttpClient(AiohttpTransport(url))
        await client.create(PODS, {"metadata": {"name": "a", "namespace": "ns"}})
        with pytest.raises(errors.UnreachableError, match="create pods: connection closed"):
            await client.create(PODS, {"metadata": {"name": "b", "namespace": "ns"}})
        await client.close()

    serve(stale_after_first(methods), posting)
    assert methods == ["POST", "POST"]


def test_silence_past_the_read_timeout_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http1, "READ_TIMEOUT_S", 0.05)

    async def body(url: str, server: RawServer) -> None:
        client = HttpClient(AiohttpTransport(url))
        with pytest.raises(errors.UnreachableError, match="no data for"):
            await client.get(PODS, name="a", namespace="ns")
        await client.close()

    serve(lambda request: b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{", body)


@pytest.mark.parametrize(
    "answer",
    [b"SSH-2.0-OpenSSH\r\n\r\n", b"HTTP/1.1 2x0 OK\r\n\r\n", ok(b"x", "Content-Encoding: br")],
    ids=["not-http", "bad-status", "unasked-encoding"],
)
def test_a_garbled_answer_is_unreachable(answer: bytes) -> None:
    async def body(url: str, server: RawServer) -> None:
        client = HttpClient(AiohttpTransport(url))
        with pytest.raises(errors.UnreachableError, match="get pods"):
            await client.get(PODS, name="a", namespace="ns")
        await client.close()

    serve(lambda request: answer, body)


def test_status_and_error_bodies_reach_the_client() -> None:
    status = {"kind": "Status", "reason": "AlreadyExists", "code": 409, "message": "exists"}
    text = json.dumps(status).encode()

    async def body(url: str, server: RawServer) -> None:
        client = HttpClient(AiohttpTransport(url))
        with pytest.raises(errors.AlreadyExistsError, match="exists"):
            await client.create(PODS, {"metadata": {"name": "a", "namespace": "ns"}})
        await client.close()

    conflict = f"HTTP/1.1 409 Conflict\r\nContent-Length: {len(text)}\r\n\r\n".encode() + text
    serve(lambda request: conflict, body)


def test_the_read_timeout_never_closes_an_idle_kept_connection(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(http1, "READ_TIMEOUT_S", 0.05)

    async def body(url: str, server: RawServer) -> None:
        client = HttpClient(AiohttpTransport(url))
        await client.get(PODS, name="a", namespace="ns")
        await asyncio.sleep(0.15)  # the first request's timer fires while the connection idles
        await client.get(PODS, name="a", namespace="ns")
        await client.close()

    server = serve(lambda request: ok(b"{}"), body)
    assert server.connections == 1


def _events(*names: str) -> bytes:
    return b"".join(
        json.dumps({"type": "ADDED", "object": {"metadata": {"name": n}}}).encode() + b"\n"
        for n in names
    )


def stream_server(pieces: list[bytes], *, close: bool = True) -> Callable[..., Awaitable[None]]:
    """A handler answering one request with ``pieces`` written one by one."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        for piece in pieces:
            writer.write(piece)
            await writer.drain()
            await asyncio.sleep(0)  # separate segments where the kernel allows
        if close:
            writer.close()

    return handle


async def watched(handle: Callable[..., Awaitable[None]]) -> list[str]:
    listener = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    async with listener:
        client = HttpClient(AiohttpTransport(f"http://127.0.0.1:{port}"))
        try:
            return [str(e.obj["metadata"]["name"]) async for e in client.watch(PODS)]
        finally:
            await client.close()


def _chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def test_a_chunked_watch_stream_yields_every_event_however_split() -> None:
    body = _events("a", "b\u2028c", "d")
    head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    # Chunks cut inside events, and writes cut inside chunk headers.
    wire = head + _chunk(body[:7]) + _chunk(body[7:60]) + _chunk(body[60:]) + b"0\r\n\r\n"
    pieces = [wire[i : i + 13] for i in range(0, len(wire), 13)]
    assert asyncio.run(watched(stream_server(pieces, close=False))) == ["a", "b\u2028c", "d"]


def test_gzip_and_read_to_close_watch_streams() -> None:
    zipped = gzip.compress(_events("a", "b"))
    head = b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n"
    wire = head + _chunk(zipped[:20]) + _chunk(zipped[20:]) + b"0\r\n\r\n"
    assert asyncio.run(watched(stream_server([wire], close=False))) == ["a", "b"]
    to_close = [b"HTTP/1.1 200 OK\r\n\r\n", _events("x"), _events("y")]
    assert asyncio.run(watched(stream_server(to_close))) == ["x", "y"]


def test_a_watch_stream_cut_mid_chunk_is_unreachable() -> None:
    head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    cut = [head + b"40\r\n" + _events("a")[:10]]
    with pytest.raises(errors.UnreachableError, match="watch pods: connection closed"):
        asyncio.run(watched(stream_server(cut)))


def test_a_watch_answered_with_an_error_status_raises_it() -> None:
    status = json.dumps({"kind": "Status", "code": 410, "reason": "Expired", "message": "old"})
    text = status.encode()
    gone = f"HTTP/1.1 410 Gone\r\nContent-Length: {len(text)}\r\n\r\n".encode() + text
    with pytest.raises(errors.GoneError):
        asyncio.run(watched(stream_server([gone])))


def test_a_watch_answered_401_renews_the_token_and_opens_again(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("old\n")
    recorder = Recorder(token="new")

    async def body(url: str) -> None:
        client = HttpClient(AiohttpTransport(url, auth=BearerTokenFileAuth(str(token))))
        await client._transport._auth.headers()  # type: ignore[attr-defined]  # "old" read
        token.write_text("new\n")  # then rotated
        names = [str(e.obj["metadata"]["name"]) async for e in client.watch(PODS)]
        assert names == ["a\u2028b"]
        await client.close()

    serve_app(recorder, body)
    assert recorder.authorizations == ["Bearer old", "Bearer new"]


def test_a_head_answer_ends_at_its_headers_and_the_connection_is_reused() -> None:
    def answer(request: bytes) -> bytes:
        if request.startswith(b"HEAD "):  # the length a GET would have, and no body
            return b"HTTP/1.1 200 OK\r\nContent-Length: 15\r\n\r\n"
        return ok(b'{"kind": "Pod"}')

    async def body(url: str, server: RawServer) -> None:
        pool = http1.Pool(url, False)
        assert await pool.request("HEAD", "/api/v1/pods", {}, None) == (200, b"")
        assert await pool.request("GET", "/api/v1/pods", {}, None) == (200, b'{"kind": "Pod"}')
        assert await pool.request("HEAD", "/api/v1/pods", {}, None) == (200, b"")
        pool.close()

    server = serve(answer, body)
    assert len(server.requests) == 3
    assert server.connections == 1


@pytest.mark.parametrize(
    ("answer", "connections"),
    [
        (b"HTTP/1.1 204 No Content\r\n\r\n", 1),  # no body, kept
        (b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}", 3),  # 1.0: closed unless asked
        (b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\n{}", 1),
        (ok(b"{}") + b"HTTP/1.1 200 OK\r\n", 3),  # bytes past the answer: not reused
    ],
    ids=["204", "http1.0", "http1.0-keep-alive", "stray-bytes"],
)
def test_which_answers_leave_the_connection_reusable(answer: bytes, connections: int) -> None:
    async def body(url: str, server: RawServer) -> None:
        pool = http1.Pool(url, False)
        for _ in range(3):
            status, _ = await pool.request("GET", "/api/v1/pods", {}, None)
            assert status == int(answer[9:12])
        pool.close()

    server = serve(lambda request: answer, body)
    assert server.connections == connections


def test_answer_headers_over_64_kib_are_an_error() -> None:
    huge = b"HTTP/1.1 200 OK\r\n" + b"X-Pad: " + b"p" * (http1.MAX_HEAD + 10) + b"\r\n\r\n"

    async def body(url: str, server: RawServer) -> None:
        pool = http1.Pool(url, False)
        with pytest.raises(http1.Http1Error, match="over 64 KiB"):
            await pool.request("GET", "/api/v1/pods", {}, None)
        pool.close()

    serve(lambda request: huge, body)


def test_a_read_to_close_answer_cut_by_a_parse_error_is_not_completed_at_close() -> None:
    async def once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n{}")  # garbled length
        writer.close()

    async def main() -> None:
        listener = await asyncio.start_server(once, "127.0.0.1", 0)
        port = listener.sockets[0].getsockname()[1]
        async with listener:
            pool = http1.Pool(f"http://127.0.0.1:{port}", False)
            with pytest.raises(http1.Http1Error, match="cannot parse the answer"):
                await pool.request("GET", "/api/v1/pods", {}, None)
            pool.close()

    asyncio.run(main())


def test_httptools_never_ends_a_read_to_close_answer_itself() -> None:
    """Why ``Connection`` ends such an answer at the server's close: the parser completes it
    at no input, not even at ``feed_data(b"")``."""
    ends: list[str] = []

    class Calls:
        def on_message_complete(self) -> None:
            ends.append("complete")

    parser = httptools.HttpResponseParser(Calls())
    parser.feed_data(b'HTTP/1.1 200 OK\r\n\r\n{"kind": "Pod"}')
    parser.feed_data(b"")
    assert ends == []
    parser = httptools.HttpResponseParser(Calls())
    parser.feed_data(ok(b"{}"))  # the same answer with a length ends at its last byte
    assert ends == ["complete"]
