"""kubectl's first-hour commands against ``trainop local up``, with no extra flags.

Every test drives the real binary (``conftest.Kubectl``): TLS with the kubeconfig's CA and
token, server-side printing (the STATE column, ``-o wide``), OpenAPI (``explain``, strict
validation), client-side apply, ``wait``, ``logs`` and ``delete``.
"""

from __future__ import annotations

import contextlib
import json
import queue
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from tests import polling
from tests.integration.kubectl.conftest import QUICK, ROOT, Kubectl, write


def _columns(table: str) -> list[str]:
    return table.splitlines()[0].split()


def _rows(table: str) -> dict[str, list[str]]:
    return {line.split()[0]: line.split() for line in table.splitlines()[1:] if line.strip()}


def test_get_pods_over_tls_with_the_written_kubeconfig(kubectl: Kubectl, ns: str) -> None:
    done = kubectl.run("get", "pods", "-n", ns)
    assert f"No resources found in {ns} namespace." in done.stderr


def test_explain_uses_the_crd_schema(kubectl: Kubectl) -> None:
    out = kubectl.out("explain", "pytorchjob.spec.runPolicy")
    assert "KIND:       PyTorchJob" in out
    assert "FIELD: runPolicy <Object>" in out
    for field in ("backoffLimit", "cleanPodPolicy", "suspend", "schedulingPolicy"):
        assert f"  {field}\t<" in out, field


def test_explain_builtin_kind(kubectl: Kubectl) -> None:
    out = kubectl.out("explain", "pods.spec.containers.ports")
    assert "FIELD: ports <[]ContainerPort>" in out
    assert "containerPort\t<integer> -required-" in out


def test_quick_job_apply_wait_get_delete(kubectl: Kubectl, ns: str, tmp_path: Path) -> None:
    job = write(tmp_path, QUICK)
    assert "pytorchjob.kubeflow.org/quick created" in kubectl.out("apply", "-n", ns, "-f", job)
    waited = kubectl.out(
        "wait", "-n", ns, "--for=condition=Succeeded", "pytorchjob/quick", "--timeout=60s"
    )
    assert "condition met" in waited
    listed = kubectl.out("get", "pytorchjobs", "-n", ns)
    assert _columns(listed) == ["NAME", "STATE", "AGE"]
    assert _rows(listed)["quick"][1] == "Succeeded"
    pods = kubectl.out("get", "pods", "-n", ns, "-o", "wide")
    assert _columns(pods) == [
        "NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "NOMINATED", "NODE",
        "READINESS", "GATES",
    ]  # fmt: skip
    assert _rows(pods)["quick-master-0"][1:3] == ["0/1", "Completed"]
    assert kubectl.out("logs", "-n", ns, "quick-master-0") == "1\n"
    assert kubectl.out("logs", "-f", "-n", ns, "quick-master-0") == "1\n"
    again = kubectl.out("apply", "-n", ns, "-f", job)
    assert "pytorchjob.kubeflow.org/quick unchanged" in again
    assert 'pytorchjob.kubeflow.org "quick" deleted' in kubectl.out(
        "delete", "-n", ns, "pytorchjob", "quick"
    )
    gone = kubectl.run("get", "-n", ns, "pytorchjob", "quick", check=False)
    assert gone.returncode == 1
    assert "NotFound" in gone.stderr


def test_apply_the_ddp_example(kubectl: Kubectl, ns: str) -> None:
    example = str(ROOT / "examples" / "pytorch" / "ddp.yaml")
    applied = kubectl.out("apply", "-n", ns, "-f", example)
    assert "pytorchjob.kubeflow.org/pytorch-ddp created" in applied
    listed = kubectl.out("get", "pytorchjobs", "-n", ns)
    assert _columns(listed) == ["NAME", "STATE", "AGE"]
    assert "pytorch-ddp" in _rows(listed)
    everything = _until(lambda: kubectl.out("get", "all", "-n", ns), "service/pytorch-ddp-master-0")
    assert "pod/pytorch-ddp-master-0" in everything
    kubectl.run("delete", "-n", ns, "-f", example, "--wait=false")


