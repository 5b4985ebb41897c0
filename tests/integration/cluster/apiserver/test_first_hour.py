"""kubectl's first-hour requests over raw HTTPS: event field selectors, log ``since``,
auth reviews, default ServiceAccounts, Secret ``stringData``, field validation of built-in
kinds, finalizers on deleting objects, graceful pod deletion, and the unserved endpoints."""

from __future__ import annotations

import base64
import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlencode

import pytest

from tests.integration.cluster.apiserver import rawhttps
from tests.integration.cluster.apiserver.conftest import RunningServer, start_server
from tests.polling import wait_for
from trainop.kube.podlogs import LogRef


class Client:
    def __init__(self, api: RunningServer) -> None:
        self.endpoint = rawhttps.Endpoint.load(api.kubeconfig)

    def send(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        query: dict[str, str] | None = None,
        ctype: str = "application/json",
    ) -> tuple[int, Any, dict[str, list[str]]]:
        conn = self.endpoint.connect()
        headers = {"Authorization": f"Bearer {self.endpoint.token}"}
        data = json.dumps(body).encode() if body is not None else None
        if data is not None:
            headers["Content-Type"] = ctype
        target = f"{path}?{urlencode(query)}" if query else path
        conn.request(method, target, body=data, headers=headers)
        resp = conn.getresponse()
        raw = resp.read()
        conn.close()
        got: dict[str, list[str]] = {}
        for key, value in resp.getheaders():
            got.setdefault(key.lower(), []).append(value)
        try:
            parsed = json.loads(raw) if raw.strip() else None
        except ValueError:
            parsed = raw.decode()
        return resp.status, parsed, got


@pytest.fixture(scope="module")
def client(api: RunningServer) -> Client:
    return Client(api)


@pytest.fixture
def ns(client: Client) -> str:
    name = f"f-{uuid.uuid4().hex[:8]}"
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    assert client.send("POST", "/api/v1/namespaces", body)[0] == 201
    return name


def _event(name: str, kind: str, target: str, uid: str, *, reason: str, type_: str, ns: str) -> Any:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name},
        "involvedObject": {
            "apiVersion": "kubeflow.org/v1" if kind == "PyTorchJob" else "v1",
            "kind": kind,
            "name": target,
            "namespace": ns,
            "uid": uid,
            "fieldPath": "spec.containers{main}" if kind == "Pod" else None,
        },
        "reason": reason,
        "type": type_,
        "message": reason,
        "source": {"component": "kubelet" if kind == "Pod" else "pytorchjob-controller"},
    }


def test_event_field_selectors_as_kubectl_describe_sends_them(client: Client, ns: str) -> None:
    events = f"/api/v1/namespaces/{ns}/events"
    for body in (
        _event("a", "PyTorchJob", "job", "u1", reason="SuccessfulCreatePod", type_="Normal", ns=ns),
        _event("b", "Pod", "job-master-0", "u2", reason="BackOff", type_="Warning", ns=ns),
        _event("c", "Pod", "job-master-0", "u3", reason="Started", type_="Normal", ns=ns),
    ):
        assert client.send("POST", events, body)[0] == 201

    def names(selector: str) -> list[str]:
        code, body, _ = client.send("GET", events, query={"fieldSelector": selector})
        assert code == 200, body
        return sorted(i["metadata"]["name"] for i in body["items"])

    describe = (
        f"involvedObject.name=job-master-0,involvedObject.namespace={ns},"
        "involvedObject.kind=Pod,involvedObject.uid=u2"
    )
    assert names(describe) == ["b"]
    assert names("involvedObject.kind=PyTorchJob,involvedObject.apiVersion=kubeflow.org/v1") == [
        "a"
    ]
    assert names("involvedObject.fieldPath=spec.containers{main}") == ["b", "c"]
    assert names("type=Warning") == ["b"]
    assert names("reason!=BackOff,involvedObject.kind=Pod") == ["c"]
    assert names("source=kubelet") == ["b", "c"]
    code, body, _ = client.send("GET", events, query={"fieldSelector": "involvedObject.foo=x"})
    assert (code, body["message"]) == (400, 'field label not supported: "involvedObject.foo"')


def test_event_watch_honours_involved_object_selectors(
    client: Client, ns: str, api: RunningServer
) -> None:
    events = f"/api/v1/namespaces/{ns}/events"
    assert (
        client.send(
            "POST", events, _event("x", "Pod", "p", "u9", reason="R", type_="Normal", ns=ns)
        )[0]
        == 201
    )
    assert (
        client.send(
            "POST", events, _event("y", "Pod", "q", "u8", reason="R", type_="Normal", ns=ns)
        )[0]
        == 201
    )
    query = {"watch": "true", "fieldSelector": "involvedObject.uid=u9", "timeoutSeconds": "1"}
    conn = client.endpoint.connect()
    conn.request(
        "GET",
        f"{events}?{urlencode(query)}",
        headers={"Authorization": f"Bearer {client.endpoint.token}"},
    )
    lines = conn.getresponse().read().decode().splitlines()
    conn.close()
    seen = [json.loads(line)["object"]["metadata"]["name"] for line in lines if line]
    assert seen == ["x"]


