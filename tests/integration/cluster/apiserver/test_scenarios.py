"""The embedded API server as clients see it, through the official client and lightkube.

Every test runs twice (``driver`` is parametrised): once with the official ``kubernetes``
client's typed APIs and ``watch.Watch``, once with lightkube's ``AsyncClient``.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.integration.cluster.apiserver import drivers
from tests.integration.cluster.apiserver.conftest import RunningServer
from tests.integration.cluster.apiserver.drivers import ApiFailureError, Driver
from tests.polling import wait_for
from trainop.kube.podlogs import LogRef

CONTAINER = {"name": "main", "image": "python:3.11", "command": ["python", "-c", "print(1)"]}

SAMPLES: dict[drivers.Res, dict[str, Any]] = {
    drivers.PODS: {"spec": {"containers": [CONTAINER]}},
    drivers.SERVICES: {
        "spec": {"ports": [{"port": 80, "targetPort": 8080}], "selector": {"app": "x"}}
    },
    drivers.ENDPOINTS: {"subsets": [{"addresses": [{"ip": "127.0.0.1"}], "ports": [{"port": 80}]}]},
    drivers.CONFIGMAPS: {"data": {"k": "v"}},
    drivers.SECRETS: {"stringData": {"k": "v"}, "type": "Opaque"},
    drivers.SERVICEACCOUNTS: {},
    drivers.EVENTS: {
        "involvedObject": {"kind": "Pod", "name": "p"},
        "reason": "Test",
        "message": "hello",
        "type": "Normal",
    },
    drivers.NEW_EVENTS: {
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "t",
        "reportingInstance": "t-1",
        "action": "Test",
        "reason": "Test",
        "type": "Normal",
    },
    drivers.LEASES: {"spec": {"holderIdentity": "me", "leaseDurationSeconds": 15}},
    drivers.ROLES: {"rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]},
    drivers.ROLEBINDINGS: {
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
        "subjects": [{"kind": "ServiceAccount", "name": "s"}],
    },
    drivers.HPAS: {
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
            "minReplicas": 1,
            "maxReplicas": 3,
        }
    },
}

CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "pytorchjobs.kubeflow.org"},
    "spec": {
        "group": "kubeflow.org",
        "scope": "Namespaced",
        "names": {
            "plural": "pytorchjobs",
            "singular": "pytorchjob",
            "kind": "PyTorchJob",
            "listKind": "PyTorchJobList",
            "shortNames": ["ptj"],
        },
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {
                    "status": {},
                    "scale": {
                        "specReplicasPath": ".spec.replicas",
                        "statusReplicasPath": ".status.replicas",
                        "labelSelectorPath": ".status.selector",
                    },
                },
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["image"],
                                "properties": {
                                    "image": {"type": "string"},
                                    "replicas": {"type": "integer", "minimum": 0, "default": 1},
                                    "runPolicy": {
                                        "type": "object",
                                        "x-kubernetes-preserve-unknown-fields": True,
                                    },
                                },
                            },
                            "status": {
                                "type": "object",
                                "properties": {
                                    "replicas": {"type": "integer"},
                                    "selector": {"type": "string"},
                                    "phase": {"type": "string"},
                                },
                            },
                        },
                    }
                },
            }
        ],
    },
}


def obj(res: drivers.Res, name: str, **extra: Any) -> dict[str, Any]:
    """A body of kind ``res`` named ``name`` with the sample content."""
    body = {"apiVersion": res.api_version, "kind": res.kind, "metadata": {"name": name}}
    body.update(copy.deepcopy(SAMPLES.get(res, {})))
    for key, value in extra.items():
        body[key] = value
    return body


def is_gone(driver: Driver, res: drivers.Res, name: str, ns: str) -> bool:
    try:
        driver.get(res, name, ns)
    except ApiFailureError as exc:
        return exc.code == 404
    return False


@pytest.fixture
def crd(driver: Driver) -> drivers.Res:
    """The test PyTorchJob CRD, installed (idempotently) and established."""
    names = [i["metadata"]["name"] for i in driver.list(drivers.CRDS)["items"]]
    if CRD["metadata"]["name"] not in names:
        created = driver.create(drivers.CRDS, copy.deepcopy(CRD))
        conditions = {c["type"]: c["status"] for c in created["status"]["conditions"]}
        assert conditions["Established"] == "True"
    return drivers.PYTORCHJOBS


# ---- CRUD -------------------------------------------------------------------------------


@pytest.mark.parametrize("res", list(SAMPLES), ids=lambda r: f"{r.group or 'core'}.{r.plural}")
def test_crud_every_served_kind(driver: Driver, ns: str, res: drivers.Res) -> None:
    created = driver.create(
        res, obj(res, "one", metadata={"name": "one", "labels": {"a": "1"}}), ns
    )
    meta = created["metadata"]
    assert meta["uid"]
    assert meta["resourceVersion"]
    assert meta["creationTimestamp"]
    assert meta["namespace"] == ns
    got = driver.get(res, "one", ns)
    assert got["metadata"]["uid"] == meta["uid"]
    names = [i["metadata"]["name"] for i in driver.list(res, ns)["items"]]
    # every namespace also gets a ``default`` ServiceAccount (serviceaccounts.py)
    assert [n for n in names if (res, n) != (drivers.SERVICEACCOUNTS, "default")] == ["one"]
    got["metadata"]["labels"] = {"a": "2"}
    updated = driver.replace(res, "one", got, ns)
    assert updated["metadata"]["labels"] == {"a": "2"}
    assert int(updated["metadata"]["resourceVersion"]) > int(meta["resourceVersion"])
    driver.delete(res, "one", ns)
    with pytest.raises(ApiFailureError) as info:
        driver.get(res, "one", ns)
    assert info.value.code == 404
    assert info.value.body["reason"] == "NotFound"


def test_create_generate_name_and_already_exists(driver: Driver, ns: str) -> None:
    body = obj(drivers.CONFIGMAPS, "")
    body["metadata"] = {"generateName": "gen-"}
    made = driver.create(drivers.CONFIGMAPS, body, ns)
    assert made["metadata"]["name"].startswith("gen-")
    assert len(made["metadata"]["name"]) == 9
    driver.create(drivers.CONFIGMAPS, obj(drivers.CONFIGMAPS, "dup"), ns)
    with pytest.raises(ApiFailureError) as info:
        driver.create(drivers.CONFIGMAPS, obj(drivers.CONFIGMAPS, "dup"), ns)
    assert (info.value.code, info.value.body["reason"]) == (409, "AlreadyExists")


def test_create_in_missing_namespace_is_404(driver: Driver) -> None:
    with pytest.raises(ApiFailureError) as info:
        driver.create(drivers.CONFIGMAPS, obj(drivers.CONFIGMAPS, "x"), "no-such-namespace")
    assert info.value.code == 404


def test_stale_update_is_conflict(driver: Driver, ns: str) -> None:
    first = driver.create(drivers.CONFIGMAPS, obj(drivers.CONFIGMAPS, "c"), ns)
    fresh = driver.get(drivers.CONFIGMAPS, "c", ns)
    fresh["data"] = {"k": "new"}
    driver.replace(drivers.CONFIGMAPS, "c", fresh, ns)
    first["data"] = {"k": "stale"}
    with pytest.raises(ApiFailureError) as info:
        driver.replace(drivers.CONFIGMAPS, "c", first, ns)
    assert (info.value.code, info.value.body["reason"]) == (409, "Conflict")
    assert driver.get(drivers.CONFIGMAPS, "c", ns)["data"] == {"k": "new"}


# ---- list: selectors and paging ---------------------------------------------------------


def test_label_and_field_selectors(driver: Driver, ns: str) -> None:
    for name, labels in (
        ("a", {"env": "prod", "tier": "web"}),
        ("b", {"env": "dev"}),
        ("c", {"tier": "db"}),
    ):
        driver.create(
            drivers.PODS, obj(drivers.PODS, name, metadata={"name": name, "labels": labels}), ns
        )

    def names(**params: Any) -> list[str]:
        return [i["metadata"]["name"] for i in driver.list(drivers.PODS, ns, **params)["items"]]

    assert names(label_selector="env=prod") == ["a"]
    assert names(label_selector="env in (prod,dev)") == ["a", "b"]
    assert names(label_selector="env notin (prod),tier") == ["c"]
    assert names(label_selector="!env") == ["c"]
    assert names(label_selector="env!=dev") == ["a", "c"]
    assert names(field_selector="metadata.name=b") == ["b"]
    assert names(field_selector="status.phase=Pending,metadata.name!=a") == ["b", "c"]


def test_list_paging_with_limit_and_continue(driver: Driver, ns: str) -> None:
    for i in range(5):
        driver.create(drivers.CONFIGMAPS, obj(drivers.CONFIGMAPS, f"cm-{i}"), ns)
    page = driver.list(drivers.CONFIGMAPS, ns, limit=2)
    seen = [i["metadata"]["name"] for i in page["items"]]
    rv = page["metadata"]["resourceVersion"]
    while page["metadata"].get("_continue") or page["metadata"].get("continue"):
        token = page["metadata"].get("_continue") or page["metadata"]["continue"]
        page = driver.list(drivers.CONFIGMAPS, ns, limit=2, _continue=token)
        assert page["metadata"]["resourceVersion"] == rv
        seen += [i["metadata"]["name"] for i in page["items"]]
    assert seen == [f"cm-{i}" for i in range(5)]


# ---- watch ------------------------------------------------------------------------------


def test_watch_resumes_from_resource_version(driver: Driver, ns: str) -> None:
    start = driver.list(drivers.CONFIGMAPS, ns)["metadata"]["resourceVersion"]
    driver.create(drivers.CONFIGMAPS, obj(drivers.CONFIGMAPS, "w"), ns)
    driver.patch(drivers.CONFIGMAPS, "w", {"data": {"k": "2"}}, "merge", ns)
    driver.delete(drivers.CONFIGMAPS, "w", ns)
    events = driver.watch(drivers.CONFIGMAPS, ns, start, timeout=2, stop_after=3)
    assert [t for t, _ in events] == ["ADDED", "MODIFIED", "DELETED"]
    rvs = [int(o["metadata"]["resourceVersion"]) for _, o in events]
    assert rvs == sorted(rvs)
    assert rvs[0] > int(start)
    assert events[1][1]["data"] == {"k": "2"}


def test_watch_without_resource_version_starts_with_current_state(driver: Driver, ns: str) -> None:
    driver.create(drivers.CONFIGMAPS, obj(drivers.CONFIGMAPS, "now"), ns)
    events = driver.watch(drivers.CONFIGMAPS, ns, None, timeout=1, stop_after=1)
    assert [(t, o["metadata"]["name"]) for t, o in events] == [("ADDED", "now")]


def test_watch_sends_bookmarks(driver: Driver, ns: str) -> None:
    start = driver.list(drivers.CONFIGMAPS, ns)["metadata"]["resourceVersion"]
    events = driver.watch(drivers.CONFIGMAPS, ns, start, bookmarks=True, timeout=3, stop_after=1)
    assert events[0][0] == "BOOKMARK"
    assert int(events[0][1]["metadata"]["resourceVersion"]) >= int(start)


def test_watch_too_old_is_410_then_relist_works(driver: Driver, ns: str) -> None:
    old = driver.list(drivers.CONFIGMAPS, ns)["metadata"]["resourceVersion"]
    for i in range(110):  # the test server keeps 100 events of history
        driver.create(drivers.CONFIGMAPS, obj(drivers.CONFIGMAPS, f"h-{i}"), ns)
    with pytest.raises(ApiFailureError) as info:
        driver.watch(drivers.CONFIGMAPS, ns, old, timeout=2, stop_after=1)
    assert info.value.code == 410
    relisted = driver.list(drivers.CONFIGMAPS, ns)
    assert len(relisted["items"]) == 110
    driver.create(drivers.CONFIGMAPS, obj(drivers.CONFIGMAPS, "after"), ns)
    events = driver.watch(
        drivers.CONFIGMAPS, ns, relisted["metadata"]["resourceVersion"], timeout=2, stop_after=1
    )
    assert [(t, o["metadata"]["name"]) for t, o in events] == [("ADDED", "after")]


# ---- patch ------------------------------------------------------------------------------


def test_every_patch_type(driver: Driver, ns: str) -> None:
    # A suspended, never started Job's pod template: kube lets an update change its scheduling
    # gates (merged by name), and nothing of a Pod's own spec nor of a running Job's template.
    template = {
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {**CONTAINER, "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]},
                {"name": "side", "image": "busybox"},
            ],
            "schedulingGates": [{"name": "a"}, {"name": "b"}],
        }
    }
    spec = {"suspend": True, "template": template}
    driver.create(drivers.JOBS, obj(drivers.JOBS, "p", spec=spec), ns)
    merged = driver.patch(drivers.JOBS, "p", {"metadata": {"labels": {"x": "y"}}}, "merge", ns)
    assert merged["metadata"]["labels"]["x"] == "y"
    ops = [{"op": "add", "path": "/metadata/annotations", "value": {"note": "j"}}]
    assert driver.patch(drivers.JOBS, "p", ops, "json", ns)["metadata"]["annotations"] == {
        "note": "j"
    }
    containers = [
        {"name": "main", "env": [{"name": "B", "value": "20"}, {"name": "C", "value": "3"}]},
        {"name": "side", "$patch": "delete"},
    ]
    smp = {"spec": {"template": {"spec": {"containers": containers}}}}
    with pytest.raises(ApiFailureError) as refused:
        driver.patch(drivers.JOBS, "p", smp, "strategic", ns)
    assert refused.value.code == 422
    assert "spec.template: Invalid value" in str(refused.value)
    gates = [{"name": "c"}, {"name": "b", "$patch": "delete"}]
    smp = {"spec": {"template": {"spec": {"schedulingGates": gates}}}}
    result = driver.patch(drivers.JOBS, "p", smp, "strategic", ns)
    merged_gates = result["spec"]["template"]["spec"]["schedulingGates"]
    assert sorted(g["name"] for g in merged_gates) == ["a", "c"]
    assert [c["name"] for c in result["spec"]["template"]["spec"]["containers"]] == ["main", "side"]


def test_strategic_merge_on_custom_resource_is_415(
    driver: Driver, ns: str, crd: drivers.Res
) -> None:
    driver.create(crd, obj(crd, "j", spec={"image": "x"}), ns)
    with pytest.raises(ApiFailureError) as info:
        driver.patch(crd, "j", {"spec": {"replicas": 2}}, "strategic", ns)
    assert (info.value.code, info.value.body["reason"]) == (415, "UnsupportedMediaType")


# ---- deletion ---------------------------------------------------------------------------


def test_finalizers_hold_deletion_until_removed(driver: Driver, ns: str) -> None:
    driver.create(
        drivers.CONFIGMAPS,
        obj(drivers.CONFIGMAPS, "f", metadata={"name": "f", "finalizers": ["example.com/hold"]}),
        ns,
    )
    driver.delete(drivers.CONFIGMAPS, "f", ns)
    held = driver.get(drivers.CONFIGMAPS, "f", ns)
    assert held["metadata"]["deletionTimestamp"]
    driver.patch(drivers.CONFIGMAPS, "f", {"metadata": {"finalizers": None}}, "merge", ns)
    assert is_gone(driver, drivers.CONFIGMAPS, "f", ns)


def _owned(owner: dict[str, Any], name: str) -> dict[str, Any]:
    ref = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "blockOwnerDeletion": True,
    }
    return obj(drivers.CONFIGMAPS, name, metadata={"name": name, "ownerReferences": [ref]})


@pytest.mark.parametrize("policy", ["Background", "Foreground", "Orphan"])
def test_cascading_deletion(driver: Driver, ns: str, policy: str) -> None:
    owner = driver.create(drivers.CONFIGMAPS, obj(drivers.CONFIGMAPS, "owner"), ns)
    driver.create(drivers.CONFIGMAPS, _owned(owner, "child-1"), ns)
    child = driver.create(drivers.CONFIGMAPS, _owned(owner, "child-2"), ns)
    driver.create(drivers.CONFIGMAPS, _owned(child, "grandchild"), ns)
    driver.delete(drivers.CONFIGMAPS, "owner", ns, propagation=policy)
    wait_for(lambda: is_gone(driver, drivers.CONFIGMAPS, "owner", ns), timeout=5, what="owner gone")
    if policy == "Orphan":
        kept = driver.get(drivers.CONFIGMAPS, "child-1", ns)
        assert not kept["metadata"].get("ownerReferences")
        assert not is_gone(driver, drivers.CONFIGMAPS, "grandchild", ns)
        return
    for name in ("child-1", "child-2", "grandchild"):
        wait_for(
            lambda name=name: is_gone(driver, drivers.CONFIGMAPS, name, ns),
            timeout=5,
            what=f"{name} gone",
        )


def test_namespace_deletion_removes_its_content(driver: Driver, ns: str) -> None:
    driver.create(drivers.CONFIGMAPS, obj(drivers.CONFIGMAPS, "inside"), ns)
    driver.delete(drivers.NAMESPACES, ns)
    wait_for(lambda: is_gone(driver, drivers.NAMESPACES, ns, ""), timeout=5, what=f"{ns} gone")
    with pytest.raises(ApiFailureError) as info:
        driver.get(drivers.CONFIGMAPS, "inside", ns)
    assert info.value.code == 404


# ---- custom resources -------------------------------------------------------------------


def test_custom_resource_crud_with_status_and_scale(
    driver: Driver, ns: str, crd: drivers.Res
) -> None:
    made = driver.create(
        crd, obj(crd, "job", spec={"image": "py", "unknown": 1}, status={"phase": "ignored"}), ns
    )
    assert made["spec"] == {"image": "py", "replicas": 1}  # pruned and defaulted
    assert "status" not in made  # status is only set through /status
    assert made["metadata"]["generation"] == 1
    made["status"] = {"phase": "Running", "replicas": 1, "selector": "job=job"}
    with_status = driver.replace(crd, "job", made, ns, status=True)
    assert with_status["status"]["phase"] == "Running"
    assert with_status["metadata"]["generation"] == 1
    with_status["spec"]["replicas"] = 3
    with_status["status"] = {"phase": "Overwritten"}
    updated = driver.replace(crd, "job", with_status, ns)
    assert updated["spec"]["replicas"] == 3
    assert updated["metadata"]["generation"] == 2
    assert updated["status"]["phase"] == "Running"  # main resource ignores status
    scale = driver.scale(crd, "job", ns)
    assert scale["spec"]["replicas"] == 3
    assert scale["status"]["selector"] == "job=job"
    patched = driver.patch(crd, "job", {"spec": {"replicas": 4}}, "merge", ns)
    assert patched["spec"]["replicas"] == 4
    assert [i["metadata"]["name"] for i in driver.list(crd, ns)["items"]] == ["job"]
    driver.delete(crd, "job", ns)
    assert is_gone(driver, crd, "job", ns)


def test_custom_resource_failing_its_schema_is_422(
    driver: Driver, ns: str, crd: drivers.Res
) -> None:
    with pytest.raises(ApiFailureError) as info:
        driver.create(crd, obj(crd, "bad", spec={"replicas": -1}), ns)
    assert (info.value.code, info.value.body["reason"]) == (422, "Invalid")
    fields = {c["field"] for c in info.value.body["details"]["causes"]}
    assert fields == {"spec.image", "spec.replicas"}


# ---- logs -------------------------------------------------------------------------------


def test_pod_log_follow_and_tail(driver: Driver, ns: str, api: RunningServer) -> None:
    driver.create(drivers.PODS, obj(drivers.PODS, "logger"), ns)
    ref = LogRef(namespace=ns, pod="logger", container="main")
    api.call(lambda: [api.logs.write(ref, f"line {i}") for i in range(3)])
    assert "".join(driver.log("logger", ns, tail_lines=1)) == "line 2\n"
    stream = driver.log("logger", ns, follow=True)
    first = next(stream)
    assert first.startswith("line 0")
    api.call(lambda: (api.logs.write(ref, "line 3"), api.logs.close(ref)))
    rest = first + "".join(stream)
    assert rest == "line 0\nline 1\nline 2\nline 3\n"
