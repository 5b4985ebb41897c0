"""The deployment manifests: rendered like ``kustomize build``, valid, and consistent.

The standalone overlay is rendered with ``kustomize.build`` (and, when ``$KUSTOMIZE`` names a
kustomize binary, compared with it); every object is validated against the official Kubernetes
schema (kubernetes-validate, strict: unknown fields are errors). Then the pieces that must agree
do: the Deployment's flags, ports and Secret with the Service, the webhook configuration, the
RBAC table and the Dockerfile; the webhooks with the kinds.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

import trainop
from tests.unit.deploy import kustomize
from trainop.api import k8s_schema
from trainop.api.kinds import KINDS
from trainop.controller import rbac

ROOT = Path(__file__).resolve().parents[3]
OVERLAY = ROOT / "manifests/overlays/standalone"
NAMESPACE = "kubeflow"
RENDERED = kustomize.build(OVERLAY)
BY_ID = {kustomize.identity(obj): obj for obj in RENDERED}
K8S_VERSION = k8s_schema.KUBERNETES_VERSION.lstrip("v")


def the(kind: str) -> dict[str, Any]:
    [found] = [obj for obj in RENDERED if obj["kind"] == kind]
    return found


def container() -> dict[str, Any]:
    [found] = the("Deployment")["spec"]["template"]["spec"]["containers"]
    return found


def flags() -> dict[str, str]:
    """The container's ``--name=value`` arguments (a bare ``--name`` maps to ``"true"``)."""
    pairs = (arg.removeprefix("--").partition("=") for arg in container()["args"])
    return {name: value if sep else "true" for name, sep, value in pairs}


def port_of(address: str) -> int:
    return int(address.rpartition(":")[2])


@pytest.mark.parametrize("obj", RENDERED, ids=lambda o: "/".join(kustomize.identity(o)))
def test_every_rendered_object_is_valid_kubernetes(obj: dict[str, Any]) -> None:
    kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


def test_the_overlay_renders_the_operator_and_nothing_else() -> None:
    ns = NAMESPACE
    expected = {
        ("Namespace", "", ns),
        *(("CustomResourceDefinition", "", info.crd_name) for info in KINDS),
        ("ServiceAccount", ns, "training-operator"),
        ("ClusterRole", "", "training-operator"),
        ("ClusterRoleBinding", "", "training-operator"),
        ("Role", ns, "training-operator"),
        ("RoleBinding", ns, "training-operator"),
        ("Deployment", ns, "training-operator"),
        ("Service", ns, "training-operator"),
        ("Secret", ns, rbac.WEBHOOK_SECRET_NAME),
        ("ValidatingWebhookConfiguration", "", rbac.WEBHOOK_CONFIGURATION_NAME),
    }
    assert set(BY_ID) == expected


def test_the_crd_kustomization_lists_every_generated_crd() -> None:
    listed = yaml.safe_load((ROOT / "manifests/crds/kustomization.yaml").read_text())
    assert listed["resources"] == [f"{info.plural}.yaml" for info in KINDS]
    assert sorted(p.name for p in (ROOT / "manifests/crds").glob("*s.yaml")) == sorted(
        listed["resources"]
    )


def test_the_deployment_runs_the_operator_as_upstream_does() -> None:
    deployment, main = the("Deployment"), container()
    labels = {"control-plane": "kubeflow-training-operator"}
    template = deployment["spec"]["template"]
    assert deployment["spec"]["selector"] == {"matchLabels": labels}
    assert template["metadata"]["labels"] == labels
    assert template["metadata"]["annotations"] == {"sidecar.istio.io/inject": "false"}
    assert deployment["spec"]["replicas"] == 1
    assert main["name"] == "training-operator"
    assert main["command"] == ["trainop", "operator"]
    assert main["image"] == f"trainop:{trainop.__version__}"
    assert {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in main["env"]} == {
        "MY_POD_NAMESPACE": "metadata.namespace",
        "MY_POD_NAME": "metadata.name",
    }
    probes = {
        kind: (p["httpGet"]["path"], p["initialDelaySeconds"], p["periodSeconds"],
               p["timeoutSeconds"])
        for kind, p in (("liveness", main["livenessProbe"]), ("readiness", main["readinessProbe"]))
    }  # fmt: skip
    assert probes == {"liveness": ("/healthz", 15, 20, 3), "readiness": ("/readyz", 10, 15, 3)}
    assert main["securityContext"]["allowPrivilegeEscalation"] is False
    assert main["securityContext"]["readOnlyRootFilesystem"] is True
    assert template["spec"]["terminationGracePeriodSeconds"] == 10
    assert template["spec"]["securityContext"]["runAsNonRoot"] is True


