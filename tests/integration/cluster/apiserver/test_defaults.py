"""Built-in kinds read back with kube-apiserver's defaults, through the official client over
HTTPS: a pod the operator would create, a headless and a plain Service, a batch/v1 Job; every
write verb defaults the same way (``cluster.apiserver.admission.defaults``, note 010)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from tests.integration.cluster.apiserver.conftest import RunningServer


@pytest.fixture(scope="module")
def api_client(api: RunningServer) -> Iterator[k8s.ApiClient]:
    ac = k8s_config.new_client_from_config(config_file=str(api.kubeconfig))
    yield ac
    ac.close()


@pytest.fixture
def ns(api_client: k8s.ApiClient) -> str:
    name = f"d-{uuid.uuid4().hex[:8]}"
    k8s.CoreV1Api(api_client).create_namespace({"metadata": {"name": name}})
    return name


def _pod(name: str, **extra: Any) -> dict[str, Any]:
    container = {
        "name": "pytorch",
        "image": "docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727",
        "ports": [{"name": "pytorchjob-port", "containerPort": 23456}],
        "resources": {"limits": {"cpu": "1", "memory": "1Gi"}},
        **extra,
    }
    return {"metadata": {"name": name}, "spec": {"containers": [container]}}


def test_pod_reads_back_with_the_defaults(api_client: k8s.ApiClient, ns: str) -> None:
    core = k8s.CoreV1Api(api_client)
    created = core.create_namespaced_pod(ns, _pod("p"))
    pod = core.read_namespaced_pod("p", ns)
    for seen in (created, pod):
        c = seen.spec.containers[0]
        assert c.ports[0].protocol == "TCP"
        assert c.image_pull_policy == "IfNotPresent"
        assert c.termination_message_path == "/dev/termination-log"
        assert c.termination_message_policy == "File"
        assert c.resources.requests == {"cpu": "1", "memory": "1Gi"}
        assert seen.spec.restart_policy == "Always"
        assert seen.spec.dns_policy == "ClusterFirst"
        assert seen.spec.termination_grace_period_seconds == 30
        assert seen.spec.scheduler_name == "default-scheduler"
        assert seen.spec.service_account_name == "default"
        assert seen.spec.priority == 0
        assert seen.spec.enable_service_links is True
        assert [(t.key, t.toleration_seconds) for t in seen.spec.tolerations] == [
            ("node.kubernetes.io/not-ready", 300),
            ("node.kubernetes.io/unreachable", 300),
        ]
        assert seen.status.qos_class == "Guaranteed"  # requests defaulted from limits first


def test_every_write_verb_defaults(api_client: k8s.ApiClient, ns: str) -> None:
    """Each write changes the image (all kube lets an update change in a pod's spec) and drops
    defaulted fields: only the server's defaults make the rest of the spec equal again."""
    core = k8s.CoreV1Api(api_client)
    core.create_namespaced_pod(ns, _pod("p"))
    port = {"containerPort": 23456, "protocol": None}  # null: the field is removed
    container = {"name": "pytorch", "image": "python:3.12", "ports": [port]}
    patch = {"spec": {"containers": [{**container, "terminationMessagePolicy": None}]}}
    patched = core.patch_namespaced_pod("p", ns, patch)  # strategic merge: the list by name
    assert patched.spec.containers[0].image == "python:3.12"
    assert [(p.container_port, p.protocol) for p in patched.spec.containers[0].ports] == [
        (23456, "TCP")
    ]
    assert patched.spec.containers[0].termination_message_policy == "File"
    body = api_client.sanitize_for_serialization(patched)
    written = body["spec"]["containers"][0]
    written["image"] = "python:3.13"
    del written["ports"][0]["protocol"], written["terminationMessagePolicy"]
    replaced = core.replace_namespaced_pod("p", ns, body)
    assert replaced.spec.containers[0].ports[0].protocol == "TCP"
    assert replaced.spec.containers[0].termination_message_policy == "File"
    dry = core.create_namespaced_pod(ns, _pod("q"), dry_run="All")
    assert dry.spec.containers[0].ports[0].protocol == "TCP"
    unchanged = core.replace_namespaced_pod("p", ns, core.read_namespaced_pod("p", ns))
    assert unchanged.metadata.resource_version == replaced.metadata.resource_version


def test_service_reads_back_with_the_defaults(api_client: k8s.ApiClient, ns: str) -> None:
    core = k8s.CoreV1Api(api_client)
    plain = {"metadata": {"name": "s"}, "spec": {"selector": {"a": "b"}, "ports": [{"port": 80}]}}
    svc = core.create_namespaced_service(ns, plain)
    assert svc.spec.type == "ClusterIP"
    assert svc.spec.session_affinity == "None"
    assert svc.spec.internal_traffic_policy == "Cluster"
    assert (svc.spec.ports[0].protocol, svc.spec.ports[0].target_port) == ("TCP", 80)
    headless = {
        "metadata": {"name": "h"},
        "spec": {"clusterIP": "None", "selector": {"a": "b"}, "ports": [{"port": 23456}]},
    }
    svc = core.create_namespaced_service(ns, headless)
    assert svc.spec.cluster_ip == "None"
    assert svc.spec.cluster_ips == ["None"]
    assert (svc.spec.ip_families, svc.spec.ip_family_policy) == (["IPv4"], "SingleStack")


def test_job_reads_back_with_the_defaults_and_generated_labels(
    api_client: k8s.ApiClient, ns: str
) -> None:
    batch = k8s.BatchV1Api(api_client)
    body = {
        "metadata": {"name": "launcher"},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "OnFailure",
                    "containers": [{"name": "c", "image": "busybox", "command": ["true"]}],
                }
            }
        },
    }
    job = batch.create_namespaced_job(ns, body)
    uid = job.metadata.uid
    assert (job.spec.parallelism, job.spec.completions, job.spec.backoff_limit) == (1, 1, 6)
    assert job.spec.completion_mode == "NonIndexed"
    assert job.spec.suspend is False
    assert job.spec.pod_replacement_policy == "TerminatingOrFailed"
    assert job.spec.manual_selector is None
    assert job.spec.selector.match_labels == {"batch.kubernetes.io/controller-uid": uid}
    labels = {
        "batch.kubernetes.io/controller-uid": uid,
        "batch.kubernetes.io/job-name": "launcher",
        "controller-uid": uid,
        "job-name": "launcher",
    }
    assert job.spec.template.metadata.labels == labels
    assert job.metadata.labels == labels
    template = job.spec.template.spec
    assert template.containers[0].image_pull_policy == "Always"  # no tag
    assert template.dns_policy == "ClusterFirst"
    assert template.service_account_name is None  # admission defaults pods, not templates
    again = batch.read_namespaced_job("launcher", ns)
    assert again.spec.selector.match_labels == job.spec.selector.match_labels


