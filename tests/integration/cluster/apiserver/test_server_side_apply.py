"""Server-side apply and managedFields against the embedded API server.

Raw HTTP for exact Status bodies; the official client for what a Python user reads back
(``metadata.managed_fields``). Each test uses its own object names in ``default``.
"""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Iterator
from typing import Any

import kubernetes
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lightkube import AsyncClient, KubeConfig
from lightkube.core.exceptions import ApiError
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import ConfigMap

from tests.integration.cluster.apiserver.conftest import RunningServer
from tests.integration.cluster.apiserver.test_bad_input import Raw
from tests.integration.cluster.apiserver.test_scenarios import CRD as SCENARIO_CRD
from trainop.cluster.apiserver.apply import apply as apply_module
from trainop.cluster.apiserver.apply import fieldsets

APPLY = {"Content-Type": "application/apply-patch+yaml"}
MERGE = {"Content-Type": "application/merge-patch+json"}
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
WIDGETS = "/apis/ssa.example/v1/namespaces/default/widgets"
CMS = "/api/v1/namespaces/default/configmaps"
_STRING = {"type": "string"}
CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.ssa.example"},
    "spec": {
        "group": "ssa.example",
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
                        "properties": {
                            "spec": {
                                "type": "object",
                                "properties": {
                                    "image": _STRING,
                                    "size": {"type": "integer"},
                                    "args": {"type": "array", "items": _STRING},
                                    "ports": {
                                        "type": "array",
                                        "x-kubernetes-list-type": "map",
                                        "x-kubernetes-list-map-keys": ["name"],
                                        "items": {
                                            "type": "object",
                                            "required": ["name"],
                                            "properties": {
                                                "name": _STRING,
                                                "port": {"type": "integer"},
                                            },
                                        },
                                    },
                                },
                            },
                            "status": {"type": "object", "properties": {"phase": _STRING}},
                        },
                    }
                },
            }
        ],
    },
}


@pytest.fixture(scope="module")
def raw(api: RunningServer) -> Raw:
    client = Raw(api)
    assert client.send("POST", CRDS, json.dumps(CRD).encode())[0] in (201, 409)
    return client


@pytest.fixture
def name() -> str:
    return f"w-{uuid.uuid4().hex[:8]}"


def widget(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "ssa.example/v1",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": spec,
    }


def apply(
    raw: Raw, path: str, body: dict[str, Any], manager: str, *, force: bool = False
) -> tuple[int, Any]:
    query = f"?fieldManager={manager}" + ("&force=true" if force else "")
    return raw.send("PATCH", path + query, json.dumps(body).encode(), APPLY)


def managers(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["manager"]: e for e in obj["metadata"].get("managedFields", [])}


def test_apply_creates_then_reapply_is_a_no_op(raw: Raw, name: str) -> None:
    body = widget(name, image="a", ports=[{"name": "http", "port": 80}])
    code, created = apply(raw, f"{WIDGETS}/{name}", body, "alice")
    assert code == 201, created
    entry = managers(created)["alice"]
    assert {k: v for k, v in entry.items() if k != "time"} == {
        "manager": "alice",
        "operation": "Apply",
        "apiVersion": "ssa.example/v1",
        "fieldsType": "FieldsV1",
        "fieldsV1": {
            "f:spec": {
                "f:image": {},
                "f:ports": {'k:{"name":"http"}': {".": {}, "f:name": {}, "f:port": {}}},
            }
        },
    }
    assert entry["time"].endswith("Z")
    code, again = apply(raw, f"{WIDGETS}/{name}", body, "alice")
    assert code == 200
    assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert again["metadata"]["managedFields"] == created["metadata"]["managedFields"]


