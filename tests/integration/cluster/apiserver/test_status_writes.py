"""A ``/status`` write of a built-in kind is checked on what it may change, with kube's answers.

The server checks only the status of such a write against the schema (the rest is the stored
object, already admitted; docs/design/010, "The write path"), so these pin that nothing a
status can get wrong slips through: a wrong type is 422 naming the status field, an unknown
status field is a ``Warning`` (400 under ``Strict``) and is not stored, a numeric quantity is
stored as kube's string and a malformed one is 400, and a spec sent to ``/status`` changes
nothing. Over real HTTPS with raw ``http.client``, so the headers can be read.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from tests.integration.cluster.apiserver import rawhttps
from tests.integration.cluster.apiserver.conftest import RunningServer

PODS = "/api/v1/namespaces/default/pods"
MERGE = "application/merge-patch+json"


class Client:
    """Raw requests answering (code, body, Warning headers)."""

    def __init__(self, api: RunningServer) -> None:
        self.endpoint = rawhttps.Endpoint.load(api.kubeconfig)

    def send(
        self, method: str, path: str, body: Any, content_type: str = "application/json"
    ) -> tuple[int, Any, list[str]]:
        conn = self.endpoint.connect()
        headers = {
            "Authorization": f"Bearer {self.endpoint.token}",
            "Content-Type": content_type,
        }
        conn.request(
            method, path, body=None if body is None else json.dumps(body).encode(), headers=headers
        )
        resp = conn.getresponse()
        data = resp.read()
        warnings = resp.headers.get_all("Warning") or []
        conn.close()
        return resp.status, json.loads(data), warnings


@pytest.fixture(scope="module")
def raw(api: RunningServer) -> Client:
    return Client(api)


def _pod(raw: Client) -> str:
    name = f"s-{uuid.uuid4().hex[:8]}"
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "i"}]},
    }
    code, stored, _ = raw.send("POST", PODS, body)
    assert code == 201, stored
    return name


def _patch_status(
    raw: Client, name: str, status: Any, query: str = ""
) -> tuple[int, Any, list[str]]:
    return raw.send("PATCH", f"{PODS}/{name}/status{query}", {"status": status}, MERGE)


def _causes(status: dict[str, Any]) -> list[str]:
    return [c["field"] for c in status.get("details", {}).get("causes", [])]


def test_a_wrong_type_in_a_status_is_422_naming_the_field(raw: Client) -> None:
    name = _pod(raw)
    code, status, _ = _patch_status(raw, name, {"phase": 5})
    assert (code, status["reason"]) == (422, "Invalid"), status
    assert _causes(status) == ["status.phase"]
    code, status, _ = _patch_status(raw, name, {"conditions": [{"status": "True"}]})
    assert code == 422, status
    assert _causes(status) == ["status.conditions[0].type"]  # required by PodCondition


def test_an_unknown_status_field_is_warned_about_and_dropped(raw: Client) -> None:
    name = _pod(raw)
    code, stored, warnings = _patch_status(raw, name, {"phase": "Running", "bogus": 1})
    assert code == 200, stored
    assert stored["status"] == {"phase": "Running", "qosClass": "BestEffort"}
    assert warnings == ['299 - "unknown field \\"status.bogus\\""']
    code, status, _ = _patch_status(raw, name, {"bogus": 1}, "?fieldValidation=Strict")
    assert (code, status["reason"]) == (400, "BadRequest"), status
    assert 'unknown field "status.bogus"' in status["message"]


def test_a_numeric_quantity_in_a_status_is_stored_as_kubes_string(raw: Client) -> None:
    name = _pod(raw)
    required = {"name": "c", "image": "i", "imageID": "", "ready": True, "restartCount": 0}
    statuses = [{**required, "allocatedResources": {"cpu": 0.5, "memory": 2000}}]
    code, stored, _ = _patch_status(raw, name, {"containerStatuses": statuses})
    assert code == 200, stored
    allocated = stored["status"]["containerStatuses"][0]["allocatedResources"]
    assert allocated == {"cpu": "500m", "memory": "2k"}  # numbers are decimal SI
    statuses[0]["allocatedResources"] = {"cpu": "lots"}
    code, status, _ = _patch_status(raw, name, {"containerStatuses": statuses})
    assert code == 400, status
    assert "quantities must match the regular expression" in status["message"]


def test_a_spec_sent_to_status_changes_nothing_and_is_not_checked(raw: Client) -> None:
    name = _pod(raw)
    body = {"spec": {"containers": [{"name": 7}]}, "status": {"phase": "Running"}}
    code, stored, _ = raw.send("PATCH", f"{PODS}/{name}/status", body, MERGE)
    assert code == 200, stored
    assert stored["spec"]["containers"][0]["name"] == "c"
    assert stored["status"]["phase"] == "Running"


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        (MERGE, {"spec": {"activeDeadlineSeconds": 5}, "status": {"phase": "Running"}}),
        (
            "application/json-patch+json",
            [
                {"op": "add", "path": "/spec/activeDeadlineSeconds", "value": 5},
                {"op": "add", "path": "/status/phase", "value": "Running"},
            ],
        ),
        (
            "application/strategic-merge-patch+json",
            {"spec": {"activeDeadlineSeconds": 5}, "status": {"phase": "Running"}},
        ),
    ],
    ids=["merge", "json", "strategic"],
)
def test_every_patch_of_status_leaves_the_spec_as_stored(
    raw: Client, content_type: str, body: Any
) -> None:
    name = _pod(raw)
    code, stored, _ = raw.send("PATCH", f"{PODS}/{name}/status", body, content_type)
    assert code == 200, stored
    assert stored["status"]["phase"] == "Running"
    assert "activeDeadlineSeconds" not in stored["spec"]
    code, again, _ = raw.send("GET", f"{PODS}/{name}", None)
    assert code == 200
    assert "activeDeadlineSeconds" not in again["spec"]
    assert again["status"]["phase"] == "Running"


WIDGETS = "/apis/status.example.com/v1/namespaces/default/widgets"
WIDGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.status.example.com"},
    "spec": {
        "group": "status.example.com",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "required": ["spec"],
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["image"],
                                "properties": {"image": {"type": "string"}},
                            },
                            "status": {
                                "type": "object",
                                "properties": {
                                    "phase": {"type": "string"},
                                    "stage": {"type": "string", "default": "new"},
                                    "count": {"type": "integer", "minimum": 0},
                                },
                            },
                        },
                    }
                },
            }
        ],
    },
}


@pytest.fixture(scope="module")
def widgets(raw: Client, api: RunningServer) -> str:
    """The Widget CRD installed (its endpoint served); returns its collection path."""
    code, body, _ = raw.send(
        "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", WIDGET_CRD
    )
    assert code == 201, body
    return WIDGETS


def _widget(raw: Client, widgets: str) -> str:
    name = f"w-{uuid.uuid4().hex[:8]}"
    body = {
        "apiVersion": "status.example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": {"image": "i"},
    }
    code, stored, _ = raw.send("POST", widgets, body)
    assert code == 201, stored
    return name


def test_a_custom_status_is_judged_by_its_crd_schema(raw: Client, widgets: str) -> None:
    name = _widget(raw, widgets)
    path = f"{widgets}/{name}/status"
    code, status, _ = raw.send("PATCH", path, {"status": {"count": -1}}, MERGE)
    assert (code, status["reason"]) == (422, "Invalid"), status
    assert _causes(status) == ["status.count"]
    body = {"status": {"phase": "Running", "bogus": 1}, "spec": {"image": "changed"}}
    code, stored, warnings = raw.send("PATCH", path, body, MERGE)
    assert code == 200, stored
    assert stored["status"] == {"phase": "Running", "stage": "new"}  # pruned, defaulted
    assert stored["spec"] == {"image": "i"}
    assert warnings == ['299 - "unknown field \\"status.bogus\\""']


def test_a_null_custom_status_put_to_status_is_dropped(raw: Client, widgets: str) -> None:
    name = _widget(raw, widgets)
    code, current, _ = raw.send("GET", f"{widgets}/{name}", None)
    assert code == 200
    code, stored, _ = raw.send("PUT", f"{widgets}/{name}/status", {**current, "status": None})
    assert code == 200, stored
    assert "status" not in stored  # a null the schema does not allow is dropped, not stored
