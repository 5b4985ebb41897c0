"""Server-side printing (``as=Table``) and the OpenAPI documents, over raw HTTPS."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.integration.cluster.apiserver import rawhttps
from tests.integration.cluster.apiserver.conftest import RunningServer

TABLE_V1 = "application/json;as=Table;v=v1;g=meta.k8s.io"
KUBECTL_GET = f"{TABLE_V1},application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
PROTOBUF_V2 = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
WIDGETS = "/apis/example.com/v1/namespaces/default/widgets"
PODS = "/api/v1/namespaces/default/pods"

COLUMNS = [
    {"name": "State", "type": "string", "jsonPath": ".status.conditions[-1:].type"},
    {
        "name": "Ready",
        "type": "string",
        "jsonPath": '.status.conditions[?(@.type=="Ready")].status',
    },
    {"name": "Size", "type": "integer", "jsonPath": ".spec.size", "priority": 1},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
]


def _crd(extra_field: str = "size") -> dict[str, Any]:
    spec = {"type": "object", "properties": {extra_field: {"type": "integer"}}}
    schema = {
        "type": "object",
        "properties": {
            "spec": spec,
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
    }
    version = {
        "name": "v1",
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": schema},
        "subresources": {"status": {}},
        "additionalPrinterColumns": COLUMNS,
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [version],
        },
    }


class Client:
    def __init__(self, api: RunningServer) -> None:
        self.endpoint = rawhttps.Endpoint.load(api.kubeconfig)

    def send(
        self, method: str, path: str, body: Any = None, accept: str = ""
    ) -> tuple[int, Any, str]:
        conn = self.endpoint.connect()
        headers = {"Authorization": f"Bearer {self.endpoint.token}"}
        if accept:
            headers["Accept"] = accept
        data = json.dumps(body).encode() if body is not None else None
        if data is not None:
            headers["Content-Type"] = "application/json"
        conn.request(method, path, body=data, headers=headers)
        resp = conn.getresponse()
        raw = resp.read()
        conn.close()
        return resp.status, json.loads(raw) if raw.strip() else None, raw.decode()


@pytest.fixture(scope="module")
def client(api: RunningServer) -> Client:
    made = Client(api)
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    assert made.send("POST", crds, _crd())[0] == 201
    widget = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w1"},
        "spec": {"size": 3},
    }
    assert made.send("POST", WIDGETS, widget)[0] == 201
    conditions = [{"type": "Ready", "status": "True"}, {"type": "Running", "status": "True"}]
    patch = {"status": {"conditions": conditions}}
    conn = made.endpoint.connect()
    conn.request(
        "PATCH",
        f"{WIDGETS}/w1/status",
        body=json.dumps(patch).encode(),
        headers={
            "Authorization": f"Bearer {made.endpoint.token}",
            "Content-Type": "application/merge-patch+json",
        },
    )
    assert conn.getresponse().status == 200
    pod = {"metadata": {"name": "p1"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    assert made.send("POST", PODS, pod)[0] == 201
    return made


def test_crd_printer_columns(client: Client) -> None:
    code, table, _ = client.send("GET", WIDGETS, accept=KUBECTL_GET)
    assert code == 200
    assert (table["kind"], table["apiVersion"]) == ("Table", "meta.k8s.io/v1")
    names = [(c["name"], c["type"], c["priority"]) for c in table["columnDefinitions"]]
    assert names == [
        ("Name", "string", 0),
        ("State", "string", 0),
        ("Ready", "string", 0),
        ("Size", "integer", 1),
        ("Age", "date", 0),
    ]
    (row,) = table["rows"]
    assert row["cells"][:4] == ["w1", "Running", "True", 3]
    assert row["cells"][4].endswith("s")
    assert row["object"]["kind"] == "PartialObjectMetadata"
    assert row["object"]["metadata"]["name"] == "w1"


def test_pod_columns_and_include_object(client: Client) -> None:
    code, table, _ = client.send("GET", f"{PODS}/p1?includeObject=Object", accept=KUBECTL_GET)
    assert code == 200
    header = [c["name"] for c in table["columnDefinitions"] if c["priority"] == 0]
    assert header == ["Name", "Ready", "Status", "Restarts", "Age"]
    wide = [c["name"] for c in table["columnDefinitions"] if c["priority"] == 1]
    assert wide == ["IP", "Node", "Nominated Node", "Readiness Gates"]
    (row,) = table["rows"]
    assert row["cells"][:4] == ["p1", "0/1", "Pending", "0"]
    assert row["cells"][5:] == ["<none>", "<none>", "<none>", "<none>"]
    assert row["object"]["kind"] == "Pod"


def test_v1beta1_table_and_partial_metadata(client: Client) -> None:
    beta = "application/json;as=Table;v=v1beta1;g=meta.k8s.io"
    _, table, _ = client.send("GET", f"{PODS}?includeObject=None", accept=beta)
    assert table["apiVersion"] == "meta.k8s.io/v1beta1"
    assert "object" not in table["rows"][0]
    meta = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"
    _, listed, _ = client.send("GET", PODS, accept=meta)
    assert listed["kind"] == "PartialObjectMetadataList"
    assert [i["metadata"]["name"] for i in listed["items"]] == ["p1"]
    _, plain, _ = client.send("GET", PODS, accept="application/json")
    assert plain["kind"] == "PodList"


def test_watch_as_table(client: Client) -> None:
    path = f"{PODS}?watch=true&timeoutSeconds=1"
    code, _, raw = client.send("GET", path, accept=TABLE_V1)
    assert code == 200
    event = json.loads(raw.splitlines()[0])
    assert event["type"] == "ADDED"
    assert event["object"]["kind"] == "Table"
    assert event["object"]["rows"][0]["cells"][0] == "p1"


def test_openapi_v2_json_and_protobuf_406(client: Client) -> None:
    code, doc, _ = client.send("GET", "/openapi/v2", accept="application/json")
    assert code == 200
    assert doc["swagger"] == "2.0"
    assert "io.k8s.api.core.v1.Pod" in doc["definitions"]
    assert "com.example.v1.Widget" in doc["definitions"]
    code, status, _ = client.send("GET", "/openapi/v2", accept=PROTOBUF_V2)
    assert (code, status["reason"]) == (406, "NotAcceptable")
    code, status, _ = client.send("GET", "/swagger-2.0.0.pb-v1", accept=PROTOBUF_V2)
    assert (code, status["reason"]) == (406, "NotAcceptable")
    assert "kubectl 1.29 and newer" in status["message"]


def test_openapi_v3_documents(client: Client) -> None:
    code, index, _ = client.send("GET", "/openapi/v3")
    assert code == 200
    assert {"api/v1", "apis/example.com/v1"} <= index["paths"].keys()
    url = index["paths"]["apis/example.com/v1"]["serverRelativeURL"]
    assert url.startswith("/openapi/v3/apis/example.com/v1?hash=")
    _, doc, _ = client.send("GET", url)
    schema = doc["components"]["schemas"]["com.example.v1.Widget"]
    gvk = {"group": "example.com", "version": "v1", "kind": "Widget"}
    assert schema["x-kubernetes-group-version-kind"] == [gvk]
    assert schema["properties"]["spec"]["properties"]["size"] == {"type": "integer"}
    ref = "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    assert schema["properties"]["metadata"]["allOf"] == [{"$ref": ref}]
    patch = doc["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]["patch"]
    assert patch["x-kubernetes-group-version-kind"] == gvk
    assert "fieldValidation" in {p["name"] for p in patch["parameters"]}
    assert "application/apply-patch+yaml" in patch["requestBody"]["content"]


def test_openapi_v3_follows_crd_changes(client: Client) -> None:
    before = client.send("GET", "/openapi/v3")[1]["paths"]["apis/example.com/v1"]
    crd = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com"
    current = client.send("GET", crd)[1]
    current["spec"]["versions"][0]["schema"] = _crd("colour")["spec"]["versions"][0]["schema"]
    assert client.send("PUT", crd, current)[0] == 200
    after = client.send("GET", "/openapi/v3")[1]["paths"]["apis/example.com/v1"]
    assert after != before
    _, doc, _ = client.send("GET", after["serverRelativeURL"])
    spec = doc["components"]["schemas"]["com.example.v1.Widget"]["properties"]["spec"]
    assert "colour" in spec["properties"]


def test_builtin_schema_is_openapi(client: Client) -> None:
    _, doc, _ = client.send("GET", "/openapi/v3/api/v1")
    pod_spec = doc["components"]["schemas"]["io.k8s.api.core.v1.PodSpec"]
    assert pod_spec["properties"]["activeDeadlineSeconds"]["type"] == "integer"
    int_or_string = doc["components"]["schemas"]["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]
    assert (int_or_string["type"], int_or_string["format"]) == ("string", "int-or-string")
    code, status, _ = client.send("GET", "/openapi/v3/apis/nothing.io/v1")
    assert (code, status["reason"]) == (404, "NotFound")
