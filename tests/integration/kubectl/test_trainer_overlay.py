"""The Trainer overlay's install command, as a server-side dry run, with the real ``kubectl``
against ``trainop local up``: ``kubectl apply --server-side --dry-run=server -k
manifests/overlays/trainer`` passes the API server's admission for every object (CRDs, RBAC,
both webhook configurations, the runtimes, the public ConfigMap) except the operator's
Deployment, which local mode refuses with its one clear line; and nothing is stored.
"""

from __future__ import annotations

from typing import Any

import yaml

from tests.integration.kubectl.conftest import ROOT, Kubectl
from tests.integration.kubectl.test_standalone_overlay import DEPLOYMENT_REFUSED

OVERLAY = str(ROOT / "manifests" / "overlays" / "trainer")
DRY = " serverside-applied (server dry run)"


def _objects(kubectl: Kubectl) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(kubectl.out("kustomize", OVERLAY)) if d]


def _printed(obj: dict[str, Any]) -> str:
    """How kubectl names an applied object: ``kind[.group]/name``."""
    group = obj["apiVersion"].rpartition("/")[0]
    return f"{obj['kind'].lower()}{'.' + group if group else ''}/{obj['metadata']['name']}"


def test_the_trainer_overlay_passes_a_server_side_dry_run(kubectl: Kubectl) -> None:
    expected = _objects(kubectl)
    kinds = {o["kind"] for o in expected}
    assert {"MutatingWebhookConfiguration", "ClusterTrainingRuntime", "Deployment"} <= kinds
    # A dry run creates no namespace: the overlay's objects need theirs to exist already.
    for name in sorted({o["metadata"]["name"] for o in expected if o["kind"] == "Namespace"}):
        kubectl.run("apply", "-f", "-", stdin=f"apiVersion: v1\nkind: Namespace\nmetadata:\n"
                    f"  name: {name}\n")  # fmt: skip
    done = kubectl.run(
        "apply", "--server-side", "--dry-run=server", "-k", OVERLAY, check=False, timeout=180
    )
    assert done.returncode == 1, (done.stdout, done.stderr)
    errors = [line for line in done.stderr.splitlines() if line.strip()]
    assert errors == [DEPLOYMENT_REFUSED], done.stderr
    applied = sorted(line for line in done.stdout.splitlines() if line.strip())
    assert all(line.endswith(DRY) for line in applied), done.stdout
    assert [line.removesuffix(DRY) for line in applied] == sorted(
        _printed(o) for o in expected if o["kind"] != "Deployment"
    )
    for kind, name in [
        ("mutatingwebhookconfiguration.admissionregistration.k8s.io",
         "defaulter.trainer.kubeflow.org"),
        ("validatingwebhookconfiguration.admissionregistration.k8s.io",
         "validator.trainer.kubeflow.org"),
    ]:  # fmt: skip
        assert f"{kind}/{name}{DRY}" in applied
        got = kubectl.run("get", kind, name, check=False)
        assert got.returncode == 1, "a dry run stores nothing"
        assert "NotFound" in got.stderr, got.stderr