def test_strict_validation_names_unknown_fields(kubectl: Kubectl, ns: str, tmp_path: Path) -> None:
    example = str(ROOT / "examples" / "pytorch" / "ddp.yaml")
    created = kubectl.out(
        "create", "--validate=strict", "--dry-run=server", "-n", ns, "-f", example
    )
    assert "pytorchjob.kubeflow.org/pytorch-ddp created (server dry run)" in created
    bad = yaml.safe_load(QUICK)
    bad["spec"]["runPolicy"] = {"backoffLimitt": 3}
    done = kubectl.run(
        "create", "--validate=strict", "-n", ns, "-f", write(tmp_path, yaml.safe_dump(bad)),
        check=False,
    )  # fmt: skip
    assert done.returncode == 1
    assert 'unknown field "spec.runPolicy.backoffLimitt"' in done.stderr


def test_client_side_apply_of_a_builtin_kind(kubectl: Kubectl, ns: str, tmp_path: Path) -> None:
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}}
    first = write(tmp_path, yaml.safe_dump({**config, "data": {"a": "1", "b": "2"}}), "1.yaml")
    second = write(tmp_path, yaml.safe_dump({**config, "data": {"a": "1", "c": "3"}}), "2.yaml")
    kubectl.run("apply", "-n", ns, "-f", first)
    assert "configmap/settings configured" in kubectl.out("apply", "-n", ns, "-f", second)
    data = kubectl.out("get", "configmap", "settings", "-n", ns, "-o", "jsonpath={.data}")
    assert yaml.safe_load(data) == {"a": "1", "c": "3"}
    listed = kubectl.out("get", "configmaps", "-n", ns)
    assert _columns(listed) == ["NAME", "DATA", "AGE"]
    assert _rows(listed)["settings"][1] == "2"


