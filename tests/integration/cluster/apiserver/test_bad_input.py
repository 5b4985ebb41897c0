"""Client mistakes get kube-apiserver's status code and a ``Status`` body, never a 500.

Raw HTTP (``http.client``) so that bodies no client library would send can be sent.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.integration.cluster.apiserver import rawhttps
from tests.integration.cluster.apiserver.conftest import RunningServer
from tests.integration.cluster.apiserver.test_scenarios import CRD

POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p"},
    "spec": {"containers": [{"name": "c", "image": "i"}]},
}
PODS = "/api/v1/namespaces/default/pods"
JOBS = "/apis/kubeflow.org/v1/namespaces/default/pytorchjobs"
JOB = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "PyTorchJob",
    "metadata": {"name": "j"},
    "spec": {"image": "x"},
}


def pod(**changes: Any) -> bytes:
    body = json.loads(json.dumps(POD))
    body.update(changes)
    return json.dumps(body).encode()


def job(**changes: Any) -> bytes:
    body = json.loads(json.dumps(JOB))
    body.update(changes)
    return json.dumps(body).encode()


MERGE = {"Content-Type": "application/merge-patch+json"}
JSONP = {"Content-Type": "application/json-patch+json"}
SMP = {"Content-Type": "application/strategic-merge-patch+json"}
APPLY = {"Content-Type": "application/apply-patch+yaml"}

# (id, method, path, body, extra headers, expected code, expected reason)
CASES: list[tuple[str, str, str, bytes, dict[str, str], int, str]] = [
    ("malformed-json", "POST", PODS, b'{"apiVersion": "v1",', {}, 400, "BadRequest"),
    ("body-not-object", "POST", PODS, b"[1, 2]", {}, 400, "BadRequest"),
    ("empty-body", "POST", PODS, b"", {}, 400, "BadRequest"),
    ("wrong-kind", "POST", PODS, pod(kind="ConfigMap"), {}, 400, "BadRequest"),
    ("wrong-apiversion", "POST", PODS, pod(apiVersion="apps/v1"), {}, 400, "BadRequest"),
    ("metadata-not-object", "POST", PODS, pod(metadata="x"), {}, 400, "BadRequest"),
    ("no-name", "POST", PODS, pod(metadata={}), {}, 422, "Invalid"),
    ("bad-name", "POST", PODS, pod(metadata={"name": "Bad_Name"}), {}, 422, "Invalid"),
    (
        "bad-label",
        "POST",
        PODS,
        pod(metadata={"name": "l", "labels": {"a": "b c"}}),
        {},
        422,
        "Invalid",
    ),
    (
        "container-without-name",
        "POST",
        PODS,
        pod(spec={"containers": [{"image": "i"}]}),
        {},
        422,
        "Invalid",
    ),
    ("containers-not-list", "POST", PODS, pod(spec={"containers": "c"}), {}, 422, "Invalid"),
    (
        "port-not-integer",
        "POST",
        PODS,
        pod(spec={"containers": [{"name": "c", "ports": [{"containerPort": "x"}]}]}),
        {},
        422,
        "Invalid",
    ),
    (
        "configmap-data-not-string",
        "POST",
        "/api/v1/namespaces/default/configmaps",
        json.dumps({"metadata": {"name": "c"}, "data": {"k": 1}}).encode(),
        {},
        422,
        "Invalid",
    ),
    (
        "namespace-mismatch",
        "POST",
        PODS,
        pod(metadata={"name": "p", "namespace": "other"}),
        {},
        400,
        "BadRequest",
    ),
    ("name-mismatch-on-put", "PUT", f"{PODS}/other", pod(), {}, 400, "BadRequest"),
    ("unknown-resource", "GET", "/api/v1/namespaces/default/widgets", b"", {}, 404, "NotFound"),
    ("unknown-group", "GET", "/apis/nope.example/v1/things", b"", {}, 404, "NotFound"),
    ("unknown-path", "GET", "/nonsense", b"", {}, 404, "NotFound"),
    (
        "cluster-resource-in-namespace",
        "GET",
        "/api/v1/namespaces/default/namespaces",
        b"",
        {},
        404,
        "NotFound",
    ),
    ("bad-label-selector", "GET", f"{PODS}?labelSelector=a%20in%20(", b"", {}, 400, "BadRequest"),
    (
        "unsupported-field-selector",
        "GET",
        f"{PODS}?fieldSelector=spec.foo%3D1",
        b"",
        {},
        400,
        "BadRequest",
    ),
    ("bad-limit", "GET", f"{PODS}?limit=abc", b"", {}, 400, "BadRequest"),
    ("bad-continue", "GET", f"{PODS}?limit=1&continue=%%%", b"", {}, 400, "BadRequest"),
    ("bad-watch-rv", "GET", f"{PODS}?watch=true&resourceVersion=abc", b"", {}, 400, "BadRequest"),
    (
        "patch-unsupported-type",
        "PATCH",
        f"{PODS}/existing",
        b"{}",
        {"Content-Type": "text/plain"},
        415,
        "UnsupportedMediaType",
    ),
    ("apply-without-manager", "PATCH", f"{PODS}/existing", b"{}", APPLY, 422, "Invalid"),
    ("force-on-merge-patch", "PATCH", f"{PODS}/existing?force=true", b"{}", MERGE, 422, "Invalid"),
    (
        "apply-too-deep",
        "PATCH",
        f"{PODS}/existing?fieldManager=m",
        b'{"metadata": {"annotations": ' + b"[" * 5000 + b"]" * 5000 + b"}}",
        APPLY,
        400,
        "BadRequest",
    ),
    (
        "apply-yaml-too-deep",
        "PATCH",
        f"{PODS}/existing?fieldManager=m",
        b"a: " + b"[" * 5000,
        APPLY,
        400,
        "BadRequest",
    ),
    (
        "apply-on-scale",
        "PATCH",
        f"{JOBS}/existing/scale?fieldManager=m",
        b"{}",
        APPLY,
        415,
        "UnsupportedMediaType",
    ),
    (
        "apply-not-a-map",
        "PATCH",
        f"{PODS}/existing?fieldManager=m",
        b"- 1",
        APPLY,
        400,
        "BadRequest",
    ),
    ("patch-malformed", "PATCH", f"{PODS}/existing", b"{", MERGE, 400, "BadRequest"),
    ("json-patch-not-list", "PATCH", f"{PODS}/existing", b"{}", JSONP, 400, "BadRequest"),
    (
        "json-patch-test-fails",
        "PATCH",
        f"{PODS}/existing",
        json.dumps([{"op": "test", "path": "/metadata/name", "value": "zzz"}]).encode(),
        JSONP,
        422,
        "Invalid",
    ),
    (
        "patch-makes-invalid",
        "PATCH",
        f"{PODS}/existing",
        json.dumps({"spec": {"containers": [{"name": "c", "image": 5}]}}).encode(),
        MERGE,
        422,
        "Invalid",
    ),
    ("patch-missing", "PATCH", f"{PODS}/missing", b"{}", MERGE, 404, "NotFound"),
    (
        "put-missing",
        "PUT",
        f"{PODS}/missing",
        pod(metadata={"name": "missing"}),
        {},
        404,
        "NotFound",
    ),
    ("delete-missing", "DELETE", f"{PODS}/missing", b"", {}, 404, "NotFound"),
    (
        "delete-bad-policy",
        "DELETE",
        f"{PODS}/existing?propagationPolicy=Sometimes",
        b"",
        {},
        422,
        "Invalid",
    ),
    (
        "stale-put",
        "PUT",
        f"{PODS}/existing",
        pod(metadata={"name": "existing", "resourceVersion": "1"}),
        {},
        409,
        "Conflict",
    ),
    ("create-existing", "POST", PODS, pod(metadata={"name": "existing"}), {}, 409, "AlreadyExists"),
    ("post-to-object", "POST", f"{PODS}/existing", pod(), {}, 405, "MethodNotAllowed"),
    ("put-on-collection", "PUT", PODS, pod(), {}, 405, "MethodNotAllowed"),
    ("delete-status", "DELETE", f"{PODS}/existing/status", b"", {}, 405, "MethodNotAllowed"),
    ("unknown-subresource", "GET", f"{PODS}/existing/frobnicate", b"", {}, 404, "NotFound"),
    (
        "exec-no-kubelet",
        "GET",
        f"{PODS}/existing/exec?command=ls",
        b"",
        {},
        503,
        "ServiceUnavailable",
    ),
    ("portforward", "GET", f"{PODS}/existing/portforward", b"", {}, 400, "BadRequest"),
    ("log-missing-pod", "GET", f"{PODS}/missing/log", b"", {}, 404, "NotFound"),
    (
        "log-wrong-container",
        "GET",
        f"{PODS}/existing/log?container=nope",
        b"",
        {},
        400,
        "BadRequest",
    ),
    ("missing-namespace", "POST", "/api/v1/namespaces/nowhere/pods", pod(), {}, 404, "NotFound"),
    ("cr-fails-schema", "POST", JOBS, job(spec={"replicas": "many"}), {}, 422, "Invalid"),
    ("cr-missing-kind", "POST", JOBS, job(kind=None), {}, 400, "BadRequest"),
    ("cr-strategic-merge", "PATCH", f"{JOBS}/existing", b"{}", SMP, 415, "UnsupportedMediaType"),
    (
        "cr-strict-unknown-field",
        "POST",
        f"{JOBS}?fieldValidation=Strict",
        job(spec={"image": "x", "bogus": 1}),
        {},
        400,
        "BadRequest",
    ),
    (
        "cr-scale-negative",
        "PUT",
        f"{JOBS}/existing/scale",
        json.dumps(
            {
                "apiVersion": "autoscaling/v1",
                "kind": "Scale",
                "metadata": {"name": "existing"},
                "spec": {"replicas": -3},
            }
        ).encode(),
        {},
        422,
        "Invalid",
    ),
    (
        "crd-name-mismatch",
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        json.dumps({**CRD, "metadata": {"name": "wrong.kubeflow.org"}}).encode(),
        {},
        422,
        "Invalid",
    ),
]


class Raw:
    """A raw HTTP connection to the test server."""

    def __init__(self, api: RunningServer) -> None:
        self.endpoint = rawhttps.Endpoint.load(api.kubeconfig)
        self.token = self.endpoint.token

    def send(
        self,
        method: str,
        path: str,
        body: bytes = b"",
        headers: dict[str, str] | None = None,
        token: str | None = "",
    ) -> tuple[int, Any]:
        conn = self.endpoint.connect()
        sent = dict(headers or {})
        if token is not None:
            sent["Authorization"] = f"Bearer {token or self.token}"
        conn.request(method, path, body=body or None, headers=sent)
        resp = conn.getresponse()
        data = resp.read()
        conn.close()
        return resp.status, json.loads(data) if data.strip() else None


@pytest.fixture(scope="module")
def raw(api: RunningServer) -> Raw:
    """A raw client, with a pod and a custom resource named ``existing`` in place."""
    client = Raw(api)
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    assert client.send("POST", crds, json.dumps(CRD).encode())[0] in (201, 409)
    assert client.send("POST", PODS, pod(metadata={"name": "existing"}))[0] in (201, 409)
    assert client.send("POST", JOBS, job(metadata={"name": "existing"}))[0] in (201, 409)
    return client


@pytest.mark.parametrize(
    ("method", "path", "body", "headers", "code", "reason"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_client_mistake_gets_status(
    raw: Raw,
    method: str,
    path: str,
    body: bytes,
    headers: dict[str, str],
    code: int,
    reason: str,
) -> None:
    got, status = raw.send(method, path, body, headers)
    assert (got, status["reason"]) == (code, reason), status
    assert status["kind"] == "Status"
    assert status["status"] == "Failure"
    assert status["code"] == code


def test_sweep_is_large_enough() -> None:
    assert len(CASES) >= 30


@pytest.mark.parametrize("token", [None, "wrong-token"], ids=["missing", "wrong"])
def test_missing_or_wrong_token_is_401(raw: Raw, token: str | None) -> None:
    got, status = raw.send("GET", PODS, token=token)
    assert got == 401
    assert (status["kind"], status["reason"], status["code"]) == ("Status", "Unauthorized", 401)


def test_health_and_version_need_no_token(raw: Raw) -> None:
    conn = raw.endpoint.connect()
    for path in ("/healthz", "/readyz", "/version/"):
        conn.request("GET", path)
        resp = conn.getresponse()
        resp.read()
        assert resp.status == 200, path


def test_watch_ends_at_timeout_seconds(raw: Raw) -> None:
    conn = raw.endpoint.connect()
    started = time.monotonic()
    path = "/api/v1/namespaces/default/secrets?watch=true&resourceVersion=0&timeoutSeconds=1"
    conn.request("GET", path, headers={"Authorization": f"Bearer {raw.token}"})
    resp = conn.getresponse()
    assert resp.status == 200
    assert resp.read() == b""  # no secrets, and the stream ended by itself
    assert 0.9 < time.monotonic() - started < 5


def test_watch_too_old_sends_error_event_with_410(raw: Raw) -> None:
    for i in range(105):  # the test server keeps 100 events of history
        body = json.dumps({"metadata": {"name": f"churn-{i}"}}).encode()
        assert raw.send("POST", "/api/v1/namespaces/default/configmaps", body)[0] == 201
    conn = raw.endpoint.connect()
    conn.request(
        "GET",
        f"{PODS}?watch=True&resourceVersion=1&timeoutSeconds=1",
        headers={"Authorization": f"Bearer {raw.token}"},
    )
    resp = conn.getresponse()
    assert resp.status == 200
    lines = [json.loads(line) for line in resp.read().splitlines() if line.strip()]
    assert lines[0]["type"] == "ERROR"
    assert (lines[0]["object"]["code"], lines[0]["object"]["reason"]) == (410, "Expired")


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=12,
)
FIELDS = [
    "metadata",
    "spec",
    "status",
    "data",
    "kind",
    "apiVersion",
    "containers",
    "name",
    "labels",
    "ports",
    "env",
    "finalizers",
    "ownerReferences",
    "replicas",
    "image",
]


def _mutate(value: Any, path: list[str], replacement: Any) -> Any:
    if not path:
        return replacement
    out = dict(value) if isinstance(value, dict) else {}
    out[path[0]] = _mutate(out.get(path[0]), path[1:], replacement)
    return out


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    target=st.sampled_from([PODS, "/api/v1/namespaces/default/configmaps", JOBS]),
    path=st.lists(st.sampled_from(FIELDS), min_size=1, max_size=3),
    replacement=JSON_VALUES,
    method=st.sampled_from(["POST", "PATCH-merge", "PATCH-strategic", "PATCH-json", "PUT"]),
)
def test_no_body_makes_the_server_fail(
    raw: Raw, target: str, path: list[str], replacement: Any, method: str
) -> None:
    base = json.loads(pod() if target == PODS else job() if target == JOBS else b"{}")
    body = _mutate(base, path, replacement)
    headers = {"Content-Type": PATCH_HEADERS.get(method, "application/json")}
    verb = method.split("-")[0]
    where = target if verb == "POST" else f"{target}/existing"
    payload = (
        body
        if method != "PATCH-json"
        else [{"op": "replace", "path": "/" + "/".join(path), "value": replacement}]
    )
    code, status = raw.send(verb, where, json.dumps(payload).encode(), headers)
    assert code < 500, status


PATCH_HEADERS = {
    "PATCH-merge": MERGE["Content-Type"],
    "PATCH-strategic": SMP["Content-Type"],
    "PATCH-json": JSONP["Content-Type"],
}


def test_apply_on_scale_does_not_offer_apply(raw: Raw) -> None:
    path = f"{JOBS}/existing/scale?fieldManager=m"
    code, status = raw.send("PATCH", path, b"{}", APPLY)
    assert code == 415
    assert "apply-patch" not in status["message"]
