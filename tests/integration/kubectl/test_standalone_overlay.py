"""The README's install command, ``kubectl apply --server-side -k manifests/overlays/standalone``,
against ``trainop local up``: every object is applied except the operator's Deployment, which
gets one clear error line (local mode runs the operator itself)."""

from __future__ import annotations

import json
from typing import Any

import yaml

from tests.integration.kubectl.conftest import ROOT, Kubectl

OVERLAY = str(ROOT / "manifests" / "overlays" / "standalone")
DEPLOYMENT_REFUSED = (
    "Error from server (MethodNotAllowed): Deployments are not served in local mode: trainop "
    "local runs the training operator itself and has no controller that would run a "
    "Deployment's pods (the other objects of an apply are not affected); run training jobs "
    "(PyTorchJob, TFJob, MPIJob, ...) here, or use a Kubernetes cluster"
)


def _objects(kubectl: Kubectl) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(kubectl.out("kustomize", OVERLAY)) if d]


def test_the_readme_install_applies_all_but_the_deployment(kubectl: Kubectl) -> None:
    expected = _objects(kubectl)
    kinds = {o["kind"] for o in expected}
    assert {"ClusterRole", "ValidatingWebhookConfiguration", "Deployment"} <= kinds
    for attempt in range(2):  # the second apply changes nothing and answers the same
        done = kubectl.run("apply", "--server-side", "-k", OVERLAY, check=False, timeout=120)
        assert done.returncode == 1, (attempt, done.stdout, done.stderr)
        assert "failed to download openapi" not in done.stderr
        errors = [line for line in done.stderr.splitlines() if line.strip()]
        assert errors == [DEPLOYMENT_REFUSED], done.stderr
        applied = [line for line in done.stdout.splitlines() if line.strip()]
        assert len(applied) == len(expected) - 1, done.stdout
        assert all(line.endswith(" serverside-applied") for line in applied), done.stdout
    for obj in expected:
        meta = obj["metadata"]
        where = ["-n", meta["namespace"]] if meta.get("namespace") else []
        resource = f"{obj['kind'].lower()}.{obj['apiVersion'].split('/')[0]}"
        if "/" not in obj["apiVersion"]:
            resource = obj["kind"].lower()
        got = kubectl.run("get", resource, meta["name"], *where, "-o", "json", check=False)
        if obj["kind"] == "Deployment":
            assert got.returncode == 1
            continue
        assert got.returncode == 0, (obj["kind"], meta["name"], got.stderr)
        assert json.loads(got.stdout)["metadata"]["name"] == meta["name"]
    # stored only, but printed with kube's columns
    roles = kubectl.out("get", "clusterroles", "training-operator").splitlines()
    assert roles[0].split() == ["NAME", "CREATED", "AT"]
    assert roles[1].split()[1].endswith("Z")  # an RFC 3339 time, not an age
    bindings = kubectl.out("get", "rolebindings", "-n", "kubeflow", "-o", "wide").splitlines()
    assert bindings[0].split() == ["NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"]
    row = bindings[1].split()
    assert (row[1], row[-1]) == ("Role/training-operator", "kubeflow/training-operator")
    hooks = kubectl.out("get", "validatingwebhookconfigurations").splitlines()
    assert hooks[0].split() == ["NAME", "WEBHOOKS", "AGE"]
    webhooks = next(o for o in expected if o["kind"] == "ValidatingWebhookConfiguration")
    assert hooks[1].split()[1] == str(len(webhooks["webhooks"]))