def test_get_watch_prints_rows(kubectl: Kubectl, ns: str, tmp_path: Path) -> None:
    watcher = subprocess.Popen(
        [kubectl.binary, "get", "pods", "-n", ns, "-w", "--request-timeout=60s"],
        env=kubectl.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    output = watcher.stdout
    assert output is not None

    def read() -> None:
        for line in output:
            lines.put(line)

    threading.Thread(target=read, daemon=True).start()
    try:
        kubectl.run("apply", "-n", ns, "-f", write(tmp_path, QUICK))
        seen: list[str] = []

        def completed() -> bool | polling.NotYet:
            with contextlib.suppress(queue.Empty):
                seen.append(lines.get(timeout=1))  # the wait between reads
            return any("Completed" in line for line in seen) or polling.NotYet(seen)

        polling.wait_for(completed, timeout=60, what="a Completed line", interval=0)
    finally:
        watcher.terminate()
        watcher.wait(timeout=10)
    assert seen[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    completed = [line.split() for line in seen if "Completed" in line]
    assert completed, seen
    assert completed[0][:3] == ["quick-master-0", "0/1", "Completed"]


def _until(read: Callable[[], str], needle: str, timeout: float = 30) -> str:
    """``read()``'s text once it contains ``needle``."""

    def probe() -> str | polling.NotYet:
        text = read()
        return text if needle in text else polling.NotYet(text)

    found: str = polling.wait_for(probe, timeout=timeout, what=repr(needle), interval=0.2)
    return found


def test_server_side_apply_conflict_and_force(kubectl: Kubectl, ns: str, tmp_path: Path) -> None:
    example = ROOT / "examples" / "pytorch" / "ddp.yaml"
    job = ("-n", ns, "pytorchjob", "pytorch-ddp")
    applied = kubectl.out("apply", "--server-side", "-n", ns, "-f", str(example))
    assert "pytorchjob.kubeflow.org/pytorch-ddp serverside-applied" in applied

    def owners() -> dict[str, Any]:
        got = json.loads(kubectl.out("get", *job, "-o", "json", "--show-managed-fields"))
        return {e["manager"]: e for e in got["metadata"]["managedFields"]}

    first = owners()["kubectl"]
    assert first["operation"] == "Apply"
    again = kubectl.out("apply", "--server-side", "-n", ns, "-f", str(example))
    assert "serverside-applied" in again
    assert owners()["kubectl"] == first  # a no-op: same fields, same time
    assert kubectl.out("get", *job, "-o", "jsonpath={.metadata.generation}") == "1"

    changed = yaml.safe_load(example.read_text())
    changed["spec"]["pytorchReplicaSpecs"]["Worker"]["restartPolicy"] = "Never"
    other = write(tmp_path, yaml.safe_dump(changed), "changed.yaml")
    args = ("apply", "--server-side", "--field-manager=other", "-n", ns, "-f", other)
    refused = kubectl.run(*args, check=False)
    assert refused.returncode == 1
    assert (
        'Apply failed with 1 conflict: conflict with "kubectl": '
        ".spec.pytorchReplicaSpecs.Worker.restartPolicy"
    ) in refused.stderr
    kubectl.run(*args, "--force-conflicts")
    policy = "jsonpath={.spec.pytorchReplicaSpecs.Worker.restartPolicy}"
    assert kubectl.out("get", *job, "-o", policy) == "Never"
    fields = owners()
    worker = fields["other"]["fieldsV1"]["f:spec"]["f:pytorchReplicaSpecs"]["f:Worker"]
    assert "f:restartPolicy" in worker
    kubectl_worker = fields["kubectl"]["fieldsV1"]["f:spec"]["f:pytorchReplicaSpecs"]["f:Worker"]
    assert "f:restartPolicy" not in kubectl_worker
    kubectl.run("delete", *job, "--wait=false")


def test_server_side_apply_takes_over_from_client_side_apply(
    kubectl: Kubectl, ns: str, tmp_path: Path
) -> None:
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "moved"}}
    first = write(tmp_path, yaml.safe_dump({**config, "data": {"a": "1", "b": "2"}}), "1.yaml")
    second = write(tmp_path, yaml.safe_dump({**config, "data": {"a": "9"}}), "2.yaml")

    def managers() -> dict[str, Any]:
        got = kubectl.out("get", "-n", ns, "cm/moved", "-o", "json", "--show-managed-fields")
        return {e["manager"]: e for e in json.loads(got)["metadata"]["managedFields"]}

    kubectl.run("apply", "-n", ns, "-f", first)
    csa = managers()["kubectl-client-side-apply"]
    assert csa["operation"] == "Update"
    assert csa["fieldsV1"]["f:data"] == {".": {}, "f:a": {}, "f:b": {}}
    refused = kubectl.run("apply", "--server-side", "-n", ns, "-f", second, check=False)
    assert refused.returncode == 1  # as in kube: the client-side applier owns data.a
    assert 'conflict with "kubectl-client-side-apply" using v1: .data.a' in refused.stderr
    # The same content applies; kubectl then moves the client-side fields to its manager.
    kubectl.run("apply", "--server-side", "-n", ns, "-f", first)
    moved = managers()
    assert "kubectl-client-side-apply" not in moved
    assert moved["kubectl"]["fieldsV1"]["f:data"] == {"f:a": {}, "f:b": {}}
    kubectl.run("apply", "--server-side", "-n", ns, "-f", second)
    data = kubectl.out("get", "-n", ns, "cm/moved", "-o", "jsonpath={.data}")
    assert json.loads(data) == {"a": "9"}  # b, applied before and omitted now, is gone
    diff = kubectl.run("diff", "--server-side", "-n", ns, "-f", first, check=False)
    assert diff.returncode == 1, diff.stderr  # 1: differences found
    assert '-  a: "9"' in diff.stdout
    assert '+  a: "1"' in diff.stdout


def test_server_side_apply_of_an_installed_crd(kubectl: Kubectl) -> None:
    # What the README's install does on a cluster, against the CRD `local up` installed.
    crd = str(ROOT / "manifests" / "crds" / "pytorchjobs.yaml")
    for _ in range(2):
        applied = kubectl.out("apply", "--server-side", "-f", crd)
        assert "pytorchjobs.kubeflow.org serverside-applied" in applied
    got = kubectl.out(
        "get", "crd", "pytorchjobs.kubeflow.org", "-o", "json", "--show-managed-fields"
    )
    managers = {e["manager"]: e["operation"] for e in json.loads(got)["metadata"]["managedFields"]}
    assert managers["kubectl"] == "Apply"
