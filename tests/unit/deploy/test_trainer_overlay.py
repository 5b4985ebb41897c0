"""The Trainer overlay (``manifests/overlays/trainer``) and Trainer v2's webhook configurations.

The overlay is the standalone operator plus Trainer's CRDs, webhook configurations and shipped
runtimes, with the Deployment patched to run every kubeflow.org/v1 kind and TrainJob. Rendered by
the test renderer (``kustomize.build``) and, when kubectl is installed, by ``kubectl kustomize``
(the two must agree object for object). The webhook configurations are checked against spec
6.1 (names, paths, rules, objectSelector, failurePolicy, sideEffects), against the Service that
fronts the operator, and against the paths the operator's webhook server answers.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from tests.unit.deploy import kustomize
from tests.unit.deploy.test_manifests import K8S_VERSION
from tests.unit.deploy.test_manifests import RENDERED as STANDALONE
from trainop.api.kinds import KINDS
from trainop.api.trainer import constants as c
from trainop.cli.operator import config_from_flags
from trainop.cli.operator import operator as operator_command
from trainop.controller.webhook import WebhookServer, WebhookSettings

ROOT = Path(__file__).resolve().parents[3]
OVERLAY = ROOT / "manifests/overlays/trainer"
RENDERED = kustomize.build(OVERLAY)
BY_ID = {kustomize.identity(obj): obj for obj in RENDERED}
STANDALONE_IDS = {kustomize.identity(obj) for obj in STANDALONE}
# Spec section 4: the runtimes of v2.3.0's kustomize overlay.
RUNTIMES = ("torch-distributed", "deepspeed-distributed", "mlx-distributed", "jax-distributed",
            "xgboost-distributed", "torchtune-llama3.2-1b", "torchtune-llama3.2-3b",
            "torchtune-qwen2.5-1.5b")  # fmt: skip
DEFAULTER = "defaulter.trainer.kubeflow.org"
VALIDATOR = "validator.trainer.kubeflow.org"
# Spec 6.1's table: webhook name → (path, resource, runtime objectSelector).
SPEC_WEBHOOKS = {
    "defaulter.trainjob.trainer.kubeflow.org":
        ("/mutate-trainer-kubeflow-org-v1alpha1-trainjob", "trainjobs", False),
    "validator.clustertrainingruntime.trainer.kubeflow.org":
        ("/validate-trainer-kubeflow-org-v1alpha1-clustertrainingruntime",
         "clustertrainingruntimes", True),
    "validator.trainingruntime.trainer.kubeflow.org":
        ("/validate-trainer-kubeflow-org-v1alpha1-trainingruntime", "trainingruntimes", True),
    "validator.trainjob.trainer.kubeflow.org":
        ("/validate-trainer-kubeflow-org-v1alpha1-trainjob", "trainjobs", False),
}  # fmt: skip
RUNTIME_SELECTOR = {
    "matchExpressions": [
        {"key": "trainer.kubeflow.org/webhook-validation", "operator": "NotIn",
         "values": ["disabled"]}
    ]
}  # fmt: skip


def the(kind: str, name: str, namespace: str = "") -> dict[str, Any]:
    return BY_ID[(kind, namespace, name)]


def container(deployment: dict[str, Any]) -> dict[str, Any]:
    [found] = deployment["spec"]["template"]["spec"]["containers"]
    return found


def test_the_overlay_is_the_standalone_operator_plus_trainer() -> None:
    trainer = {
        *(("CustomResourceDefinition", "", f"{plural}.trainer.kubeflow.org")
          for plural in ("trainjobs", "trainingruntimes", "clustertrainingruntimes")),
        ("MutatingWebhookConfiguration", "", DEFAULTER),
        ("ValidatingWebhookConfiguration", "", VALIDATOR),
        *(("ClusterTrainingRuntime", "", name) for name in RUNTIMES),
        ("Namespace", "", "kubeflow-system"),
        *((kind, "kubeflow-system", "kubeflow-trainer-public")
          for kind in ("ConfigMap", "Role", "RoleBinding")),
    }  # fmt: skip
    assert set(BY_ID) == STANDALONE_IDS | trainer
    assert not STANDALONE_IDS & trainer
    assert ("CustomResourceDefinition", "", c.JOBSET_CRD_NAME) not in BY_ID, "JobSet's own"


@pytest.mark.parametrize(
    "obj",
    [o for o in RENDERED if kustomize.identity(o) not in STANDALONE_IDS
     and o["apiVersion"] != c.API_VERSION] + [the("Deployment", "training-operator", "kubeflow")],
    ids=lambda o: "/".join(kustomize.identity(o)),
)  # fmt: skip
def test_every_added_or_patched_object_is_valid_kubernetes(obj: dict[str, Any]) -> None:
    kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


def test_only_the_args_change_and_they_enable_every_v1_kind_and_trainjob() -> None:
    [standalone] = [o for o in STANDALONE if o["kind"] == "Deployment"]
    patched = the("Deployment", "training-operator", "kubeflow")
    base_args = container(standalone)["args"]
    args = container(patched)["args"]
    assert args[: len(base_args)] == base_args
    added = args[len(base_args) :]
    assert added == [f"--enable-scheme={info.kind.lower()}" for info in KINDS] + [
        "--enable-scheme=trainjob"
    ]
    without_args = [{**container(d), "args": None} for d in (standalone, patched)]
    assert without_args[0] == without_args[1]
    assert {**patched, "spec": None} == {**standalone, "spec": None}
    config = config_from_flags(operator_command.make_context("operator", args).params)
    assert config.manager.trainjobs
    assert [info.kind for info in config.manager.enabled()] == [info.kind for info in KINDS]


def test_the_standalone_operator_never_runs_trainjobs() -> None:
    """Note 112: TrainJob is opt-in, whether or not the cluster serves JobSet."""
    [standalone] = [o for o in STANDALONE if o["kind"] == "Deployment"]
    args = container(standalone)["args"]
    assert not [arg for arg in args if arg.startswith("--enable-scheme")]
    config = config_from_flags(operator_command.make_context("operator", args).params)
    assert not config.manager.trainjobs
    assert sorted(info.kind for info in config.manager.enabled()) == sorted(i.kind for i in KINDS)


def test_the_webhook_configurations_are_spec_6_1s() -> None:
    mutating = the("MutatingWebhookConfiguration", DEFAULTER)["webhooks"]
    validating = the("ValidatingWebhookConfiguration", VALIDATOR)["webhooks"]
    assert [w["name"] for w in mutating] == ["defaulter.trainjob.trainer.kubeflow.org"]
    assert sorted(w["name"] for w in validating) == sorted(
        set(SPEC_WEBHOOKS) - {mutating[0]["name"]}
    )
    for webhook in mutating + validating:
        path, resource, runtime = SPEC_WEBHOOKS[webhook["name"]]
        assert webhook["clientConfig"]["service"]["path"] == path
        assert webhook["rules"] == [
            {"apiGroups": ["trainer.kubeflow.org"], "apiVersions": ["v1alpha1"],
             "operations": ["CREATE", "UPDATE"], "resources": [resource]}
        ]  # fmt: skip
        assert (webhook["failurePolicy"], webhook["sideEffects"]) == ("Fail", "None")
        assert webhook["admissionReviewVersions"] == ["v1"]
        assert webhook.get("objectSelector") == (RUNTIME_SELECTOR if runtime else None)
        assert "namespaceSelector" not in webhook
        assert "caBundle" not in webhook["clientConfig"], "injected by the operator at start"


def test_every_trainer_webhook_calls_the_operators_service_on_a_path_it_serves() -> None:
    service = the("Service", "training-operator", "kubeflow")
    ports = {p["port"]: p["targetPort"] for p in service["spec"]["ports"]}
    deployment = the("Deployment", "training-operator", "kubeflow")
    webhook_port = {p["name"]: p["containerPort"] for p in container(deployment)["ports"]}
    served = WebhookServer(settings=WebhookSettings(), trainer=_no_lookup).paths
    for name in (DEFAULTER, VALIDATOR):
        kind = "Mutating" if name == DEFAULTER else "Validating"
        for webhook in the(f"{kind}WebhookConfiguration", name)["webhooks"]:
            target = webhook["clientConfig"]["service"]
            assert (target["name"], target["namespace"]) == ("training-operator", "kubeflow")
            assert ports[target["port"]] == webhook_port["webhook-server"]
            assert target["path"] in served


async def _no_lookup(kind: str, namespace: str, name: str) -> dict[str, Any] | None:
    del kind, namespace, name
    return None


def test_the_cluster_role_lets_the_operator_inject_every_shipped_configuration() -> None:
    role = the("ClusterRole", "training-operator")
    for obj in RENDERED:
        if not obj["kind"].endswith("WebhookConfiguration"):
            continue
        plural = obj["kind"].lower() + "s"
        rules = [r for r in role["rules"] if plural in r["resources"]
                 and obj["metadata"]["name"] in r.get("resourceNames", [])]  # fmt: skip
        assert rules, obj["metadata"]["name"]
        assert {"get", "update"} <= {verb for rule in rules for verb in rule["verbs"]}


def _kubectl() -> str | None:
    return os.environ.get("TRAINOP_KUBECTL") or shutil.which("kubectl")


@pytest.mark.skipif(_kubectl() is None, reason="kubectl is not installed")
@pytest.mark.parametrize("overlay", ["trainer", "standalone"])
def test_kubectl_kustomize_renders_what_the_test_renderer_does(overlay: str) -> None:
    done = subprocess.run(
        [str(_kubectl()), "kustomize", str(ROOT / "manifests/overlays" / overlay)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    real = {kustomize.identity(o): o for o in yaml.load_all(done.stdout, kustomize.Loader) if o}
    ours = {
        kustomize.identity(o): o for o in kustomize.build(ROOT / "manifests/overlays" / overlay)
    }
    assert real.keys() == ours.keys()
    for key, obj in real.items():
        assert obj == ours[key], key
