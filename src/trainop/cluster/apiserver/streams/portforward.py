"""``pods/portforward``: kubectl's SPDY/3.1 port-forward protocol, tunnelled over WebSocket.

kubectl (1.31 and newer by default) opens port-forward as a WebSocket with the subprotocol
``SPDY/3.1+portforward.k8s.io`` and runs SPDY/3.1 over it: every binary message carries raw
bytes of the SPDY byte stream. For each local connection it opens two SPDY streams with the
headers ``streamType`` (``error`` or ``data``), ``port`` and ``requestID``; the server answers
each ``SYN_STREAM`` with a ``SYN_REPLY``, copies the data stream to and from a TCP connection
to the pod's port, and writes a failure (a refused port) as text on the error stream.

"The pod's port" is PORT at the pod's ``podIP``: a container pod's address on the session's
network (which this machine reaches), or 127.0.0.1 for a pod on this machine's network.
This module speaks the small part of SPDY/3.1 the client uses: SYN_STREAM, SYN_REPLY, DATA
(with FIN), RST_STREAM, PING (echoed), SETTINGS, WINDOW_UPDATE and GOAWAY (ignored). Header
blocks are zlib streams primed with the protocol's fixed dictionary (``DICTIONARY``), one
compression context per direction for the whole connection. Flow-control windows are not
enforced, as kube's SPDY library does not enforce them either. kubectl's fallback, a plain
``SPDY/3.1`` HTTP upgrade, is not served (a ``Status`` says so).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import struct
import zlib
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

from trainop.cluster.apiserver.http import status
from trainop.cluster.apiserver.rest.call import ApiState, Call

PROTOCOL = "SPDY/3.1+portforward.k8s.io"
SPDY_UPGRADE_UNSUPPORTED = (
    "port-forward over a plain SPDY upgrade is not supported in local mode; kubectl 1.31 and "
    "newer tunnel it over WebSocket (SPDY/3.1+portforward.k8s.io) by default"
)

# The SPDY/3 header-compression dictionary (spdy-protocol-draft3 section 2.6.10.1): the
# length-prefixed words, then the tail of status lines, dates and common values.
_WORDS = (
    "options",
    "head",
    "post",
    "put",
    "delete",
    "trace",
    "accept",
    "accept-charset",
    "accept-encoding",
    "accept-language",
    "accept-ranges",
    "age",
    "allow",
    "authorization",
    "cache-control",
    "connection",
    "content-base",
    "content-encoding",
    "content-language",
    "content-length",
    "content-location",
    "content-md5",
    "content-range",
    "content-type",
    "date",
    "etag",
    "expect",
    "expires",
    "from",
    "host",
    "if-match",
    "if-modified-since",
    "if-none-match",
    "if-range",
    "if-unmodified-since",
    "last-modified",
    "location",
    "max-forwards",
    "pragma",
    "proxy-authenticate",
    "proxy-authorization",
    "range",
    "referer",
    "retry-after",
    "server",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "user-agent",
    "vary",
    "via",
    "warning",
    "www-authenticate",
    "method",
    "get",
    "status",
    "200 OK",
    "version",
    "HTTP/1.1",
    "url",
    "public",
    "set-cookie",
    "keep-alive",
    "origin",
)
_TAIL = (
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
    "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request"
    "401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented"
    "503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, "
    "Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg,image/gif,"
    "application/xml,application/xhtml+xml,text/plain,text/javascript,publicprivatemax-age="
    "gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0."
)
DICTIONARY = b"".join(len(w).to_bytes(4, "big") + w.encode() for w in _WORDS) + _TAIL.encode()

SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY = 1, 2, 3, 4, 6, 7
FLAG_FIN = 0x01
_CHUNK = 32 * 1024


def _control(kind: int, flags: int, payload: bytes) -> bytes:
    return struct.pack(">HHI", 0x8000 | 3, kind, (flags << 24) | len(payload)) + payload


def _data(stream_id: int, flags: int, payload: bytes) -> bytes:
    return struct.pack(">II", stream_id & 0x7FFFFFFF, (flags << 24) | len(payload)) + payload


def parse_headers(block: bytes) -> dict[str, str]:
    """A decompressed SPDY/3 header block as a dict (names lowercase, as SPDY sends them)."""
    (count,) = struct.unpack_from(">I", block, 0)
    pos, out = 4, {}
    for _ in range(count):
        (size,) = struct.unpack_from(">I", block, pos)
        name = block[pos + 4 : pos + 4 + size].decode()
        pos += 4 + size
        (size,) = struct.unpack_from(">I", block, pos)
        out[name.lower()] = block[pos + 4 : pos + 4 + size].decode()
        pos += 4 + size
    return out


@dataclass(slots=True)
class _Stream:
    kind: str
    port: int
    request: str
    writer: asyncio.StreamWriter | None = None
    pending: list[bytes] = field(default_factory=list)
    closed_by_client: bool = False


class Tunnel:
    """One port-forward connection: SPDY frames in from the WebSocket, frames out to it."""

    def __init__(self, ws: web.WebSocketResponse, host: str = "127.0.0.1") -> None:
        self._ws = ws
        self._host = host
        self._inflate = zlib.decompressobj(zdict=DICTIONARY)
        self._deflate = zlib.compressobj(zdict=DICTIONARY)
        self._buffer = b""
        self._streams: dict[int, _Stream] = {}
        self._errors: dict[str, int] = {}  # requestID -> error stream id
        self._tasks: set[asyncio.Task[None]] = set()
        self._send_lock = asyncio.Lock()

    async def run(self) -> None:
        """Serve until the client closes the WebSocket or says GOAWAY."""
        try:
            async for msg in self._ws:
                if msg.type != WSMsgType.BINARY:
                    continue
                self._buffer += msg.data
                if not await self._frames():
                    return
        finally:
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            for stream in self._streams.values():
                if stream.writer is not None:
                    stream.writer.close()

    async def _send(self, frame: bytes) -> None:
        async with self._send_lock:
            if not self._ws.closed:
                with contextlib.suppress(ConnectionError, RuntimeError):
                    await self._ws.send_bytes(frame)

    async def _frames(self) -> bool:
        while len(self._buffer) >= 8:
            (length,) = struct.unpack(">I", b"\0" + self._buffer[5:8])
            if len(self._buffer) < 8 + length:
                return True
            head, payload = self._buffer[:8], self._buffer[8 : 8 + length]
            self._buffer = self._buffer[8 + length :]
            flags = head[4]
            if head[0] & 0x80:
                (kind,) = struct.unpack(">H", head[2:4])
                if not await self._on_control(kind, flags, payload, head):
                    return False
            else:
                (stream_id,) = struct.unpack(">I", head[:4])
                await self._on_data(stream_id & 0x7FFFFFFF, flags, payload)
        return True

    async def _on_control(self, kind: int, flags: int, payload: bytes, head: bytes) -> bool:
        if kind == SYN_STREAM:
            (stream_id,) = struct.unpack(">I", payload[:4])
            headers = parse_headers(self._inflate.decompress(payload[10:]))
            await self._open(stream_id & 0x7FFFFFFF, headers, fin=bool(flags & FLAG_FIN))
        elif kind == PING:
            await self._send(head + payload)
        elif kind == RST_STREAM:
            (stream_id,) = struct.unpack(">I", payload[:4])
            stream = self._streams.pop(stream_id & 0x7FFFFFFF, None)
            if stream is not None and stream.writer is not None:
                stream.writer.close()
        elif kind == GOAWAY:
            return False
        return True  # SETTINGS, WINDOW_UPDATE, HEADERS: nothing to do

    async def _reply(self, stream_id: int) -> None:
        block = self._deflate.compress(b"\0\0\0\0") + self._deflate.flush(zlib.Z_SYNC_FLUSH)
        await self._send(_control(SYN_REPLY, 0, struct.pack(">I", stream_id) + block))

    async def _open(self, stream_id: int, headers: dict[str, str], *, fin: bool) -> None:
        try:
            port = int(headers.get("port", ""))
        except ValueError:
            port = 0
        stream = _Stream(
            kind=headers.get("streamtype", ""),
            port=port,
            request=headers.get("requestid", ""),
            closed_by_client=fin,
        )
        self._streams[stream_id] = stream
        await self._reply(stream_id)
        if stream.kind == "error":
            self._errors[stream.request] = stream_id
        elif stream.kind == "data":
            self._spawn(self._connect(stream_id, stream))
        else:
            await self._send(_control(RST_STREAM, 0, struct.pack(">II", stream_id, 1)))

    def _spawn(self, work: Any) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _fail(self, stream: _Stream, message: str) -> None:
        error_id = self._errors.get(stream.request)
        if error_id is not None:
            await self._send(_data(error_id, FLAG_FIN, message.encode()))

    async def _connect(self, stream_id: int, stream: _Stream) -> None:
        try:
            reader, writer = await asyncio.open_connection(self._host, stream.port)
        except OSError as exc:
            await self._fail(
                stream,
                f"error forwarding port {stream.port} to pod: failed to connect to "
                f"{self._host}:{stream.port}: {exc.strerror or exc}",
            )
            await self._send(_data(stream_id, FLAG_FIN, b""))
            return
        stream.writer = writer
        for chunk in stream.pending:
            writer.write(chunk)
        stream.pending.clear()
        if stream.closed_by_client:
            with contextlib.suppress(OSError):
                writer.write_eof()
        try:
            while chunk := await reader.read(_CHUNK):
                await self._send(_data(stream_id, 0, chunk))
        except OSError:
            pass
        await self._send(_data(stream_id, FLAG_FIN, b""))
        error_id = self._errors.pop(stream.request, None)
        if error_id is not None:
            await self._send(_data(error_id, FLAG_FIN, b""))

    async def _on_data(self, stream_id: int, flags: int, payload: bytes) -> None:
        stream = self._streams.get(stream_id)
        if stream is None or stream.kind != "data":
            return  # the client's end of an error stream, or a stream already gone
        if stream.writer is None:
            stream.pending.append(payload)
            stream.closed_by_client = stream.closed_by_client or bool(flags & FLAG_FIN)
            return
        if payload:
            stream.writer.write(payload)
            with contextlib.suppress(ConnectionError):
                await stream.writer.drain()
        if flags & FLAG_FIN:
            with contextlib.suppress(OSError):
                stream.writer.write_eof()


def pod_address(pod: dict[str, Any]) -> str:
    """Where the pod's ports are: its ``podIP`` (a container on a network of its own), else
    this machine's loopback (a process pod, or a status without an address)."""
    given = str((pod.get("status") or {}).get("podIP") or "")
    try:
        address = ipaddress.ip_address(given)
    except ValueError:
        return "127.0.0.1"
    # a container network's (private) or this machine's: a written status cannot make the
    # tunnel reach out to anywhere else
    return str(address) if address.is_private or address.is_loopback else "127.0.0.1"


async def serve(state: ApiState, call: Call) -> web.StreamResponse:
    """``pods/portforward`` (see the module docstring)."""
    stored = state.store.get(call.key())
    if stored is None:
        raise status.not_found(call.rt, call.name or "")
    phase = (stored.obj.get("status") or {}).get("phase")
    if phase != "Running":
        raise status.bad_request(
            f"unable to forward port because pod is not running. Current status={phase}"
        )
    ws = web.WebSocketResponse(protocols=(PROTOCOL,), autoping=True)
    ready = ws.can_prepare(call.request)
    if call.request.headers.get("Upgrade", "").lower() != "websocket" or not ready.ok:
        raise status.bad_request(SPDY_UPGRADE_UNSUPPORTED)
    if ready.protocol != PROTOCOL:
        raise status.bad_request(f"a WebSocket with the subprotocol {PROTOCOL} is required")
    await ws.prepare(call.request)
    try:
        await Tunnel(ws, pod_address(stored.obj)).run()
    finally:
        await ws.close()
    return ws
