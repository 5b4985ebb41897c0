"""kube-apiserver's defaults for built-in kinds, per kind (``apiserver.admission.defaults``)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from trainop.cluster.apiserver.admission import defaults
from trainop.cluster.apiserver.rest import objects


def _pod(spec: dict[str, Any], *, create: bool = True) -> dict[str, Any]:
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}
    defaults.apply("", "pods", obj, create=create)
    return obj["spec"]


def test_pod_spec_and_container_defaults() -> None:
    spec = _pod(
        {
            "containers": [
                {
                    "name": "pytorch",
                    "image": "python:3.12",
                    "ports": [{"name": "pytorchjob-port", "containerPort": 23456}],
                    "env": [{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "m.name"}}}],
                    "livenessProbe": {"httpGet": {"port": 80}},
                    "readinessProbe": {"exec": {"command": ["true"]}},
                }
            ]
        }
    )
    assert {k: v for k, v in spec.items() if k != "containers"} == {
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "securityContext": {},
        "schedulerName": "default-scheduler",
        "enableServiceLinks": True,
        "serviceAccountName": "default",
        "serviceAccount": "default",
        "priority": 0,
        "preemptionPolicy": "PreemptLowerPriority",
        "tolerations": [
            {
                "key": "node.kubernetes.io/not-ready",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            },
            {
                "key": "node.kubernetes.io/unreachable",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            },
        ],
    }
    c = spec["containers"][0]
    assert c["ports"] == [{"name": "pytorchjob-port", "containerPort": 23456, "protocol": "TCP"}]
    assert c["terminationMessagePath"] == "/dev/termination-log"
    assert c["terminationMessagePolicy"] == "File"
    assert c["imagePullPolicy"] == "IfNotPresent"
    assert c["resources"] == {}
    assert c["env"][0]["valueFrom"]["fieldRef"] == {"fieldPath": "m.name", "apiVersion": "v1"}
    probe = {"timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3}
    assert c["livenessProbe"] == {
        "httpGet": {"port": 80, "path": "/", "scheme": "HTTP"},
        **probe,
    }
    assert c["readinessProbe"] == {"exec": {"command": ["true"]}, **probe}


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        ("python", "Always"),
        ("python:latest", "Always"),
        ("localhost:5000/python", "Always"),
        ("localhost:5000/python:3.12", "IfNotPresent"),
        ("python:3.12", "IfNotPresent"),
        ("python@sha256:" + "a" * 64, "IfNotPresent"),
        ("python:latest@sha256:" + "a" * 64, "Always"),
        ("python:3@sha256:" + "a" * 64, "IfNotPresent"),
        ("", "IfNotPresent"),
    ],
)
def test_image_pull_policy(image: str, policy: str) -> None:
    assert (
        _pod({"containers": [{"name": "c", "image": image}]})["containers"][0]["imagePullPolicy"]
        == policy
    )


def test_requests_from_limits_and_qos_class_after_defaulting() -> None:
    spec = _pod(
        {
            "containers": [
                {
                    "name": "c",
                    "image": "x:1",
                    "resources": {
                        "limits": {"cpu": "1", "memory": "1Gi"},
                        "requests": {"cpu": "1"},
                    },
                }
            ],
            "initContainers": [
                {
                    "name": "i",
                    "image": "x:1",
                    "resources": {"limits": {"cpu": "2", "memory": "1Gi"}},
                }
            ],
        }
    )
    assert spec["containers"][0]["resources"]["requests"] == {"cpu": "1", "memory": "1Gi"}
    assert spec["initContainers"][0]["resources"]["requests"] == {"cpu": "2", "memory": "1Gi"}
    assert spec["initContainers"][0]["terminationMessagePolicy"] == "File"
    assert objects.qos_class(spec) == "Guaranteed"


def test_volume_defaults() -> None:
    spec = _pod(
        {
            "containers": [{"name": "c", "image": "x"}],
            "volumes": [
                {"name": "a", "configMap": {"name": "cm", "items": [{"key": "k", "path": "p"}]}},
                {"name": "b", "secret": {"secretName": "s"}},
                {"name": "c", "projected": {"sources": [{"configMap": {"name": "cm"}}]}},
                {"name": "d", "hostPath": {"path": "/tmp"}},
                {"name": "e", "emptyDir": {}},
                {"name": "f"},
            ],
        }
    )
    assert spec["volumes"] == [
        {
            "name": "a",
            "configMap": {"name": "cm", "items": [{"key": "k", "path": "p"}], "defaultMode": 420},
        },
        {"name": "b", "secret": {"secretName": "s", "defaultMode": 420}},
        {
            "name": "c",
            "projected": {"sources": [{"configMap": {"name": "cm"}}], "defaultMode": 420},
        },
        {"name": "d", "hostPath": {"path": "/tmp", "type": ""}},
        {"name": "e", "emptyDir": {}},
        {"name": "f", "emptyDir": {}},
    ]


def test_given_values_are_never_overwritten() -> None:
    given = {
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 5,
        "dnsPolicy": "Default",
        "securityContext": {"runAsUser": 1000},
        "schedulerName": "other",
        "enableServiceLinks": False,
        "serviceAccountName": "runner",
        "priorityClassName": "high",
        "tolerations": [{"operator": "Exists"}],
        "containers": [
            {
                "name": "c",
                "image": "x",
                "imagePullPolicy": "Never",
                "terminationMessagePath": "/m",
                "terminationMessagePolicy": "FallbackToLogsOnError",
                "ports": [{"containerPort": 53, "protocol": "UDP"}],
                "resources": {"limits": {"cpu": "2"}, "requests": {"cpu": "1"}},
                "startupProbe": {
                    "httpGet": {"port": 1, "path": "/h", "scheme": "HTTPS"},
                    "timeoutSeconds": 7,
                    "periodSeconds": 2,
                    "successThreshold": 1,
                    "failureThreshold": 9,
                },
            }
        ],
        "volumes": [{"name": "v", "secret": {"secretName": "s", "defaultMode": 256}}],
    }
    spec = _pod(copy.deepcopy(given))
    assert spec["serviceAccount"] == "runner"  # the deprecated alias follows the field
    assert not {"priority", "preemptionPolicy"} & spec.keys()
    spec.pop("serviceAccount")
    assert spec == given


def test_tolerations_only_for_uncovered_taints_and_admission_only_on_create() -> None:
    mine = {
        "key": "node.kubernetes.io/unreachable",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 5,
    }
    spec = _pod({"containers": [{"name": "c", "image": "x"}], "tolerations": [mine]})
    assert [t["key"] for t in spec["tolerations"]] == [
        "node.kubernetes.io/unreachable",
        "node.kubernetes.io/not-ready",
    ]
    assert spec["tolerations"][0] == mine
    updated = _pod({"containers": [{"name": "c", "image": "x"}]}, create=False)
    assert not {"tolerations", "serviceAccountName", "priority"} & updated.keys()


def test_wrong_types_are_left_for_validation() -> None:
    spec = _pod({"containers": ["x", {"name": "c", "ports": "80", "env": [1]}], "volumes": 3})
    assert spec["containers"][0] == "x"
    assert spec["containers"][1]["ports"] == "80"
    assert spec["containers"][1]["imagePullPolicy"] == "IfNotPresent"  # kube's, for no image
    odd = _pod({"containers": [{"name": "c", "image": 5}]})
    assert "imagePullPolicy" not in odd["containers"][0]


def test_service_defaults() -> None:
    obj: dict[str, Any] = {"spec": {"ports": [{"port": 80}, {"port": 81, "targetPort": "http"}]}}
    defaults.apply("", "services", obj, create=True)
    assert obj["spec"] == {
        "type": "ClusterIP",
        "sessionAffinity": "None",
        "internalTrafficPolicy": "Cluster",
        "ports": [
            {"port": 80, "protocol": "TCP", "targetPort": 80},
            {"port": 81, "protocol": "TCP", "targetPort": "http"},
        ],
    }
    headless: dict[str, Any] = {"spec": {"clusterIP": "None", "ports": [{"port": 23456}]}}
    defaults.apply("", "services", headless, create=True)
    assert headless["spec"]["clusterIP"] == "None"
    assert headless["spec"]["clusterIPs"] == ["None"]
    assert headless["spec"]["ipFamilies"] == ["IPv4"]
    assert headless["spec"]["ipFamilyPolicy"] == "SingleStack"
    given = {
        "type": "NodePort",
        "sessionAffinity": "ClientIP",
        "internalTrafficPolicy": "Local",
        "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 5}},
        "externalTrafficPolicy": "Local",
        "ports": [{"port": 53, "protocol": "UDP", "targetPort": 5353}],
    }
    obj = {"spec": copy.deepcopy(given)}
    defaults.apply("", "services", obj, create=True)
    assert obj["spec"] == given


def _job(spec: dict[str, Any], *, create: bool = True) -> dict[str, Any]:
    obj = {"metadata": {"name": "j", "uid": "u-1"}, "spec": spec}
    defaults.apply("batch", "jobs", obj, create=create)
    return obj


def test_job_defaults_and_generated_labels() -> None:
    template = {
        "metadata": {"labels": {"app": "a"}},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x:1"}]},
    }
    job = _job({"template": template})
    spec = job["spec"]
    assert {k: v for k, v in spec.items() if k not in ("template", "selector")} == {
        "completions": 1,
        "parallelism": 1,
        "backoffLimit": 6,
        "completionMode": "NonIndexed",
        "suspend": False,
        "podReplacementPolicy": "TerminatingOrFailed",
    }
    labels = {
        "app": "a",
        "job-name": "j",
        "batch.kubernetes.io/job-name": "j",
        "controller-uid": "u-1",
        "batch.kubernetes.io/controller-uid": "u-1",
    }
    assert spec["template"]["metadata"]["labels"] == labels
    assert spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": "u-1"}}
    assert job["metadata"]["labels"] == labels
    pod_spec = spec["template"]["spec"]
    assert pod_spec["restartPolicy"] == "Never"
    assert pod_spec["dnsPolicy"] == "ClusterFirst"
    assert pod_spec["containers"][0]["terminationMessagePath"] == "/dev/termination-log"
    # a template is not a Pod: no admission, no service links, no requests from limits
    assert not {"serviceAccountName", "tolerations", "priority", "enableServiceLinks"} & set(
        pod_spec
    )


def test_job_given_values_kept_and_no_generation_on_update_or_manual_selector() -> None:
    given = {
        "parallelism": 3,
        "backoffLimit": 0,
        "completionMode": "Indexed",
        "suspend": True,
        "podReplacementPolicy": "Failed",
        "manualSelector": True,
        "selector": {"matchLabels": {"x": "y"}},
        "template": {"metadata": {"labels": {"x": "y"}}, "spec": {"containers": []}},
    }
    job = _job(copy.deepcopy(given))
    assert "completions" not in job["spec"]  # parallelism given: completions stays unset
    assert job["spec"]["template"]["metadata"]["labels"] == {"x": "y"}
    assert job["spec"]["selector"] == {"matchLabels": {"x": "y"}}
    assert job["metadata"]["labels"] == {"x": "y"}
    updated = _job({"template": {"spec": {"containers": []}}}, create=False)
    assert "selector" not in updated["spec"]
    assert "labels" not in updated["metadata"]


def test_other_kinds_untouched() -> None:
    obj = {"data": {"a": "b"}, "spec": {"x": 1}}
    defaults.apply("", "configmaps", obj, create=True)
    defaults.apply("kubeflow.org", "pytorchjobs", obj, create=True)
    assert obj == {"data": {"a": "b"}, "spec": {"x": 1}}


def test_host_network_ports_get_their_host_port() -> None:
    ports = [{"containerPort": 80}, {"containerPort": 81, "hostPort": 8081}]
    spec = _pod({"hostNetwork": True, "containers": [{"name": "c", "image": "x", "ports": ports}]})
    assert [(p["containerPort"], p["hostPort"]) for p in spec["containers"][0]["ports"]] == [
        (80, 80),
        (81, 8081),
    ]
    spec = _pod({"containers": [{"name": "c", "image": "x", "ports": [{"containerPort": 80}]}]})
    assert "hostPort" not in spec["containers"][0]["ports"][0]


def test_namespace_label_secret_type_and_session_affinity_config() -> None:
    ns: dict[str, Any] = {"metadata": {"name": "team", "labels": {"a": "b"}}}
    defaults.apply("", "namespaces", ns, create=True)
    assert ns["metadata"]["labels"] == {"a": "b", "kubernetes.io/metadata.name": "team"}
    secret: dict[str, Any] = {"metadata": {"name": "s"}}
    defaults.apply("", "secrets", secret, create=True)
    assert secret["type"] == "Opaque"
    typed = {"metadata": {"name": "s"}, "type": "kubernetes.io/tls"}
    defaults.apply("", "secrets", typed, create=True)
    assert typed["type"] == "kubernetes.io/tls"
    svc: dict[str, Any] = {"spec": {"sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 5}}}}
    defaults.apply("", "services", svc, create=True)
    assert "sessionAffinityConfig" not in svc["spec"]  # kube drops it under None
    ext: dict[str, Any] = {"spec": {"externalIPs": ["192.0.2.1"]}}
    defaults.apply("", "services", ext, create=True)
    assert ext["spec"]["externalTrafficPolicy"] == "Cluster"


def test_job_pod_failure_policy_patterns_default_to_true() -> None:
    rule = {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}
    job = _job({"podFailurePolicy": {"rules": [rule]}, "template": {"spec": {}}})
    assert rule["onPodConditions"] == [{"type": "DisruptionTarget", "status": "True"}]
    assert job["spec"]["podReplacementPolicy"] == "Failed"
