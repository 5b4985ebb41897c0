"""``POST .../pods/{name}/binding``: assign a pod to a node, as kube-scheduler does.

The body is a ``v1 Binding`` whose ``target`` names the node. As kube-apiserver's binding
storage does, the write sets ``spec.nodeName`` and a ``PodScheduled=True`` condition in one
step, and refuses (409) a pod that is already assigned or is being deleted. The answer is a
``Status`` with ``Success`` and code 201.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from trainop.cluster.apiserver.http import status
from trainop.cluster.apiserver.rest import objects, reads
from trainop.cluster.apiserver.rest.call import ApiState, Call


async def bind(state: ApiState, call: Call) -> web.Response:
    """Bind the addressed pod to ``target.name``."""
    body = call.json_body()
    target = body.get("target") if isinstance(body.get("target"), dict) else None
    node = str((target or {}).get("name") or "")
    if not node:
        raise status.RequestError(
            f'Binding "{call.name}" is invalid: target.name: Required value',
            status=422,
            reason="Invalid",
        )
    key = call.key()
    current = state.store.latest(key)
    if current is None:
        raise status.not_found(call.rt, call.name or "")
    pod: dict[str, Any] = json.loads(current.raw)
    meta, spec = pod["metadata"], pod.setdefault("spec", {})
    want_uid = (body.get("metadata") or {}).get("uid")
    if want_uid and want_uid != meta.get("uid"):
        raise _conflict(call, f"the UID in the precondition ({want_uid}) does not match")
    if meta.get("deletionTimestamp"):
        raise _conflict(call, f"pod {call.name} is being deleted, cannot be assigned to a host")
    if spec.get("nodeName"):
        raise _conflict(call, f'pod {call.name} is already assigned to node "{spec["nodeName"]}"')
    spec["nodeName"] = node
    pod_status = pod.setdefault("status", {})
    now = objects.timestamp(state.clock())
    conditions = [c for c in pod_status.get("conditions") or [] if c.get("type") != "PodScheduled"]
    conditions.insert(
        0,
        {
            "type": "PodScheduled",
            "status": "True",
            "lastProbeTime": None,
            "lastTransitionTime": now,
        },
    )
    pod_status["conditions"] = conditions
    await state.store.put(key, pod)
    done = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
    return reads.respond(json.dumps(done).encode(), code=201)


def _conflict(call: Call, why: str) -> status.RequestError:
    return status.RequestError(
        f'Operation cannot be fulfilled on pods/binding "{call.name}": {why}',
        status=409,
        reason="Conflict",
    )
