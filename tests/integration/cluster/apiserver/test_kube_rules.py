"""kube-apiserver's rules for built-in kinds, through the official client over HTTPS: integer
fields that the Go types cannot hold, what an update may change in a Pod, graceful pod
deletion with the request's grace period, ``Warning`` headers on dry runs, and Services'
cluster IPs (allocated, unique, headless kept, requested ones checked in kube's words,
immutable, released on delete, still held after a restart; note 010)."""

from __future__ import annotations

import copy
import ipaddress
import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from tests.integration.cluster.apiserver import rawhttps
from tests.integration.cluster.apiserver.conftest import RunningServer, start_server
from tests.integration.controller.cluster import start_cluster_server

UPDATABLE = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
    "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set "
    "to 1 if it was previously negative)"
)


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """A server with the real job CRDs (the webhook's rules on)."""
    yield from start_cluster_server(tmp_path_factory.mktemp("kube-rules"))


@pytest.fixture(scope="module")
def core(api: RunningServer) -> Iterator[k8s.CoreV1Api]:
    api_client = k8s_config.new_client_from_config(config_file=str(api.kubeconfig))
    yield k8s.CoreV1Api(api_client)
    api_client.close()


@pytest.fixture
def ns(core: k8s.CoreV1Api) -> str:
    name = f"r-{uuid.uuid4().hex[:8]}"
    core.create_namespace({"metadata": {"name": name}})
    return name


def _pod(name: str, **spec: Any) -> dict[str, Any]:
    container = {"name": "main", "image": "python:3.11", "command": ["sleep", "1"]}
    return {"metadata": {"name": name}, "spec": {"containers": [container], **spec}}


def _refused(call: Any, *args: Any, **kwargs: Any) -> tuple[int, dict[str, Any]]:
    with pytest.raises(k8s.ApiException) as info:
        call(*args, **kwargs)
    return info.value.status, json.loads(info.value.body)


# ---- integers the Go types cannot hold ---------------------------------------------------


class Raw:
    """Raw HTTPS with the kubeconfig's token: bodies the official client refuses to send (its
    models take no ``1e300`` for an integer, no unknown field), and the answer's headers."""

    def __init__(self, api: RunningServer) -> None:
        self.endpoint = rawhttps.Endpoint.load(api.kubeconfig)

    def send(
        self, method: str, path: str, body: str, ctype: str = "application/json"
    ) -> tuple[int, dict[str, Any], list[str]]:
        conn = self.endpoint.connect()
        headers = {"Authorization": f"Bearer {self.endpoint.token}", "Content-Type": ctype}
        conn.request(method, path, body=body.encode(), headers=headers)
        resp = conn.getresponse()
        answer = json.loads(resp.read())
        warnings = [v for k, v in resp.getheaders() if k.lower() == "warning"]
        conn.close()
        return resp.status, answer, warnings


@pytest.fixture(scope="module")
def raw(api: RunningServer) -> Raw:
    return Raw(api)


def test_an_int64_field_beyond_int64_is_refused_as_kube_decodes_it(
    core: k8s.CoreV1Api, raw: Raw, ns: str
) -> None:
    pods = f"/api/v1/namespaces/{ns}/pods"
    body = json.dumps(_pod("huge", terminationGracePeriodSeconds=12345))
    code, answer, _ = raw.send("POST", pods, body.replace("12345", "1e+300"))
    assert (code, answer["reason"]) == (400, "BadRequest")
    assert answer["message"] == (
        'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal number 1e+300 '
        "into Go struct field PodSpec.spec.terminationGracePeriodSeconds of type int64"
    )
    code, answer = _refused(
        core.create_namespaced_pod, ns, _pod("big", activeDeadlineSeconds=2**63)
    )
    assert (code, answer["reason"]) == (400, "BadRequest")
    assert answer["message"].endswith(
        "json: cannot unmarshal number 9223372036854775808 into Go struct field "
        "PodSpec.spec.activeDeadlineSeconds of type int64"
    )
    assert _refused(core.read_namespaced_pod, "huge", ns)[0] == 404
    fits = core.create_namespaced_pod(ns, _pod("fits", terminationGracePeriodSeconds=2**63 - 1))
    assert fits.spec.termination_grace_period_seconds == 2**63 - 1