def test_server_side_apply_defaults_and_a_repeat_changes_nothing(
    api_client: k8s.ApiClient, ns: str
) -> None:
    core = k8s.CoreV1Api(api_client)
    body = {"apiVersion": "v1", "kind": "Pod", **_pod("p")}
    apply: dict[str, Any] = {"_content_type": "application/apply-patch+yaml"}
    made = core.patch_namespaced_pod("p", ns, body, field_manager="me", **apply)
    assert made.spec.containers[0].ports[0].protocol == "TCP"
    assert made.spec.service_account_name == "default"  # created by the apply: admission ran
    again = core.patch_namespaced_pod("p", ns, body, field_manager="me", **apply)
    assert again.metadata.resource_version == made.metadata.resource_version
    (entry,) = [e for e in again.metadata.managed_fields if e.manager == "me"]
    container = entry.fields_v1["f:spec"]["f:containers"]['k:{"name":"pytorch"}']
    assert "f:terminationMessagePath" not in container  # defaults are not the applier's
    other = {**body, "metadata": {"name": "q"}}
    dry = core.patch_namespaced_pod("q", ns, other, field_manager="me", dry_run="All", **apply)
    assert dry.spec.containers[0].termination_message_policy == "File"


def test_namespace_label_and_secret_type(api_client: k8s.ApiClient, ns: str) -> None:
    core = k8s.CoreV1Api(api_client)
    assert core.read_namespace(ns).metadata.labels == {"kubernetes.io/metadata.name": ns}
    assert core.read_namespace("default").metadata.labels == {
        "kubernetes.io/metadata.name": "default"
    }
    secret = core.create_namespaced_secret(ns, {"metadata": {"name": "s"}, "data": {}})
    assert secret.type == "Opaque"