def test_conflicting_manager_gets_409_and_force_takes_ownership(raw: Raw, name: str) -> None:
    path = f"{WIDGETS}/{name}"
    assert apply(raw, path, widget(name, image="a", size=1), "alice")[0] == 201
    code, status = apply(raw, path, widget(name, image="b", size=1), "bob")
    assert code == 409
    assert status["reason"] == "Conflict"
    assert status["message"] == 'Apply failed with 1 conflict: conflict with "alice": .spec.image'
    assert status["details"]["causes"] == [
        {
            "reason": "FieldManagerConflict",
            "message": 'conflict with "alice"',
            "field": ".spec.image",
        }
    ]
    code, forced = apply(raw, path, widget(name, image="b", size=1), "bob", force=True)
    assert code == 200, forced
    assert forced["spec"] == {"image": "b", "size": 1}
    owners = managers(forced)
    assert owners["alice"]["fieldsV1"] == {"f:spec": {"f:size": {}}}  # shared, never conflicted
    assert owners["bob"]["fieldsV1"] == {"f:spec": {"f:image": {}, "f:size": {}}}


def test_several_conflicts_are_listed_per_manager(raw: Raw, name: str) -> None:
    path = f"{WIDGETS}/{name}"
    assert apply(raw, path, widget(name, image="a", size=1), "alice")[0] == 201
    code, status = apply(raw, path, widget(name, image="b", size=2), "bob")
    assert code == 409
    assert status["message"] == (
        'Apply failed with 2 conflicts: conflicts with "alice":\n- .spec.image\n- .spec.size'
    )


def test_omitted_fields_are_removed_unless_another_manager_owns_them(raw: Raw, name: str) -> None:
    path = f"{WIDGETS}/{name}"
    ports = [{"name": "http", "port": 80}]
    assert apply(raw, path, widget(name, image="a", args=["x"], ports=ports), "alice")[0] == 201
    metrics = [{"name": "metrics", "port": 9090}]
    code, both = apply(raw, path, widget(name, args=["x"], ports=metrics), "bob")
    assert code == 200, both
    assert both["spec"]["ports"] == [*ports, *metrics]  # merged by the list-map key
    code, after = apply(raw, path, widget(name, size=3), "alice")
    assert code == 200, after["message"]
    assert after["spec"] == {"args": ["x"], "ports": metrics, "size": 3}  # bob owns args too
    assert managers(after)["alice"]["fieldsV1"] == {"f:spec": {"f:size": {}}}


def test_update_managers_conflict_with_their_api_version(raw: Raw, name: str) -> None:
    path = f"{WIDGETS}/{name}"
    assert apply(raw, path, widget(name, image="a"), "alice")[0] == 201
    patch = json.dumps({"spec": {"image": "edited"}}).encode()
    code, edited = raw.send("PATCH", f"{path}?fieldManager=kubectl-edit", patch, MERGE)
    assert code == 200
    owners = managers(edited)
    assert owners["kubectl-edit"]["operation"] == "Update"
    assert owners["kubectl-edit"]["fieldsV1"] == {"f:spec": {"f:image": {}}}
    assert "alice" not in owners  # an update takes the fields it sets
    code, status = apply(raw, path, widget(name, image="a"), "alice")
    assert code == 409
    assert status["message"] == (
        'Apply failed with 1 conflict: conflict with "kubectl-edit" using ssa.example/v1: '
        ".spec.image"
    )


def test_create_with_a_field_manager_records_an_update(raw: Raw, name: str) -> None:
    body = json.dumps(widget(name, image="a")).encode()
    code, created = raw.send("POST", f"{WIDGETS}?fieldManager=kubectl-create", body)
    assert code == 201
    assert managers(created)["kubectl-create"]["fieldsV1"] == {"f:spec": {".": {}, "f:image": {}}}
    code, plain = raw.send("POST", WIDGETS, json.dumps(widget(f"{name}-2", image="a")).encode())
    assert code == 201
    assert "managedFields" not in plain["metadata"]