def test_an_int32_field_and_a_fraction_are_refused_too(raw: Raw, ns: str) -> None:
    pods = f"/api/v1/namespaces/{ns}/pods"
    pod = _pod("port")
    pod["spec"]["containers"][0]["ports"] = [{"containerPort": 2**31}]
    code, answer, _ = raw.send("POST", pods, json.dumps(pod))
    assert code == 400
    assert answer["message"].endswith(
        "json: cannot unmarshal number 2147483648 into Go struct field "
        "ContainerPort.spec.containers.ports.containerPort of type int32"
    )
    code, answer, _ = raw.send("POST", pods, json.dumps(_pod("half", priority=1.5)))
    assert code == 400
    assert (
        "cannot unmarshal number 1.5 into Go struct field PodSpec.spec.priority of type int32"
        in (answer["message"])
    )


def test_a_merge_patch_to_an_out_of_range_integer_is_422_on_the_patch(
    core: k8s.CoreV1Api, raw: Raw, ns: str
) -> None:
    core.create_namespaced_pod(ns, _pod("p"))
    patch = '{"spec": {"activeDeadlineSeconds": 1e+300}}'
    path = f"/api/v1/namespaces/{ns}/pods/p"
    code, answer, _ = raw.send("PATCH", path, patch, "application/merge-patch+json")
    assert (code, answer["reason"]) == (422, "Invalid")
    assert answer["message"].startswith(' "" is invalid: patch: Invalid value: "{')
    assert answer["message"].endswith(
        "json: cannot unmarshal number 1e+300 into Go struct field "
        "PodSpec.spec.activeDeadlineSeconds of type int64"
    )
    assert answer["details"]["causes"][0]["field"] == "patch"


# ---- pod updates -------------------------------------------------------------------------


def test_a_pods_command_may_not_change(core: k8s.CoreV1Api, ns: str) -> None:
    core.create_namespaced_pod(ns, _pod("p"))
    patch = {"spec": {"containers": [{"name": "main", "command": ["sleep", "2"]}]}}
    code, body = _refused(core.patch_namespaced_pod, "p", ns, patch)
    assert (code, body["reason"]) == (422, "Invalid")
    head, _, diff = body["message"].partition("\n")
    assert head == f'Pod "p" is invalid: spec: Forbidden: {UPDATABLE}'
    assert diff.splitlines() == [
        "  core.PodSpec{",
        '- \tContainers[0].Command: []string{"sleep", "1"},',
        '+ \tContainers[0].Command: []string{"sleep", "2"},',
        "  }",
    ]
    (cause,) = body["details"]["causes"]
    assert (cause["field"], cause["reason"]) == ("spec", "FieldValueForbidden")
    assert core.read_namespaced_pod("p", ns).spec.containers[0].command == ["sleep", "1"]


def test_what_an_update_may_change_in_a_pod(core: k8s.CoreV1Api, ns: str) -> None:
    core.create_namespaced_pod(ns, _pod("p"))
    image = {"spec": {"containers": [{"name": "main", "image": "python:3.12"}]}}
    assert core.patch_namespaced_pod("p", ns, image).spec.containers[0].image == "python:3.12"
    deadline = {"spec": {"activeDeadlineSeconds": 10}}
    assert core.patch_namespaced_pod("p", ns, deadline).spec.active_deadline_seconds == 10
    lower = {"spec": {"activeDeadlineSeconds": 5}}
    assert core.patch_namespaced_pod("p", ns, lower).spec.active_deadline_seconds == 5
    code, body = _refused(core.patch_namespaced_pod, "p", ns, {"spec": deadline["spec"]})
    assert code == 422
    assert body["message"] == (
        'Pod "p" is invalid: spec.activeDeadlineSeconds: Invalid value: 10: must be less than '
        "or equal to previous value"
    )
    current = core.read_namespaced_pod("p", ns)
    tolerations = core.api_client.sanitize_for_serialization(current.spec.tolerations)
    added = [*tolerations, {"key": "example.com/x", "operator": "Exists"}]
    patch = [{"op": "replace", "path": "/spec/tolerations", "value": added}]
    patched = core.patch_namespaced_pod("p", ns, patch, _content_type="application/json-patch+json")
    assert [t.key for t in patched.spec.tolerations][-1] == "example.com/x"
    changed = copy.deepcopy(added)
    changed[-1]["operator"], changed[-1]["value"] = "Equal", "y"
    patch = [{"op": "replace", "path": "/spec/tolerations", "value": changed}]
    code, body = _refused(
        core.patch_namespaced_pod, "p", ns, patch, _content_type="application/json-patch+json"
    )
    assert body["message"] == (
        'Pod "p" is invalid: spec.tolerations: Forbidden: existing toleration can not be '
        "modified except its tolerationSeconds"
    )


