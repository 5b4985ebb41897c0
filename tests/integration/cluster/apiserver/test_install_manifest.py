"""The cluster install (``manifests/overlays/standalone``) against the embedded API server,
over raw HTTPS and without kubectl: what ``kubectl apply --server-side -k`` needs from the
server for every kind in it (discovery, an OpenAPI v3 document with the kind's
group-version-kind), then one server-side apply per object: all stored, except the
Deployment, which gets a 405 Status naming ``trainop local``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.cluster.apiserver import rawhttps
from tests.integration.cluster.apiserver.conftest import RunningServer
from tests.unit.deploy import kustomize

ROOT = Path(__file__).resolve().parents[4]
OVERLAY = ROOT / "manifests" / "overlays" / "standalone"
APPLY = "application/apply-patch+yaml"


class Client:
    def __init__(self, api: RunningServer) -> None:
        self.endpoint = rawhttps.Endpoint.load(api.kubeconfig)

    def send(
        self, method: str, path: str, body: bytes | None = None, ctype: str = ""
    ) -> tuple[int, Any]:
        conn = self.endpoint.connect()
        headers = {"Authorization": f"Bearer {self.endpoint.token}"}
        if ctype:
            headers["Content-Type"] = ctype
        conn.request(method, path, body=body, headers=headers)
        resp = conn.getresponse()
        raw = resp.read()
        conn.close()
        return resp.status, json.loads(raw) if raw.strip() else None


@pytest.fixture(scope="module")
def client(api: RunningServer) -> Client:
    return Client(api)


def _gv_path(obj: dict[str, Any]) -> str:
    api_version: str = obj["apiVersion"]
    return f"apis/{api_version}" if "/" in api_version else f"api/{api_version}"


def _plural(client: Client, obj: dict[str, Any]) -> tuple[str, bool]:
    code, listing = client.send("GET", "/" + _gv_path(obj))
    assert code == 200, (obj["kind"], listing)
    found = [r for r in listing["resources"] if r["kind"] == obj["kind"] and "/" not in r["name"]]
    assert len(found) == 1, (obj["kind"], listing)
    return found[0]["name"], found[0]["namespaced"]


OBJECTS = kustomize.build(OVERLAY)


def test_every_kind_of_the_install_is_discoverable_with_an_openapi_v3_schema(
    client: Client,
) -> None:
    code, index = client.send("GET", "/openapi/v3")
    assert code == 200
    kinds = {(o["apiVersion"], o["kind"]) for o in OBJECTS}
    assert ("rbac.authorization.k8s.io/v1", "ClusterRole") in kinds
    assert ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration") in kinds
    for api_version, kind in sorted(kinds):
        obj = {"apiVersion": api_version, "kind": kind}
        _plural(client, obj)
        gv = _gv_path(obj)
        assert gv in index["paths"], gv
        code, doc = client.send("GET", index["paths"][gv]["serverRelativeURL"])
        assert code == 200
        group = api_version.split("/")[0] if "/" in api_version else ""
        gvk = {"group": group, "version": api_version.split("/")[-1], "kind": kind}
        schemas = doc["components"]["schemas"].values()
        assert any(gvk in s.get("x-kubernetes-group-version-kind", []) for s in schemas), gvk


def test_server_side_apply_of_the_install_stores_all_but_the_deployment(client: Client) -> None:
    for obj in sorted(OBJECTS, key=lambda o: o["kind"] != "Namespace"):  # namespace first
        plural, namespaced = _plural(client, obj)
        meta = obj["metadata"]
        scope = f"/namespaces/{meta['namespace']}" if namespaced else ""
        path = f"/{_gv_path(obj)}{scope}/{plural}/{meta['name']}"
        query = "?fieldManager=kubectl&fieldValidation=Strict&force=true"
        code, answer = client.send("PATCH", path + query, yaml.safe_dump(obj).encode(), APPLY)
        if obj["kind"] == "Deployment":
            assert code == 405, answer
            assert answer["kind"] == "Status"
            assert answer["reason"] == "MethodNotAllowed"
            assert answer["message"].startswith("Deployments are not served in local mode: ")
            assert "trainop local runs the training operator itself" in answer["message"]
            assert "the other objects of an apply are not affected" in answer["message"]
            continue
        assert code in (200, 201), (obj["kind"], answer)
        code, got = client.send("GET", path)
        assert code == 200, (obj["kind"], got)
        assert got["kind"] == obj["kind"]
        assert got["metadata"]["name"] == meta["name"]


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("/apis/apps/v1/namespaces/default/deployments", "Deployment"),
        ("/apis/batch/v1/namespaces/default/cronjobs", "CronJob"),
    ],
)
def test_workload_kinds_local_mode_does_not_run_get_a_405_status(
    client: Client, path: str, kind: str
) -> None:
    group_version = path.split("/namespaces/")[0]
    code, listing = client.send("GET", group_version)
    assert code == 200
    assert kind in {r["kind"] for r in listing["resources"]}  # discoverable: kubectl asks
    body = json.dumps({"apiVersion": group_version[6:], "kind": kind, "metadata": {"name": "x"}})
    for method, where, data in (("POST", path, body.encode()), ("GET", path, None)):
        code, answer = client.send(method, where, data, "application/json" if data else "")
        assert code == 405, (method, answer)
        assert answer["reason"] == "MethodNotAllowed"
        assert answer["message"].startswith(f"{kind}s are not served in local mode: trainop local")
