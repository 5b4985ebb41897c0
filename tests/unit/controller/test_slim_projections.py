"""Owned pods and services are cached as slim projections that the engine reads as the originals.

The expected values are what each reader returns for the server's full objects: the pod views
(``engine.observed``), readiness (``headless.is_ready``), the claims' label match and the
owner and orphan indexes must not tell a slim pod from the full one.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.unit.engine.support import CANONICAL
from trainop.controller.caches import controller_uids, orphan_keys, slim_pod, slim_service
from trainop.engine.headless import is_ready
from trainop.engine.observed import Observed, pod_views
from trainop.frameworks.registry import REGISTRY

OWNER = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "PyTorchJob",
    "name": "job",
    "uid": "uid-1",
    "controller": True,
    "blockOwnerDeletion": True,
}
STAMP = "2025-01-01T12:00:00Z"


def metadata(name: str, replica_type: str, index: str, **extra: Any) -> dict[str, Any]:
    labels = {
        "training.kubeflow.org/operator-name": "pytorchjob-controller",
        "training.kubeflow.org/job-name": "job",
        "training.kubeflow.org/replica-type": replica_type,
        "training.kubeflow.org/replica-index": index,
    }
    return {
        "name": name,
        "namespace": "ns",
        "labels": labels,
        "ownerReferences": [dict(OWNER)],
        "uid": f"uid-{name}",
        "creationTimestamp": STAMP,
        "generation": 1,
        "resourceVersion": "17",
        "managedFields": [{"manager": "trainop", "fieldsV1": {"f:metadata": {}}}],
        **extra,
    }


def container_status(name: str, state: dict[str, Any], restarts: int = 0) -> dict[str, Any]:
    return {
        "name": name,
        "image": "python:3.11",
        "imageID": "",
        "ready": "running" in state,
        "restartCount": restarts,
        "state": state,
        "lastState": {"terminated": {"exitCode": 3, "reason": "Error"}},
        "containerID": f"sim://{name}/0",
        "started": True,
    }


def conditions(ready: str) -> list[dict[str, Any]]:
    kinds = ("PodScheduled", "Initialized", "ContainersReady", "Ready")
    return [
        {"type": t, "status": ready if t != "PodScheduled" else "True",
         "lastTransitionTime": STAMP, "reason": "R", "message": "m", "lastProbeTime": None}
        for t in kinds
    ]  # fmt: skip


def pod(name: str, replica_type: str, index: str, status: dict[str, Any], **meta: Any) -> Any:
    common = {"hostIP": "10.0.0.1", "hostIPs": [{"ip": "10.0.0.1"}], "podIPs": [{"ip": "10.1.0.7"}],
              "qosClass": "BestEffort", "startTime": STAMP}  # fmt: skip
    spec = {"containers": [{"name": "pytorch", "image": "python:3.11"}], "nodeName": "n"}
    body = {"metadata": metadata(name, replica_type, index, **meta), "spec": spec}
    return {"apiVersion": "v1", "kind": "Pod", **body, "status": {**common, **status}}


PODS = [
    pod("job-master-0", "master", "0", {"phase": "Running", "podIP": "10.1.0.7",
        "conditions": conditions("True"),
        "containerStatuses": [container_status("pytorch", {"running": {"startedAt": STAMP}})]}),
    pod("job-worker-0", "worker", "0", {"phase": "Failed", "reason": "Evicted", "message": "gone",
        "containerStatuses": [container_status("pytorch", {"terminated": {"exitCode": 137,
            "reason": "OOMKilled", "message": "killed", "startedAt": STAMP}}, restarts=2)]}),
    pod("job-worker-1", "worker", "1", {"phase": "Pending", "conditions": conditions("False"),
        "initContainerStatuses": [container_status("init", {"waiting": {
            "reason": "CrashLoopBackOff", "message": "back-off 10s"}}, restarts=4)]}),
    pod("job-worker-2", "worker", "2", {"phase": "Pending", "conditions": conditions("False")},
        deletionTimestamp=STAMP, deletionGracePeriodSeconds=30),
]  # fmt: skip


def test_pod_views_of_slim_pods_equal_those_of_the_servers_pods() -> None:
    job = CANONICAL["PyTorchJob"]
    framework = REGISTRY["PyTorchJob"]
    full = pod_views(Observed(pods=tuple(PODS)), job, framework)
    slim = pod_views(Observed(pods=tuple(slim_pod(copy.deepcopy(p)) for p in PODS)), job, framework)
    assert len(full) == 4
    assert {view.exit_code for view in full} == {None, 137}
    assert slim == full


@pytest.mark.parametrize("raw", PODS, ids=lambda p: p["metadata"]["name"])
def test_a_slim_pod_reads_as_the_full_one_and_drops_the_rest(raw: dict[str, Any]) -> None:
    slim = slim_pod(copy.deepcopy(raw))
    assert is_ready(slim) == is_ready(raw)
    assert controller_uids(slim) == controller_uids(raw) == ["uid-1"]
    assert orphan_keys(slim) == orphan_keys(raw)
    for key in ("name", "namespace", "uid", "resourceVersion", "labels", "ownerReferences"):
        assert slim["metadata"][key] == raw["metadata"][key]
    for key in ("phase", "reason", "message", "podIP"):
        assert slim["status"].get(key) == raw["status"].get(key)
    assert "spec" not in slim
    assert not {"managedFields", "generation"} & set(slim["metadata"])
    assert not {"hostIP", "hostIPs", "podIPs", "qosClass", "startTime"} & set(slim["status"])
    for entry in slim["status"].get("containerStatuses", []):
        assert set(entry) == {"name", "state", "restartCount"}


def test_a_slim_service_keeps_its_metadata_only() -> None:
    meta: dict[str, Any] = metadata("job-master-0", "master", "0")
    raw: dict[str, Any] = {"apiVersion": "v1", "kind": "Service", "metadata": meta,
           "spec": {"clusterIP": "None", "ports": [{"port": 23456}]}, "status": {}}  # fmt: skip
    slim = slim_service(copy.deepcopy(raw))
    assert slim["kind"] == "Service"
    assert slim["metadata"]["labels"] == raw["metadata"]["labels"]
    assert controller_uids(slim) == ["uid-1"]
    assert set(slim) == {"apiVersion", "kind", "metadata"}


def test_children_of_one_job_share_their_owner_reference() -> None:
    first, second = (slim_pod(copy.deepcopy(p)) for p in PODS[:2])
    assert first["metadata"]["ownerReferences"] is second["metadata"]["ownerReferences"]