def _pod(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "main", "image": "busybox"}], **spec},
    }


def test_log_since_seconds_and_since_time(client: Client, ns: str, api: RunningServer) -> None:
    assert client.send("POST", f"/api/v1/namespaces/{ns}/pods", _pod("talker"))[0] == 201
    ref = LogRef(namespace=ns, pod="talker", container="main")
    now = datetime.now(UTC)
    for age, text in ((3600, "old"), (120, "recent"), (1, "new")):
        api.call(lambda a=age, t=text: api.logs.write(ref, t, at=now - timedelta(seconds=a)))
    log = f"/api/v1/namespaces/{ns}/pods/talker/log"
    assert client.send("GET", log, query={"sinceSeconds": "600"})[1] == "recent\nnew\n"
    since = (now - timedelta(seconds=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert client.send("GET", log, query={"sinceTime": since})[1] == "new\n"
    assert client.send("GET", log, query={"sinceSeconds": "600", "tailLines": "1"})[1] == "new\n"
    code, body, _ = client.send("GET", log, query={"sinceSeconds": "1", "sinceTime": since})
    assert (code, body["message"]) == (
        400,
        "at most one of `sinceTime` or `sinceSeconds` may be specified",
    )
    code, body, _ = client.send("GET", log, query={"sinceSeconds": "0"})
    assert code == 422
    assert "sinceSeconds: Invalid value: 0: must be greater than 0" in body["message"]


def test_auth_reviews_answer_that_the_local_user_may_do_everything(client: Client) -> None:
    access = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": "create", "resource": "pods", "namespace": "x"}},
    }
    reviews = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
    code, body, _ = client.send("POST", reviews, access)
    assert code == 201
    assert body["status"]["allowed"] is True
    assert body["spec"] == access["spec"]
    code, body, _ = client.send("POST", reviews, {**access, "spec": {}})
    assert (code, body["reason"]) == (422, "Invalid")
    assert client.send("GET", reviews)[0] == 405
    rules = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview"}
    code, body, _ = client.send(
        "POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", rules
    )
    assert code == 201
    assert body["status"]["resourceRules"][0]["verbs"] == ["*"]
    whoami = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    code, body, _ = client.send("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", whoami)
    assert code == 201
    assert body["status"]["userInfo"]["username"] == "trainop-local"
    code, body, _ = client.send("GET", "/apis/authorization.k8s.io/v1")
    verbs = {r["name"]: r["verbs"] for r in body["resources"]}
    assert verbs["selfsubjectaccessreviews"] == ["create"]


def test_every_namespace_gets_a_default_service_account(client: Client, ns: str) -> None:
    account = f"/api/v1/namespaces/{ns}/serviceaccounts/default"
    wait_for(lambda: client.send("GET", account)[0] == 200, timeout=10, what=account)
    assert client.send("DELETE", account)[0] == 200
    wait_for(lambda: client.send("GET", account)[0] == 200, timeout=10, what="recreated")
    default = "/api/v1/namespaces/default/serviceaccounts/default"
    wait_for(lambda: client.send("GET", default)[0] == 200, timeout=10, what=default)


def test_service_accounts_are_made_for_namespaces_stored_before_a_restart(
    tmp_path: Any,
) -> None:
    from trainop.cluster.apiserver import store

    first = start_server(tmp_path)
    running = next(first)
    # a namespace stored while no controller ran (as an older trainop left it)
    key = store.Key(resource="core/namespaces", namespace="", name="old")
    running.run(running.server.serviceaccounts.stop())

    async def put() -> None:
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "old"}}
        await running.server.state.store.put(key, namespace)

    running.run(put())
    first.close()
    second = start_server(tmp_path)
    again = next(second)
    try:
        endpoint = Client(again)
        wait_for(
            lambda: (
                endpoint.send("GET", "/api/v1/namespaces/old/serviceaccounts/default")[0] == 200
            ),
            timeout=10,
            what="the default ServiceAccount of old",
        )
    finally:
        second.close()


def test_secret_string_data_is_merged_into_data(client: Client, ns: str) -> None:
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "creds"},
        "data": {"user": base64.b64encode(b"old").decode(), "keep": "a2VlcA=="},
        "stringData": {"user": "alice", "pass": "s3cret"},
    }
    code, body, _ = client.send("POST", f"/api/v1/namespaces/{ns}/secrets", secret)
    assert code == 201, body
    assert "stringData" not in body
    decoded = {k: base64.b64decode(v).decode() for k, v in body["data"].items()}
    assert decoded == {"user": "alice", "pass": "s3cret", "keep": "keep"}
    body["stringData"] = {"pass": "rotated"}
    code, body, _ = client.send("PUT", f"/api/v1/namespaces/{ns}/secrets/creds", body)
    assert code == 200, body
    assert base64.b64decode(body["data"]["pass"]) == b"rotated"
    assert "stringData" not in body


