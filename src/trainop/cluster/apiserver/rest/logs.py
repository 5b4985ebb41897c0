"""``GET .../pods/NAME/log``, served from a ``kube.podlogs.LogSource``.

The API server does not run containers, so it serves pod logs from the ``LogSource`` the
session hands it (the kubelet's log files, or ``kube.podlogs.MemoryLogSource`` for tests and
the standalone server).

The handler applies kube-apiserver's rules: ``container`` may be omitted only for a
one-container pod (else 400 naming the choices), an unknown container is a 400, ``previous``
without a previous instance a 400, ``tailLines``/``limitBytes``/``timestamps`` shape the
output, and the response is ``text/plain``, streamed chunk by chunk when following.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

from aiohttp import web

from trainop.cluster.apiserver.http import status
from trainop.cluster.apiserver.rest.call import ApiState, Call
from trainop.kube.podlogs import LogLine, LogRef


def _container(call: Call, pod: dict[str, object]) -> str:
    spec = pod.get("spec")
    names = (
        [c.get("name") for c in (spec.get("containers") or [])] if isinstance(spec, dict) else []
    )
    inits = (
        [c.get("name") for c in (spec.get("initContainers") or [])]
        if isinstance(spec, dict)
        else []
    )
    wanted = call.query.get("container")
    if not wanted:
        if len(names) != 1:
            raise status.bad_request(
                f"a container name must be specified for pod {call.name}, choose one of: "
                f"[{' '.join(str(n) for n in names)}]"
            )
        return str(names[0])
    if wanted not in names and wanted not in inits:
        raise status.bad_request(f"container {wanted} is not valid for pod {call.name}")
    return wanted


def _format(line: LogLine, *, timestamps: bool) -> bytes:
    if not timestamps:
        return line.text
    stamp = line.time.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return stamp.encode() + b" " + line.text


async def serve(state: ApiState, call: Call) -> web.StreamResponse:
    """GET .../pods/NAME/log."""
    pod = state.store.get(call.key())
    if pod is None:
        raise status.not_found(call.rt, call.name or "")
    ref = LogRef(
        namespace=call.namespace or "",
        pod=call.name or "",
        container=_container(call, pod.obj),
        previous=call.flag("previous"),
    )
    if not state.log_source.has_log(ref):
        raise status.bad_request(
            f'previous terminated container "{ref.container}" in pod "{ref.pod}" not found'
        )
    follow, stamps = call.flag("follow"), call.flag("timestamps")
    tail, limit = call.integer("tailLines"), call.integer("limitBytes")
    since = _since(call, state.clock())
    resp = web.StreamResponse(headers={"Content-Type": "text/plain"})
    resp.enable_chunked_encoding()
    await resp.prepare(call.request)
    sent = 0
    async for chunk in _chunks(state, ref, follow=follow, tail=tail, stamps=stamps, since=since):
        if limit is not None and sent + len(chunk) > limit:
            await resp.write(chunk[: limit - sent])
            break
        sent += len(chunk)
        await resp.write(chunk)
    return resp


def _since(call: Call, now: datetime) -> datetime | None:
    """The earliest line time ``sinceSeconds``/``sinceTime`` asks for (at most one of them)."""
    seconds, text = call.integer("sinceSeconds"), call.query.get("sinceTime")
    if seconds is not None and text:
        raise status.bad_request("at most one of `sinceTime` or `sinceSeconds` may be specified")
    if seconds is not None:
        if seconds < 1:
            raise status.RequestError(
                f'PodLogOptions "{call.name}" is invalid: sinceSeconds: Invalid value: '
                f"{seconds}: must be greater than 0",
                status=422,
                reason="Invalid",
            )
        return now - timedelta(seconds=seconds)
    if not text:
        return None
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise status.bad_request(f'parsing time "{text}" as RFC3339: {exc}') from exc
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


async def _recent(
    state: ApiState, ref: LogRef, *, follow: bool, since: datetime | None
) -> AsyncIterator[LogLine]:
    async for line in state.log_source.lines(ref, follow=follow):
        if since is None or line.time >= since:
            yield line


async def _chunks(
    state: ApiState,
    ref: LogRef,
    *,
    follow: bool,
    tail: int | None,
    stamps: bool,
    since: datetime | None,
) -> AsyncIterator[bytes]:
    if tail is not None:
        history = [line async for line in _recent(state, ref, follow=False, since=since)]
        kept = history[-tail:] if tail > 0 else []
        for line in kept:
            yield _format(line, timestamps=stamps)
        if not follow:
            return
        skip = len(history)
    else:
        skip = 0
    seen = 0
    async for line in _recent(state, ref, follow=follow, since=since):
        seen += 1
        if seen > skip:
            yield _format(line, timestamps=stamps)
