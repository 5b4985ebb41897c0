"""``pods/exec`` and ``pods/attach``: the requests' checks and their handlers
(``portforward`` is ``portforward.py``).

Both are WebSocket streams in ``channels``' protocol (``v5.channel.k8s.io`` or
``v4.channel.k8s.io``; SPDY is refused with a ``Status`` that says so). Before the WebSocket
opens, a request is checked as kube-apiserver checks it: the pod exists, the container is one
of its own (the first by default), the pod has not completed, and a kubelet serves exec on the
pod's node (its exec endpoint, published on the Node as ``ANNOTATION``).

``exec_`` runs the command in that kubelet (``session.ExecSession``: the stdio, copied to and
from the WebSocket) and kills it when the container stops. ``attach`` streams the container's
output from now on, and with ``stdin=true`` feeds the container's stdin (``attach``); a
container without ``stdin: true`` has no stdin to attach: ``attach -i`` then only follows its
output.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from trainop.cluster.apiserver.http import status
from trainop.cluster.apiserver.rest.call import ApiState, Call
from trainop.cluster.apiserver.streams import attach as attaching
from trainop.cluster.apiserver.streams import channels
from trainop.cluster.apiserver.streams.session import ExecSession
from trainop.kube import podlogs

ANNOTATION = "trainop.io/exec-address"
TOKEN_UNSUPPORTED = (
    "service account tokens are not issued in local mode: there is one principal, and the "
    "kubeconfig's token is its credential"
)


def _pod(state: ApiState, call: Call) -> dict[str, Any]:
    stored = state.store.get(call.key())
    if stored is None:
        raise status.not_found(call.rt, call.name or "")
    return stored.obj


def _container(call: Call, pod: dict[str, Any]) -> str:
    spec = pod.get("spec") or {}
    names = [str(c.get("name")) for c in spec.get("containers") or []]
    inits = [str(c.get("name")) for c in spec.get("initContainers") or []]
    wanted = call.query.get("container")
    if not wanted:
        if not names:
            raise status.bad_request(f"pod {call.name} has no containers")
        return names[0]  # kubectl names the default container itself; kube takes the first
    if wanted not in names and wanted not in inits:
        raise status.bad_request(f"container {wanted} is not valid for pod {call.name}")
    return wanted


def _check_phase(pod: dict[str, Any], what: str) -> None:
    phase = (pod.get("status") or {}).get("phase")
    if phase in ("Succeeded", "Failed"):
        raise status.bad_request(
            f"cannot {what} into a container in a completed pod; current phase is {phase}"
        )


def _exec_address(state: ApiState, pod: dict[str, Any]) -> str:
    node_name = (pod.get("spec") or {}).get("nodeName") or ""
    nodes = state.store.select(resource="core/nodes")
    chosen = [n for n in nodes if n.key.name == node_name] if node_name else nodes[:1]
    for node in chosen:
        address = (node.obj["metadata"].get("annotations") or {}).get(ANNOTATION)
        if address:
            return str(address)
    where = f"node {node_name}" if node_name else "any node"
    raise status.RequestError(
        f"no kubelet serves exec on {where} (pod {pod['metadata'].get('name')})",
        status=503,
        reason="ServiceUnavailable",
    )


async def exec_(state: ApiState, call: Call) -> web.StreamResponse:
    """``pods/exec``: run ``command`` in the container and bridge its stdio to a WebSocket."""
    pod = _pod(state, call)
    container = _container(call, pod)
    command = call.request.query.getall("command", [])
    if not command:
        raise status.bad_request("you must specify at least 1 command")
    _check_phase(pod, "exec")
    address = _exec_address(state, pod)
    channels.check_transport(call)  # last: kubectl retries a refused WebSocket with SPDY
    ws = await channels.open_websocket(call)
    session = ExecSession(
        ws,
        v5=channels.is_v5(ws),
        tty=call.flag("tty"),
        stdin=call.flag("stdin"),
        stderr=call.flag("stderr") and not call.flag("tty"),
    )
    request = {
        "namespace": call.namespace or "default",
        "pod": call.name or "",
        "container": container,
        "command": command,
        "tty": session.tty,
    }

    def running() -> bool:
        stored = state.store.get(call.key())
        return stored is not None and _is_running(stored.obj, container)

    try:
        result = await session.run(address, request, running=running)
        await session.send(channels.ERROR, json.dumps(result).encode())
    finally:
        session.close_fds()
        await ws.close()
    return ws


async def attach(state: ApiState, call: Call) -> web.StreamResponse:
    """``pods/attach``: the container's output from now on, until it stops; with
    ``stdin=true`` the WebSocket's stdin channel goes to the container's stdin."""
    pod = _pod(state, call)
    container = _container(call, pod)
    _check_phase(pod, "attach")
    spec = _spec_of(pod, container)
    # a container without ``stdin: true`` has no stdin to attach: the stream's stdin is ignored
    # and its output followed (as containerd does), not refused
    wants_stdin = call.flag("stdin") and spec.get("stdin") is True
    address = _exec_address(state, pod) if wants_stdin else ""
    channels.check_transport(call)
    ws = await channels.open_websocket(call)
    ref = podlogs.LogRef(namespace=call.namespace or "", pod=call.name or "", container=container)
    request = {"attach": True, "namespace": ref.namespace or "default", "pod": ref.pod}
    request["container"] = container
    once = spec.get("stdinOnce") is True and spec.get("tty") is not True  # as containerd
    stdin = attaching.AttachedStdin(ws, v5=channels.is_v5(ws), once=once)
    try:
        await attaching.relay(ws, state.log_source, ref, stdin, address=address, request=request)
    finally:
        stdin.close()
        await ws.close()
    return ws


def _spec_of(pod: dict[str, Any], container: str) -> dict[str, Any]:
    spec = pod.get("spec") or {}
    for item in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        if item.get("name") == container:
            return dict(item)
    return {}


def _is_running(pod: dict[str, Any], container: str) -> bool:
    statuses = [
        *((pod.get("status") or {}).get("containerStatuses") or []),
        *((pod.get("status") or {}).get("initContainerStatuses") or []),
    ]
    found = next((c for c in statuses if c.get("name") == container), None)
    return found is None or "running" in (found.get("state") or {})