def test_field_validation_of_builtin_kinds(client: Client, ns: str) -> None:
    pods = f"/api/v1/namespaces/{ns}/pods"
    bad = _pod("strict")
    bad["spec"]["foo"] = 1
    bad["spec"]["containers"][0]["imag"] = "x"
    code, body, _ = client.send("POST", pods, bad, query={"fieldValidation": "Strict"})
    assert (code, body["reason"]) == (400, "BadRequest")
    assert body["message"] == (
        'Pod in version "v1" cannot be handled as a Pod: strict decoding error: '
        'unknown field "spec.containers[0].imag", unknown field "spec.foo"'
    ) or body["message"] == (
        'Pod in version "v1" cannot be handled as a Pod: strict decoding error: '
        'unknown field "spec.foo", unknown field "spec.containers[0].imag"'
    )
    code, body, headers = client.send("POST", pods, bad, query={"fieldValidation": "Warn"})
    assert code == 201
    assert "foo" not in body["spec"]
    assert sorted(headers["warning"]) == [
        '299 - "unknown field \\"spec.containers[0].imag\\""',
        '299 - "unknown field \\"spec.foo\\""',
    ]
    bad["metadata"]["name"] = "ignored"
    code, body, headers = client.send("POST", pods, bad, query={"fieldValidation": "Ignore"})
    assert code == 201
    assert "warning" not in headers
    code, _, headers = client.send(
        "POST", pods, {**_pod("fine")}, query={"fieldValidation": "Strict"}
    )
    assert code == 201
    assert "warning" not in headers


def test_no_new_finalizer_on_an_object_being_deleted(client: Client, ns: str) -> None:
    maps = f"/api/v1/namespaces/{ns}/configmaps"
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "held", "finalizers": ["example.com/a"]},
    }
    assert client.send("POST", maps, cm)[0] == 201
    code, body, _ = client.send("DELETE", f"{maps}/held")
    assert code == 200
    assert body["metadata"]["deletionTimestamp"]
    body["metadata"]["finalizers"] = ["example.com/a", "example.com/b"]
    code, body2, _ = client.send("PUT", f"{maps}/held", body)
    assert (code, body2["reason"]) == (422, "Invalid")
    assert body2["message"] == (
        'ConfigMap "held" is invalid: metadata.finalizers: Forbidden: no new finalizers can be '
        'added if the object is being deleted, found new finalizers []string{"example.com/b"}'
    )
    body["metadata"]["finalizers"] = []
    assert client.send("PUT", f"{maps}/held", body)[0] == 200
    assert client.send("GET", f"{maps}/held")[0] == 404


def test_pod_deletion_honours_the_grace_period(client: Client, ns: str) -> None:
    pods = f"/api/v1/namespaces/{ns}/pods"
    for name in ("slow", "quick"):
        assert client.send("POST", pods, _pod(name, nodeName="local"))[0] == 201
    code, body, _ = client.send("DELETE", f"{pods}/slow", query={"gracePeriodSeconds": "7"})
    assert code == 200
    assert body["metadata"]["deletionTimestamp"]
    assert body["metadata"]["deletionGracePeriodSeconds"] == 7
    assert client.send("GET", f"{pods}/slow")[0] == 200  # until its kubelet has stopped it
    code, body, _ = client.send("DELETE", f"{pods}/slow", query={"gracePeriodSeconds": "0"})
    assert code == 200
    assert client.send("GET", f"{pods}/slow")[0] == 404  # grace 0: gone at once
    assert client.send("DELETE", f"{pods}/quick", query={"gracePeriodSeconds": "0"})[0] == 200
    assert client.send("GET", f"{pods}/quick")[0] == 404


def test_events_k8s_io_field_selectors(client: Client, ns: str) -> None:
    events = f"/apis/events.k8s.io/v1/namespaces/{ns}/events"
    for name, kind in (("e1", "Pod"), ("e2", "PyTorchJob")):
        body = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": name},
            "eventTime": "2026-01-01T00:00:00.000000Z",
            "reportingController": "trainop.io/kubelet",
            "reportingInstance": "local",
            "action": "Started",
            "reason": "Started",
            "type": "Normal",
            "regarding": {"kind": kind, "name": "x", "namespace": ns},
        }
        code, got, _ = client.send("POST", events, body)
        assert code == 201, got
    code, body, _ = client.send("GET", events, query={"fieldSelector": "regarding.kind=Pod"})
    assert code == 200, body
    assert [i["metadata"]["name"] for i in body["items"]] == ["e1"]
    selector = "reportingController=trainop.io/kubelet,regarding.name=x"
    code, body, _ = client.send("GET", events, query={"fieldSelector": selector})
    assert sorted(i["metadata"]["name"] for i in body["items"]) == ["e1", "e2"]
