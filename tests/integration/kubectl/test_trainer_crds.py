"""The Trainer v2 CRDs and shipped runtimes with the real ``kubectl`` against ``trainop local
up`` (issue 22 acceptance): ``kubectl apply --server-side`` of the CRDs and of the runtimes
overlay succeeds (twice: the second apply changes nothing), ``kubectl explain`` prints the
descriptions of ``trainjob.spec.runtimePatches``, and ``kubectl get clustertrainingruntimes``
lists the shipped runtimes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests import polling
from tests.integration.kubectl.conftest import ROOT, Kubectl

CRDS = ROOT / "manifests" / "trainer" / "crds"
RUNTIMES = ROOT / "manifests" / "trainer" / "overlays" / "runtimes"
RUNTIME_NAMES = sorted(
    d["metadata"]["name"]
    for path in RUNTIMES.glob("*.yaml")
    for d in yaml.safe_load_all(path.read_text())
    if d and d.get("kind") == "ClusterTrainingRuntime"
)


def _applied(kubectl: Kubectl, folder: Path) -> list[str]:
    done = kubectl.run("apply", "--server-side", "-k", str(folder), check=False, timeout=180)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    assert all(line.endswith(" serverside-applied") for line in lines), done.stdout
    return lines


@pytest.fixture(scope="module")
def installed(kubectl: Kubectl) -> Kubectl:
    lines = _applied(kubectl, CRDS)
    assert sorted(line.split()[0] for line in lines) == [
        "customresourcedefinition.apiextensions.k8s.io/clustertrainingruntimes.trainer.kubeflow.org",
        "customresourcedefinition.apiextensions.k8s.io/trainingruntimes.trainer.kubeflow.org",
        "customresourcedefinition.apiextensions.k8s.io/trainjobs.trainer.kubeflow.org",
    ]
    polling.wait_for(
        lambda: kubectl.run("get", "clustertrainingruntimes", check=False).returncode == 0,
        timeout=60,
        what="the Trainer kinds served",
        interval=0.2,
    )
    return kubectl


def test_runtimes_overlay_applies_server_side(installed: Kubectl) -> None:
    for _ in range(2):
        lines = _applied(installed, RUNTIMES)
        names = [line.split()[0] for line in lines]
        for runtime in RUNTIME_NAMES:
            assert f"clustertrainingruntime.trainer.kubeflow.org/{runtime}" in names
        assert "configmap/kubeflow-trainer-public" in names
    stored = json.loads(
        installed.out("get", "clustertrainingruntime", "torch-distributed", "-o", "json")
    )
    node = stored["spec"]["template"]["spec"]["replicatedJobs"][0]
    assert node["replicas"] == 1  # the CRD's default, applied by the server
    assert node["groupName"] == "default"
    public = json.loads(
        installed.out(
            "get", "configmap", "kubeflow-trainer-public", "-n", "kubeflow-system", "-o", "json"
        )
    )
    assert public["data"] == {"kubeflow_trainer_version": "v2.3.0"}


def test_get_clustertrainingruntimes_lists_them(installed: Kubectl) -> None:
    _applied(installed, RUNTIMES)
    rows = installed.out("get", "clustertrainingruntimes").splitlines()
    assert rows[0].split() == ["NAME", "AGE"]
    listed = sorted(row.split()[0] for row in rows[1:])
    assert set(RUNTIME_NAMES) <= set(listed)


def test_explain_runtime_patches(installed: Kubectl) -> None:
    text = installed.out("explain", "trainjob.spec.runtimePatches")
    assert "KIND:" in text
    assert "TrainJob" in text
    assert "trainer.kubeflow.org" in text
    assert "one entry per manager" in " ".join(text.split())
    assert "manager" in text
    assert "trainingRuntimeSpec" in text
    deeper = installed.out("explain", "trainjob.spec.runtimePatches.manager")
    assert "domain-prefixed path" in " ".join(deeper.split())


def test_trainjob_printer_columns(installed: Kubectl, ns: str, tmp_path: Path) -> None:
    manifest = (
        "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata:\n  name: tj\n"
        "spec:\n  suspend: true\n  runtimeRef:\n    name: torch-distributed\n"
    )  # suspended: only its stored form matters here, not a run
    (tmp_path / "tj.yaml").write_text(manifest)
    installed.run("apply", "--server-side", "-n", ns, "-f", str(tmp_path / "tj.yaml"))
    rows = installed.out("get", "trainjobs", "-n", ns).splitlines()
    assert rows[0].split() == ["NAME", "STATE", "AGE"]
    stored = json.loads(installed.out("get", "trainjob", "tj", "-n", ns, "-o", "json"))
    assert stored["spec"]["runtimeRef"] == {
        "name": "torch-distributed",
        "apiGroup": "trainer.kubeflow.org",
        "kind": "ClusterTrainingRuntime",
    }
    assert stored["spec"]["suspend"] is True
    assert stored["spec"]["managedBy"] == "trainer.kubeflow.org/trainjob-controller"
