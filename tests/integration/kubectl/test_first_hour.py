"""The rest of kubectl's first hour with the real binary: events in ``describe`` and
``kubectl events``, ``logs --since``, ``auth can-i``/``whoami``, the default ServiceAccount,
Secret ``stringData``, strict validation of built-in kinds, ``get nodes``, and ``exec``."""

from __future__ import annotations

import json
import time
from pathlib import Path

from .conftest import Kubectl

QUICK = """
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: quick
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
            - name: pytorch
              image: python:3.11
              command: [python, -c, "print(1)"]
"""


def _write(tmp_path: Path, text: str, name: str = "obj.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_describe_and_events_show_the_jobs_events(
    kubectl: Kubectl, ns: str, tmp_path: Path
) -> None:
    kubectl.run("apply", "-n", ns, "-f", _write(tmp_path, QUICK))
    kubectl.run("wait", "-n", ns, "--for=condition=Succeeded", "pytorchjob/quick", "--timeout=60s")
    described = kubectl.out("describe", "-n", ns, "pytorchjob", "quick")
    events = described.split("Events:", 1)[1]
    assert "SuccessfulCreatePod" in events, described
    listed = kubectl.out("events", "-n", ns, "--for", "pytorchjob/quick")
    assert listed.splitlines()[0].split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert "SuccessfulCreatePod" in listed
    assert "PyTorchJob/quick" in listed
    # A pod's events (the kubelet's, or here one recorded by hand) show in describe pod.
    uid = kubectl.out("get", "pod", "-n", ns, "quick-master-0", "-o", "jsonpath={.metadata.uid}")
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "quick-master-0.hand"},
        "involvedObject": {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": "quick-master-0",
            "namespace": ns,
            "uid": uid,
        },
        "reason": "HandWritten",
        "message": "recorded by the test",
        "type": "Warning",
        "source": {"component": "kubelet"},
    }
    kubectl.run("create", "-n", ns, "-f", _write(tmp_path, json.dumps(event), "event.json"))
    pod = kubectl.out("describe", "-n", ns, "pod", "quick-master-0")
    assert "HandWritten" in pod.split("Events:", 1)[1]
    assert "SuccessfulCreatePod" not in pod.split("Events:", 1)[1]
    warnings = kubectl.out("events", "-n", ns, "--types=Warning")
    assert "HandWritten" in warnings
    assert "SuccessfulCreatePod" not in warnings


def test_logs_since(kubectl: Kubectl, ns: str, tmp_path: Path) -> None:
    kubectl.run("apply", "-n", ns, "-f", _write(tmp_path, QUICK))
    kubectl.run("wait", "-n", ns, "--for=condition=Succeeded", "pytorchjob/quick", "--timeout=60s")
    assert kubectl.out("logs", "-n", ns, "quick-master-0", "--since=1h") == "1\n"
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))
    assert kubectl.out("logs", "-n", ns, "quick-master-0", f"--since-time={since}") == ""