def test_first_apply_to_an_untracked_object_conflicts_with_before_first_apply(
    raw: Raw, name: str
) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "1"}}
    assert raw.send("POST", CMS, json.dumps(body).encode())[0] == 201
    changed = copy.deepcopy(body)
    changed["data"]["k"] = "2"
    code, status = apply(raw, f"{CMS}/{name}", changed, "alice")
    assert code == 409
    assert 'conflict with "before-first-apply" using v1: .data.k' in status["message"]
    code, same = apply(raw, f"{CMS}/{name}", body, "alice")
    assert code == 200
    assert set(managers(same)) == {"alice", "before-first-apply"}


def test_managed_fields_can_be_cleared(raw: Raw, name: str) -> None:
    path = f"{WIDGETS}/{name}"
    assert apply(raw, path, widget(name, image="a"), "alice")[0] == 201
    cleared = json.dumps({"metadata": {"managedFields": [{}]}}).encode()
    code, obj = raw.send("PATCH", path, cleared, MERGE)
    assert code == 200
    assert "managedFields" not in obj["metadata"]


def test_status_subresource_apply(raw: Raw, name: str) -> None:
    path = f"{WIDGETS}/{name}"
    assert apply(raw, path, widget(name, image="a"), "alice")[0] == 201
    body = {**widget(name), "status": {"phase": "Ready"}}
    code, obj = apply(raw, f"{path}/status", body, "controller")
    assert code == 200, obj
    assert obj["status"] == {"phase": "Ready"}
    assert obj["spec"] == {"image": "a"}
    entry = managers(obj)["controller"]
    assert entry["subresource"] == "status"
    assert entry["fieldsV1"] == {"f:status": {"f:phase": {}}}


@pytest.fixture
def core(api: RunningServer) -> Iterator[kubernetes.client.CoreV1Api]:
    client = kubernetes.config.new_client_from_config(config_file=str(api.kubeconfig))
    try:
        yield kubernetes.client.CoreV1Api(client)
    finally:
        client.close()


def test_official_client_reads_managed_fields_of_merged_containers(
    core: kubernetes.client.CoreV1Api, name: str
) -> None:
    # A suspended, never started Job's pod template: kube lets an update change its scheduling
    # gates (a list keyed by name), not a Pod's containers nor a Job's.
    def job(gate: str) -> dict[str, Any]:
        pod = {
            "restartPolicy": "Never",
            "containers": [{"name": "main", "image": "img"}],
            "schedulingGates": [{"name": gate}],
        }
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name},
            "spec": {"suspend": True, "template": {"spec": pod}},
        }

    batch = kubernetes.client.BatchV1Api(core.api_client)
    kwargs: dict[str, Any] = {"_content_type": "application/apply-patch+yaml"}
    batch.patch_namespaced_job(name, "default", job("a"), field_manager="one", **kwargs)
    got = batch.patch_namespaced_job(name, "default", job("b"), field_manager="two", **kwargs)
    assert [g.name for g in got.spec.template.spec.scheduling_gates] == ["a", "b"]
    fields = {e.manager: (e.operation, e.fields_v1) for e in got.metadata.managed_fields}
    two = fields["two"][1]["f:spec"]["f:template"]["f:spec"]
    assert fields["two"][0] == "Apply"
    assert two["f:schedulingGates"] == {'k:{"name":"b"}': {".": {}, "f:name": {}}}
    assert two["f:containers"] == {'k:{"name":"main"}': {".": {}, "f:image": {}, "f:name": {}}}
    gates = fields["one"][1]["f:spec"]["f:template"]["f:spec"]["f:schedulingGates"]
    assert gates.keys() == {'k:{"name":"a"}'}