def test_a_pod_may_not_gain_a_container_and_its_status_is_not_its_spec(
    core: k8s.CoreV1Api, ns: str
) -> None:
    core.create_namespaced_pod(ns, _pod("p"))
    body = core.api_client.sanitize_for_serialization(core.read_namespaced_pod("p", ns))
    body["spec"]["containers"].append({"name": "side", "image": "busybox"})
    code, answer = _refused(core.replace_namespaced_pod, "p", ns, body)
    assert (code, answer["message"]) == (
        422,
        'Pod "p" is invalid: spec.containers: Forbidden: pod updates may not add or remove '
        "containers",
    )
    status = {"status": {"phase": "Running"}}
    assert core.patch_namespaced_pod_status("p", ns, status).status.phase == "Running"


# ---- graceful deletion -------------------------------------------------------------------


def _stamp(pod: k8s.V1Pod) -> datetime:
    stamp = pod.metadata.deletion_timestamp
    assert isinstance(stamp, datetime)
    return stamp


def test_deletion_with_a_grace_period_sets_the_moment_it_ends(core: k8s.CoreV1Api, ns: str) -> None:
    core.create_namespaced_pod(ns, _pod("p", nodeName="trainop-local"))
    before = datetime.now(UTC).replace(microsecond=0)
    core.delete_namespaced_pod("p", ns, grace_period_seconds=7)
    pod = core.read_namespaced_pod("p", ns)  # still there: its kubelet has not stopped it
    assert pod.metadata.deletion_grace_period_seconds == 7
    stamp = _stamp(pod)
    assert before + timedelta(seconds=7) <= stamp <= datetime.now(UTC) + timedelta(seconds=7)
    core.delete_namespaced_pod("p", ns, grace_period_seconds=30)  # longer: changes nothing
    assert _stamp(core.read_namespaced_pod("p", ns)) == stamp
    core.delete_namespaced_pod("p", ns, grace_period_seconds=3)  # shorter: 4 s sooner
    shorter = core.read_namespaced_pod("p", ns)
    assert shorter.metadata.deletion_grace_period_seconds == 3
    assert _stamp(shorter) == stamp - timedelta(seconds=4)
    core.delete_namespaced_pod("p", ns, grace_period_seconds=0)
    code, _ = _refused(core.read_namespaced_pod, "p", ns)
    assert code == 404


def test_the_pods_own_grace_period_and_pods_deleted_at_once(core: k8s.CoreV1Api, ns: str) -> None:
    core.create_namespaced_pod(
        ns, _pod("own", nodeName="trainop-local", terminationGracePeriodSeconds=45)
    )
    core.delete_namespaced_pod("own", ns)
    assert core.read_namespaced_pod("own", ns).metadata.deletion_grace_period_seconds == 45
    core.create_namespaced_pod(ns, _pod("negative", nodeName="trainop-local"))
    core.delete_namespaced_pod("negative", ns, grace_period_seconds=-5)
    assert core.read_namespaced_pod("negative", ns).metadata.deletion_grace_period_seconds == 1
    core.create_namespaced_pod(ns, _pod("unbound"))
    core.create_namespaced_pod(ns, _pod("done", nodeName="trainop-local"))
    core.patch_namespaced_pod_status("done", ns, {"status": {"phase": "Succeeded"}})
    for name in ("unbound", "done"):  # not on a node, or finished: nothing to stop
        core.delete_namespaced_pod(name, ns, grace_period_seconds=30)
        assert _refused(core.read_namespaced_pod, name, ns)[0] == 404


