"""Discovery, health, the written kubeconfig, and status-subresource rules of built-in kinds."""

from __future__ import annotations

import copy
import stat
import threading
from datetime import UTC, datetime
from pathlib import Path

import kubernetes
import pytest
from kubernetes import client

from tests.integration.cluster.apiserver import drivers
from tests.integration.cluster.apiserver.conftest import RunningServer
from tests.integration.cluster.apiserver.drivers import Driver
from tests.integration.cluster.apiserver.test_scenarios import CRD, is_gone, obj
from tests.polling import wait_for
from trainop.kube.podlogs import LogRef


def test_kubeconfig_is_private_and_loads_unchanged(api: RunningServer) -> None:
    mode = stat.S_IMODE(api.kubeconfig.stat().st_mode)
    assert mode == 0o600
    kubernetes.config.load_kube_config(config_file=str(api.kubeconfig))
    version = client.VersionApi().get_code()
    assert version.git_version.startswith("v1.")


def test_discovery_lists_built_in_and_custom_resources(driver: Driver, api: RunningServer) -> None:
    ac = kubernetes.config.new_client_from_config(config_file=str(api.kubeconfig))
    core = {r.name: r for r in client.CoreV1Api(ac).get_api_resources().resources}
    assert core["pods"].namespaced
    assert core["pods"].kind == "Pod"
    assert "po" in core["pods"].short_names
    assert {"pods/status", "pods/log"} <= core.keys()
    assert "watch" in core["configmaps"].verbs
    assert not core["namespaces"].namespaced
    names = [i["metadata"]["name"] for i in driver.list(drivers.CRDS)["items"]]
    if CRD["metadata"]["name"] not in names:
        driver.create(drivers.CRDS, copy.deepcopy(CRD))
    groups = {g.name for g in client.ApisApi(ac).get_api_versions().groups}
    assert {"kubeflow.org", "coordination.k8s.io", "apiextensions.k8s.io"} <= groups
    custom = client.CustomObjectsApi(ac).get_api_resources("kubeflow.org", "v1")
    by_name = {r.name: r for r in custom.resources}
    assert by_name["pytorchjobs"].kind == "PyTorchJob"
    assert {"pytorchjobs/status", "pytorchjobs/scale"} <= by_name.keys()


def test_pod_status_subresource_rules(driver: Driver, ns: str) -> None:
    created = driver.create(drivers.PODS, obj(drivers.PODS, "s"), ns)
    assert created["status"]["phase"] == "Pending"
    created["status"] = {"phase": "Running"}
    created["spec"]["containers"][0]["image"] = "changed"
    after_status = driver.replace(drivers.PODS, "s", created, ns, status=True)
    assert after_status["status"]["phase"] == "Running"
    assert after_status["spec"]["containers"][0]["image"] == "python:3.11"  # ignored
    after_status["status"] = {"phase": "Failed"}
    after_main = driver.replace(drivers.PODS, "s", after_status, ns)
    assert after_main["status"]["phase"] == "Running"  # main resource ignores status
    running = driver.list(drivers.PODS, ns, field_selector="status.phase=Running")
    assert [i["metadata"]["name"] for i in running["items"]] == ["s"]


def test_deleting_a_crd_stops_serving_its_resource(driver: Driver, ns: str) -> None:
    crd = copy.deepcopy(CRD)
    crd["metadata"]["name"] = "tfjobs.example.org"
    crd["spec"]["group"] = "example.org"
    crd["spec"]["names"] = {"plural": "tfjobs", "singular": "tfjob", "kind": "TFJob"}
    driver.create(drivers.CRDS, crd)
    tfjobs = drivers.Res("example.org", "v1", "tfjobs", "TFJob")
    driver.create(tfjobs, obj(tfjobs, "t", spec={"image": "x"}), ns)
    driver.delete(drivers.CRDS, "tfjobs.example.org")
    wait_for(
        lambda: is_gone(driver, drivers.CRDS, "tfjobs.example.org", ""),
        timeout=5,
        what="the CRD gone",
    )
    assert is_gone(driver, tfjobs, "t", ns)


def test_many_concurrent_watchers_all_see_every_event(driver: Driver, ns: str) -> None:
    start = driver.list(drivers.CONFIGMAPS, ns)["metadata"]["resourceVersion"]
    results: list[list[str]] = []

    def watch_one() -> None:
        own = drivers.make(driver.name, kubeconfig)
        try:
            events = own.watch(drivers.CONFIGMAPS, ns, start, timeout=10, stop_after=3)
            results.append([f"{t}:{o['metadata']['name']}" for t, o in events])
        finally:
            own.close()

    kubeconfig = Path(driver_kubeconfig(driver))
    threads = [threading.Thread(target=watch_one) for _ in range(20)]
    for t in threads:
        t.start()
    for name in ("a", "b", "c"):
        driver.create(drivers.CONFIGMAPS, obj(drivers.CONFIGMAPS, name), ns)
    for t in threads:
        t.join(timeout=15)
    assert len(results) == 20
    assert all(r == ["ADDED:a", "ADDED:b", "ADDED:c"] for r in results)


def driver_kubeconfig(driver: Driver) -> str:
    """The kubeconfig a driver was made from (both keep it)."""
    return str(driver.kubeconfig)


def test_delete_collection_with_label_selector(api: RunningServer, ns: str) -> None:
    core = client.CoreV1Api(
        kubernetes.config.new_client_from_config(config_file=str(api.kubeconfig))
    )
    for name, team in (("x", "a"), ("y", "a"), ("z", "b")):
        core.create_namespaced_config_map(
            ns, {"metadata": {"name": name, "labels": {"team": team}}}
        )
    core.delete_collection_namespaced_config_map(ns, label_selector="team=a")
    left = [c.metadata.name for c in core.list_namespaced_config_map(ns).items]
    assert left == ["z"]


def test_pod_log_options(api: RunningServer, driver: Driver, ns: str) -> None:
    pod = obj(
        drivers.PODS,
        "two",
        spec={"containers": [{"name": "a", "image": "i"}, {"name": "b", "image": "i"}]},
    )
    driver.create(drivers.PODS, pod, ns)
    at = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    api.call(lambda: api.logs.write(LogRef(namespace=ns, pod="two", container="b"), "hi", at=at))
    core = client.CoreV1Api(
        kubernetes.config.new_client_from_config(config_file=str(api.kubeconfig))
    )
    text = core.read_namespaced_pod_log("two", ns, container="b", timestamps=True)
    assert text == "2026-01-02T03:04:05.000000Z hi\n"
    with pytest.raises(client.ApiException) as no_container:
        core.read_namespaced_pod_log("two", ns)
    assert no_container.value.status == 400
    assert "choose one of: [a b]" in no_container.value.body
    with pytest.raises(client.ApiException) as no_previous:
        core.read_namespaced_pod_log("two", ns, container="a", previous=True)
    assert no_previous.value.status == 400