def test_writes_to_a_tracked_object_are_recorded_under_the_user_agent(raw: Raw, name: str) -> None:
    path = f"{WIDGETS}/{name}"
    code, made = apply(raw, path, widget(name, image="a"), "alice")
    assert code == 201
    made["status"] = {"phase": "Running"}
    agent = {"User-Agent": "my-controller/1.0 (linux/amd64)"}
    code, updated = raw.send("PUT", f"{path}/status", json.dumps(made).encode(), agent)
    assert code == 200, updated
    entry = managers(updated)["my-controller"]
    assert (entry["operation"], entry["subresource"]) == ("Update", "status")
    assert entry["fieldsV1"] == {"f:status": {".": {}, "f:phase": {}}}
    assert managers(updated)["alice"]["fieldsV1"] == {"f:spec": {"f:image": {}}}


def test_a_deep_write_with_a_field_manager_is_refused(raw: Raw, name: str) -> None:
    deep: Any = "x"
    for _ in range(150):
        deep = {"a": deep}
    body = widget(name, image="a")
    body["metadata"]["unknown"] = deep  # reaches the write: metadata is not pruned
    code, status = raw.send("POST", f"{WIDGETS}?fieldManager=m", json.dumps(body).encode())
    assert (code, status["reason"]) == (400, "BadRequest"), status
    assert "deeper than 100 levels" in status["message"]


def test_a_scale_write_is_recorded_with_its_subresource(raw: Raw) -> None:
    # The CRD of test_scenarios has a scale subresource on spec.replicas.
    jobs = "/apis/kubeflow.org/v1/namespaces/default/pytorchjobs"
    assert raw.send("POST", CRDS, json.dumps(SCENARIO_CRD).encode())[0] in (201, 409)
    name = f"s-{uuid.uuid4().hex[:8]}"
    job = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": name}}
    assert (
        apply(raw, f"{jobs}/{name}", {**job, "spec": {"image": "x", "replicas": 1}}, "a")[0] == 201
    )
    scale = json.dumps({"spec": {"replicas": 3}}).encode()
    path = f"{jobs}/{name}/scale?fieldManager=kubectl-scale"
    assert raw.send("PATCH", path, scale, MERGE)[0] == 200
    code, got = raw.send("GET", f"{jobs}/{name}")
    entry = managers(got)["kubectl-scale"]
    assert (entry["operation"], entry["subresource"]) == ("Update", "scale")
    assert entry["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    code, status = apply(raw, f"{jobs}/{name}", {**job, "spec": {"image": "x", "replicas": 1}}, "a")
    assert code == 409
    assert status["message"] == (
        'Apply failed with 1 conflict: conflict with "kubectl-scale" with subresource "scale" '
        "using kubeflow.org/v1: .spec.replicas"
    )


def test_a_yaml_body_applies_and_its_nulls_are_fields_not_set(raw: Raw, name: str) -> None:
    body = (
        "apiVersion: ssa.example/v1\nkind: Widget\n"
        f"metadata:\n  name: {name}\nspec:\n  image: a\n  size: null\n"
    )
    code, made = raw.send("PATCH", f"{WIDGETS}/{name}?fieldManager=y", body.encode(), APPLY)
    assert code == 201, made
    assert made["spec"] == {"image": "a"}
    assert managers(made)["y"]["fieldsV1"] == {"f:spec": {"f:image": {}}}


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (b"a: 2024-01-01T00:00:00Z\n", "datetime"),
        (b"a: 1\n---\nb: 2\n", "one YAML or JSON object"),
        (
            b"a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
            b"c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c]\n"
            b"e: [*d, *d, *d, *d, *d, *d, *d, *d, *d]\n",
            "aliases",
        ),
        (b"a: [", "not valid YAML"),
    ],
    ids=["timestamp", "two-documents", "alias-bomb", "malformed"],
)
def test_yaml_bodies_json_cannot_carry_are_400(raw: Raw, name: str, body: bytes, why: str) -> None:
    code, status = raw.send("PATCH", f"{WIDGETS}/{name}?fieldManager=y", body, APPLY)
    assert (code, status["reason"]) == (400, "BadRequest")
    assert why in status["message"]


