"""Review resources: answered on create, never stored (``kubectl auth can-i`` / ``whoami``).

Local mode has one principal, the holder of the state directory's token, and no RBAC
(docs/design/080): so a ``SelfSubjectAccessReview`` is always allowed, a
``SelfSubjectRulesReview`` lists ``*`` rules, and a ``SelfSubjectReview`` names the local
user. Like kube-apiserver, a review is answered ``201`` with the request's spec and a
``status``; any other verb on a review is 405.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from trainop.cluster.apiserver import store
from trainop.cluster.apiserver.admission import admission
from trainop.cluster.apiserver.http import status
from trainop.cluster.apiserver.rest import reads
from trainop.cluster.apiserver.rest.call import ApiState, Call

USERNAME = "trainop-local"
GROUPS = ("system:masters", "system:authenticated")
REASON = "trainop local mode: the local user may do everything"


async def create(state: ApiState, call: Call) -> web.Response:
    """POST of a review: the review back, with its answer in ``status``."""
    if call.request.method != "POST" or call.name is not None:
        raise status.method_not_allowed(call.request.method.lower(), call.rt)
    obj = call.json_body()
    admission.check_type(call.rt, obj)
    meta = obj.get("metadata")
    obj["metadata"] = {"creationTimestamp": None, **(meta if isinstance(meta, dict) else {})}
    spec = obj.get("spec")
    obj["status"] = _answer(call, spec if isinstance(spec, dict) else {})
    return reads.respond(store.encode(obj), code=201)


def _answer(call: Call, spec: dict[str, Any]) -> dict[str, Any]:
    if call.rt.kind == "SelfSubjectReview":
        return {"userInfo": {"username": USERNAME, "groups": list(GROUPS)}}
    if call.rt.kind == "SelfSubjectRulesReview":
        return {
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            "incomplete": False,
        }
    has_resource = isinstance(spec.get("resourceAttributes"), dict)
    has_other = isinstance(spec.get("nonResourceAttributes"), dict)
    if has_resource == has_other:
        raise status.RequestError(
            f'{call.rt.kind}.authorization.k8s.io "" is invalid: spec.resourceAttributes: '
            'Invalid value: "null": exactly one of nonResourceAttributes or '
            "resourceAttributes must be specified",
            status=422,
            reason="Invalid",
        )
    return {"allowed": True, "reason": REASON}
