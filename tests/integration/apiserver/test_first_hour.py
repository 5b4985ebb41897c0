"""kubectl's first-hour requests over raw HTTPS: event field selectors, log ``since``,
auth reviews, default ServiceAccounts, Secret ``stringData``, field validation of built-in
kinds, finalizers on deleting objects, graceful pod deletion, and the unserved endpoints."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlencode

import pytest

from trainop.local.apiserver import LogRef

from . import rawhttps
from .conftest import RunningServer


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