def test_lightkube_apply_conflict_and_force(api: RunningServer, name: str) -> None:
    def config_map(value: str) -> ConfigMap:
        return ConfigMap(metadata=ObjectMeta(name=name, namespace="default"), data={"k": value})

    async def scenario() -> tuple[int, str, dict[str, str]]:
        client = AsyncClient(config=KubeConfig.from_file(api.kubeconfig))
        try:
            await client.apply(config_map("1"), field_manager="first")
            try:
                await client.apply(config_map("2"), field_manager="second")
            except ApiError as exc:
                code, message = exc.status.code, exc.status.message
            forced = await client.apply(config_map("2"), field_manager="second", force=True)
            return code or 0, message or "", dict(forced.data or {})
        finally:
            await client.close()

    code, message, data = api.run(scenario())
    assert code == 409
    assert message == 'Apply failed with 1 conflict: conflict with "first": .data.k'
    assert data == {"k": "2"}


_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from(["a", "b", "TCP"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["name", "port", "image", "x"]), inner, max_size=3)
    ),
    max_leaves=10,
)
_FIELDS = ["spec", "data", "metadata", "labels", "ports", "containers", "image", "name", "status"]
_KINDS = {
    WIDGETS: ("ssa.example/v1", "Widget"),
    CMS: ("v1", "ConfigMap"),
    "/api/v1/namespaces/default/pods": ("v1", "Pod"),
}


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    target=st.sampled_from(sorted(_KINDS)),
    edits=st.lists(
        st.tuples(
            st.lists(st.sampled_from(_FIELDS), min_size=1, max_size=3),
            _VALUES,
            st.sampled_from(["fa", "fb", "merge"]),
            st.booleans(),
        ),
        min_size=1,
        max_size=3,
    ),
)
def test_no_apply_makes_the_server_fail(
    raw: Raw, target: str, edits: list[tuple[list[str], Any, str, bool]]
) -> None:
    name = f"f-{uuid.uuid4().hex[:8]}"
    api_version, kind = _KINDS[target]
    for path, value, manager, force in edits:
        body: dict[str, Any] = {"apiVersion": api_version, "kind": kind}
        node = body
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = value
        meta = body.get("metadata")
        body["metadata"] = {**(meta if isinstance(meta, dict) else {}), "name": name}
        if manager == "merge":  # an ordinary write by an Update manager
            where = f"{target}/{name}?fieldManager=fu"
            code, answer = raw.send("PATCH", where, json.dumps(body).encode(), MERGE)
            assert code < 500, answer
            continue
        code, answer = apply(raw, f"{target}/{name}", body, manager, force=force)
        assert code < 500, answer
        if code in (200, 201):
            _assert_owned_leaves_hold_the_applied_values(answer, body, manager)
            again_code, again = apply(raw, f"{target}/{name}", body, manager, force=force)
            assert again_code == 200, again
            assert again["metadata"]["resourceVersion"] == answer["metadata"]["resourceVersion"]


def test_a_write_whose_only_change_is_pruned_changes_nothing(raw: Raw, name: str) -> None:
    path = f"{WIDGETS}/{name}"
    code, made = apply(raw, path, widget(name, image="a"), "alice")
    assert code == 201
    pruned = json.dumps({"spec": {"unknown": {"x": 1}}}).encode()
    code, same = raw.send("PATCH", path, pruned, MERGE)
    assert code == 200, same
    assert same["metadata"]["generation"] == 1
    assert same["metadata"]["resourceVersion"] == made["metadata"]["resourceVersion"]


def _assert_owned_leaves_hold_the_applied_values(
    live: dict[str, Any], body: dict[str, Any], manager: str
) -> None:
    entry = next(e for e in live["metadata"]["managedFields"] if e["manager"] == manager)
    owned = fieldsets.decode(entry["fieldsV1"])
    for path in owned - fieldsets.ancestors(owned):
        applied = fieldsets.read(apply_module.decode(json.dumps(body).encode()), path)
        assert fieldsets.read(live, path) == applied, fieldsets.text(path)