# ---- dry runs ----------------------------------------------------------------------------


def _warnings(headers: Any) -> list[str]:
    return [v for k, v in headers.items() if k.lower() == "warning"]


def test_a_dry_run_answers_the_warnings_of_the_real_write(
    core: k8s.CoreV1Api, raw: Raw, ns: str
) -> None:
    pods = f"/api/v1/namespaces/{ns}/pods"
    pod = _pod("typo")
    pod["spec"]["containers"][0]["imag"] = "x"
    warned = ['299 - "unknown field \\"spec.containers[0].imag\\""']
    code, _, warnings = raw.send("POST", f"{pods}?dryRun=All", json.dumps(pod))
    assert (code, warnings) == (201, warned)
    assert _refused(core.read_namespaced_pod, "typo", ns)[0] == 404  # nothing stored
    code, _, warnings = raw.send("POST", pods, json.dumps(pod))
    assert (code, warnings) == (201, warned)  # what the real write answers
    patch = json.dumps({"spec": {"containers": [{"name": "main", "imag": "y"}]}})
    ctype = "application/strategic-merge-patch+json"
    code, _, warnings = raw.send("PATCH", f"{pods}/typo?dryRun=All", patch, ctype)
    assert (code, warnings) == (200, warned)


def test_a_dry_run_of_a_job_answers_the_webhooks_deprecation(api: RunningServer, ns: str) -> None:
    api_client = k8s_config.new_client_from_config(config_file=str(api.kubeconfig))
    custom = k8s.CustomObjectsApi(api_client)
    container = {"name": "pytorch", "image": "x", "command": ["python", "-c", "1"]}
    template = {"spec": {"containers": [container]}}
    job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "elastic"},
        "spec": {
            "elasticPolicy": {"minReplicas": 1, "maxReplicas": 2, "nProcPerNode": 1},
            "pytorchReplicaSpecs": {"Worker": {"replicas": 1, "template": template}},
        },
    }
    try:
        args = ("kubeflow.org", "v1", ns, "pytorchjobs", job)
        _, code, headers = custom.create_namespaced_custom_object_with_http_info(
            *args, dry_run="All"
        )
        assert code == 201
        deprecation = (
            '299 - "spec.elasticPolicy.nProcPerNode is deprecated, use spec.nprocPerNode instead"'
        )
        assert deprecation in _warnings(headers)
        _, code, headers = custom.create_namespaced_custom_object_with_http_info(*args)
        assert code == 201
        assert deprecation in _warnings(headers)  # the same as the real write's
    finally:
        api_client.close()


# ---- cluster IPs ---------------------------------------------------------------------------

RANGE = ipaddress.IPv4Network("10.96.0.0/12")


def _invalid(call: Any, *args: Any) -> tuple[int, str]:
    code, body = _refused(call, *args)
    assert body["reason"] == "Invalid"
    return code, str(body["message"])


def _service(name: str, cluster_ip: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"selector": {"app": name}, "ports": [{"port": 80}]}
    if cluster_ip is not None:
        spec["clusterIP"] = cluster_ip
    return {"metadata": {"name": name}, "spec": spec}


def test_a_service_gets_a_free_address_of_the_range(core: k8s.CoreV1Api, ns: str) -> None:
    first = core.create_namespaced_service(ns, _service("a")).spec
    second = core.create_namespaced_service(ns, _service("b")).spec
    for spec in (first, second):
        assert ipaddress.IPv4Address(spec.cluster_ip) in RANGE
        assert spec.cluster_ip not in ("10.96.0.0", "10.96.0.1")  # network, `kubernetes`
        assert spec.cluster_ips == [spec.cluster_ip]
        assert (spec.ip_families, spec.ip_family_policy) == (["IPv4"], "SingleStack")
    assert first.cluster_ip != second.cluster_ip
    assert core.read_namespaced_service("a", ns).spec.cluster_ip == first.cluster_ip
    headless = core.create_namespaced_service(ns, _service("h", "None")).spec
    assert (headless.cluster_ip, headless.cluster_ips) == ("None", ["None"])
    external = {"metadata": {"name": "e"}, "spec": {"type": "ExternalName", "externalName": "x.y"}}
    assert core.create_namespaced_service(ns, external).spec.cluster_ip is None