def test_flags_ports_and_names_agree_across_the_manifests() -> None:
    given, main, service = flags(), container(), the("Service")
    ports = {p["name"]: p["containerPort"] for p in main["ports"]}
    service_ports = {p["name"]: (p["port"], p["targetPort"]) for p in service["spec"]["ports"]}
    metrics = port_of(given["metrics-bind-address"])
    assert ports["metrics"] == metrics
    assert service_ports["monitoring-port"] == (metrics, metrics)
    assert service["metadata"]["annotations"]["prometheus.io/port"] == str(metrics)
    assert ports["webhook-server"] == int(given["webhook-server-port"]) == 9443
    assert service_ports["webhook-server"] == (443, 9443)
    health = port_of(given["health-probe-bind-address"])
    assert main["livenessProbe"]["httpGet"]["port"] == health
    assert main["readinessProbe"]["httpGet"]["port"] == health
    assert given["webhook-service-name"] == service["metadata"]["name"]
    assert given["leader-elect"] == "true"
    assert given["leader-election-id"] == rbac.LEADER_ELECTION_ID
    assert service["spec"]["selector"] == the("Deployment")["spec"]["selector"]["matchLabels"]


def test_the_webhook_certificate_secret_is_mounted_read_only() -> None:
    pod = the("Deployment")["spec"]["template"]["spec"]
    [volume] = [v for v in pod["volumes"] if "secret" in v]
    [mount] = [m for m in container()["volumeMounts"] if m["name"] == volume["name"]]
    assert flags()["webhook-secret-name"] == volume["secret"]["secretName"]
    assert volume["secret"]["secretName"] == the("Secret")["metadata"]["name"]
    assert mount == {
        "name": volume["name"],
        "mountPath": "/tmp/k8s-webhook-server/serving-certs",
        "readOnly": True,
    }
    assert "data" not in the("Secret"), "the operator fills it; re-applying must not clear it"


def test_the_read_only_root_has_a_writable_tmp() -> None:
    """The operator's temporary files (webhook certificates, a kubeconfig's CA) need /tmp."""
    pod = the("Deployment")["spec"]["template"]["spec"]
    empty = {v["name"] for v in pod["volumes"] if "emptyDir" in v}
    assert [m for m in container()["volumeMounts"] if m["name"] in empty] == [
        {"name": "tmp", "mountPath": "/tmp"}
    ]


def test_the_operator_runs_as_its_service_account_everywhere() -> None:
    account = the("ServiceAccount")["metadata"]
    assert the("Deployment")["spec"]["template"]["spec"]["serviceAccountName"] == account["name"]
    for kind in ("ClusterRoleBinding", "RoleBinding"):
        assert the(kind)["subjects"] == [
            {"kind": "ServiceAccount", "name": account["name"], "namespace": NAMESPACE}
        ]


def test_one_webhook_per_kind_validates_create_and_update() -> None:
    configuration, service = the("ValidatingWebhookConfiguration"), the("Service")
    webhooks = configuration["webhooks"]
    assert [w["name"] for w in webhooks] == [
        f"validator.{info.singular}.training-operator.kubeflow.org" for info in KINDS
    ]
    for info, webhook in zip(KINDS, webhooks, strict=True):
        assert webhook["clientConfig"] == {
            "service": {
                "name": service["metadata"]["name"],
                "namespace": service["metadata"]["namespace"],
                "path": f"/validate-kubeflow-org-v1-{info.singular}",
                "port": 443,
            }
        }
        assert webhook["rules"] == [
            {"apiGroups": ["kubeflow.org"], "apiVersions": ["v1"],
             "operations": ["CREATE", "UPDATE"], "resources": [info.plural]}
        ]  # fmt: skip
        assert (webhook["failurePolicy"], webhook["sideEffects"]) == ("Fail", "None")
        assert webhook["admissionReviewVersions"] == ["v1"]


def test_the_image_installs_the_package_and_runs_the_operator_unprivileged() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    instructions = [line for line in dockerfile.splitlines() if line and not line.startswith("#")]
    assert instructions[:2] == ["ARG BASE=python:3.11-slim", "FROM ${BASE}"]
    assert "COPY src ./src" in instructions
    assert any(re.fullmatch(r"RUN pip install \. .*", line) for line in instructions)
    [user] = [line for line in instructions if line.startswith("USER ")]
    assert re.fullmatch(r"USER [1-9][0-9]*:[1-9][0-9]*", user), "numeric, non-root"
    [entrypoint] = [line for line in instructions if line.startswith("ENTRYPOINT ")]
    assert json.loads(entrypoint.removeprefix("ENTRYPOINT ")) == container()["command"]


def test_the_operator_command_accepts_the_deployment_flags_once_it_exists() -> None:
    from trainop.cli.main import main

    command = main.commands.get("operator")
    if command is None:
        pytest.skip("`trainop operator` is not implemented yet")
    known = {opt for param in command.params for opt in getattr(param, "opts", [])}
    assert {f"--{name}" for name in flags()} <= known


@pytest.mark.skipif(not os.environ.get("KUSTOMIZE"), reason="set KUSTOMIZE to a kustomize binary")
def test_the_renderer_agrees_with_kustomize() -> None:
    output = subprocess.run(
        [os.environ["KUSTOMIZE"], "build", str(OVERLAY)], capture_output=True, text=True, check=True
    ).stdout
    real = {kustomize.identity(obj): obj for obj in yaml.safe_load_all(output) if obj}
    assert real.keys() == BY_ID.keys()
    for key, obj in real.items():
        assert obj == BY_ID[key], key
