"""Request bodies: read within kube-apiserver's size limit and decoded as strict JSON.

Every body a handler sees comes through here, so a hostile or broken one is a 4xx, never a
500 and never a memory blow-up:

- ``read(request)`` → the body bytes; 413 ``RequestEntityTooLarge`` for more than
  ``MAX_BODY_BYTES`` (3 MiB, kube-apiserver's limit), decided from ``Content-Length`` before
  anything is read, and by a bounded read for a body without one (chunked);
- ``decode(body, what)`` → the JSON value; 400 ``BadRequest`` for malformed JSON, for
  invalid UTF-8, for a lone UTF-16 surrogate (``"\\ud800"``, which no UTF-8 text can carry)
  and for nesting deeper than ``MAX_DEPTH`` (100) arrays or objects.

The checks cost almost nothing for ordinary bodies: the surrogate scan runs only when a
byte-level search finds an escape or an encoded surrogate, and the depth walk only when the
body has more than ``MAX_DEPTH`` opening brackets.
"""

from __future__ import annotations

import json
import re
from typing import Any

from aiohttp import web

from trainop.cluster.apiserver.http import status

MAX_BODY_BYTES = 3 * 1024 * 1024
MAX_DEPTH = 100
_CHUNK = 64 * 1024
# ``\uD800``-``\uDFFF`` escapes, or the UTF-8 encoding of a surrogate (ED A0..BF xx).
_MAYBE_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]|\xed[\xa0-\xbf]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def too_large() -> status.RequestError:
    """413, worded as kube-apiserver words it."""
    return status.RequestError(
        f"Request entity too large: limit is {MAX_BODY_BYTES}",
        status=413,
        reason="RequestEntityTooLarge",
    )


async def read(request: web.Request) -> bytes:
    """The request body, at most ``MAX_BODY_BYTES``; 413 beyond (see the module docstring)."""
    declared = request.content_length
    if declared is not None and declared > MAX_BODY_BYTES:
        raise too_large()
    if not request.can_read_body:
        return b""
    parts: list[bytes] = []
    size = 0
    while True:
        chunk = await request.content.read(_CHUNK)
        if not chunk:
            return b"".join(parts)
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise too_large()
        parts.append(chunk)


def decode(body: bytes, *, what: str = "the request body") -> Any:
    """``body`` as a JSON value; 400 for anything that is not well-formed, bounded JSON."""
    try:
        value = json.loads(body)
    except RecursionError as exc:
        raise _too_deep(what) from exc
    except UnicodeDecodeError as exc:
        raise status.bad_request(f"{what} is not valid UTF-8: {exc.reason}") from exc
    except ValueError as exc:
        raise status.bad_request(f"{what} is not valid JSON: {exc}") from exc
    if body.count(b"{") + body.count(b"[") > MAX_DEPTH and _depth_exceeds(value, MAX_DEPTH):
        raise _too_deep(what)
    if _MAYBE_SURROGATE.search(body):
        check_unicode(value, what=what)
    return value


def check_unicode(value: Any, *, what: str = "the request body") -> None:
    """400 when a string (or key) in a decoded ``value`` holds a lone UTF-16 surrogate, which
    no UTF-8 text can carry (for bodies decoded elsewhere: server-side apply's YAML)."""
    if _has_surrogate(value):
        raise status.bad_request(
            f"{what} holds invalid Unicode: a lone UTF-16 surrogate is not a character"
        )


def _too_deep(what: str) -> status.RequestError:
    return status.bad_request(f"{what} nests deeper than {MAX_DEPTH} levels of arrays or objects")


def _depth_exceeds(value: Any, limit: int) -> bool:
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def _has_surrogate(value: Any) -> bool:
    stack: list[Any] = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            if _SURROGATE.search(node):
                return True
        elif isinstance(node, dict):
            stack.extend(node.keys())
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False