def test_a_requested_address_must_be_in_the_range_and_free(core: k8s.CoreV1Api, ns: str) -> None:
    assert core.create_namespaced_service(ns, _service("a", "10.96.7.7")).spec.cluster_ip == (
        "10.96.7.7"
    )
    assert _invalid(core.create_namespaced_service, ns, _service("out", "10.0.0.5")) == (
        422,
        'Service "out" is invalid: spec.clusterIPs: Invalid value: []string{"10.0.0.5"}: '
        "failed to allocate IP 10.0.0.5: the provided IP (10.0.0.5) is not in the valid range. "
        "The range of valid IPs is 10.96.0.0/12",
    )
    for taken in ("10.96.7.7", "10.96.0.1"):
        code, message = _invalid(core.create_namespaced_service, ns, _service("dup", taken))
        assert (code, message) == (
            422,
            f'Service "dup" is invalid: spec.clusterIPs: Invalid value: []string{{"{taken}"}}: '
            f"failed to allocate IP {taken}: provided IP is already allocated",
        )


def test_the_address_may_not_change_and_is_kept_when_left_out(core: k8s.CoreV1Api, ns: str) -> None:
    made = core.create_namespaced_service(ns, _service("a"))
    ip = made.spec.cluster_ip
    body = core.api_client.sanitize_for_serialization(made)
    del body["spec"]["clusterIP"], body["spec"]["clusterIPs"]
    body["spec"]["ports"] = [{"port": 81}]
    kept = core.replace_namespaced_service("a", ns, body)
    assert (kept.spec.cluster_ip, kept.spec.cluster_ips) == (ip, [ip])
    patch = {"spec": {"clusterIP": "10.96.5.5", "clusterIPs": ["10.96.5.5"]}}
    assert _invalid(core.patch_namespaced_service, "a", ns, patch) == (
        422,
        'Service "a" is invalid: spec.clusterIPs[0]: Invalid value: []string{"10.96.5.5"}: '
        "may not change once set",
    )
    core.create_namespaced_service(ns, _service("h", "None"))
    _, message = _invalid(
        core.patch_namespaced_service, "h", ns, {"spec": {"clusterIP": "10.96.5.6"}}
    )
    assert message.endswith("may not change once set")


def test_an_address_is_free_once_its_service_is_deleted(core: k8s.CoreV1Api, ns: str) -> None:
    core.create_namespaced_service(ns, _service("a", "10.96.8.8"))
    core.delete_namespaced_service("a", ns)
    again = core.create_namespaced_service(ns, _service("b", "10.96.8.8"))
    assert again.spec.cluster_ip == "10.96.8.8"


def test_a_dry_run_holds_no_address(core: k8s.CoreV1Api, ns: str) -> None:
    dry = core.create_namespaced_service(ns, _service("a", "10.96.9.9"), dry_run="All")
    assert dry.spec.cluster_ip == "10.96.9.9"
    assert core.create_namespaced_service(ns, _service("b", "10.96.9.9")).spec.cluster_ip == (
        "10.96.9.9"
    )


def test_addresses_are_still_held_after_a_restart(tmp_path: Path) -> None:
    def client(server: RunningServer) -> k8s.CoreV1Api:
        return k8s.CoreV1Api(k8s_config.new_client_from_config(config_file=str(server.kubeconfig)))

    for server in start_server(tmp_path):
        core = client(server)
        held = core.create_namespaced_service("default", _service("a")).spec.cluster_ip
        core.create_namespaced_service("default", _service("b", "10.96.3.3"))
        core.api_client.close()
    for server in start_server(tmp_path):  # the same state directory: a restarted server
        core = client(server)
        for name, ip in (("c", held), ("d", "10.96.3.3")):
            _, message = _invalid(core.create_namespaced_service, "default", _service(name, ip))
            assert message.endswith("provided IP is already allocated")
        core.delete_namespaced_service("b", "default")
        assert core.create_namespaced_service("default", _service("d", "10.96.3.3")).spec.cluster_ip
        core.api_client.close()
