"""The real ``trainop operator`` process against the embedded API server."""

from __future__ import annotations

import json
import signal
import ssl
import urllib.request
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.cluster.apiserver.conftest import RunningServer, start_server
from tests.integration.controller.operator_process import (
    OperatorProcess,
    api_client,
    custom,
    get_job,
    install_crds,
)
from tests.polling import wait_for
from tests.unit.api.builders import manifest

JOB_COUNTERS = {
    "training_operator_jobs_created",
    "training_operator_jobs_deleted",
    "training_operator_jobs_successful",
    "training_operator_jobs_failed",
    "training_operator_jobs_restarted",
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    yield from start_server(tmp_path_factory.mktemp("operator"), bookmark_interval=0.5)


@pytest.fixture(scope="module")
def api(server: RunningServer) -> k8s.ApiClient:
    client = api_client(server.kubeconfig)
    install_crds(client)
    return client


def http_get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except OSError:
        return 0, ""


def admission_review(port: int, ca_file: Path) -> dict[str, Any]:
    """POST an invalid PyTorchJob to the operator's webhook over verified HTTPS."""
    job = manifest("PyTorchJob")
    job["spec"]["pytorchReplicaSpecs"]["Master"]["replicas"] = 2
    review = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "u-1",
            "operation": "CREATE",
            "object": job,
            "kind": {"group": "kubeflow.org", "version": "v1", "kind": "PyTorchJob"},
        },
    }
    context = ssl.create_default_context(cafile=str(ca_file))
    request = urllib.request.Request(
        f"https://localhost:{port}/validate-kubeflow-org-v1-pytorchjob",
        data=json.dumps(review).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, context=context, timeout=10) as response:
        result: dict[str, Any] = json.loads(response.read())
    return result


def samples(port: int, family: str, **labels: str) -> list[float]:
    """Values of ``<family>_total`` samples with these labels on the operator's /metrics."""
    text = http_get(port, "/metrics")[1]
    return [
        s.value
        for f in text_string_to_metric_families(text)
        if f.name == family
        for s in f.samples
        if s.name == f"{family}_total" and all(s.labels.get(k) == v for k, v in labels.items())
    ]


def reconciles_done(port: int, kind: str) -> bool:
    text = http_get(port, "/metrics")[1]
    return any(
        s.value >= 1
        for f in text_string_to_metric_families(text)
        if f.name == "trainop_reconcile_duration_seconds"
        for s in f.samples
        if s.name.endswith("_count")
        and s.labels.get("kind") == kind
        and s.labels.get("outcome") in ("done", "requeue")
    )


def is_ready(port: int) -> bool:
    return http_get(port, "/readyz")[0] == 200


def pods_of(api: k8s.ApiClient, job: str) -> list[str]:
    selector = f"training.kubeflow.org/job-name={job}"
    items = k8s.CoreV1Api(api).list_namespaced_pod("default", label_selector=selector).items
    return sorted(p.metadata.name for p in items)


def set_pods_phase(api: k8s.ApiClient, job: str, phase: str) -> None:
    core = k8s.CoreV1Api(api)
    for name in pods_of(api, job):
        core.patch_namespaced_pod_status(name, "default", {"status": {"phase": phase}})


def test_operator_reconciles_serves_metrics_and_stops_on_sigterm(
    server: RunningServer, api: k8s.ApiClient, tmp_path: Path
) -> None:
    certs = tmp_path / "certs"
    operator = OperatorProcess(
        server.kubeconfig,
        "--enable-scheme",
        "PyTorchJob",
        log=tmp_path / "operator.log",
        webhook_cert_dir=certs,
    )
    try:
        wait_for(
            lambda: http_get(operator.health_port, "/readyz")[0] == 200,
            timeout=30,
            what="/readyz 200",
        )
        assert http_get(operator.health_port, "/healthz") == (200, "ok")
        denial = admission_review(operator.webhook_port, certs / "ca.crt")
        assert denial["response"]["allowed"] is False
        message = denial["response"]["status"]["message"]
        assert "spec.pytorchReplicaSpecs[Master].replicas: Forbidden: must be 1" in message
        custom(api).create_namespaced_custom_object(
            "kubeflow.org", "v1", "default", "pytorchjobs", manifest("PyTorchJob", name="m1")
        )
        wait_for(lambda: len(pods_of(api, "m1")) == 3, timeout=30, what="three pods")
        set_pods_phase(api, "m1", "Running")
        set_pods_phase(api, "m1", "Succeeded")
        wait_for(
            lambda: any(
                c["type"] == "Succeeded" and c["status"] == "True"
                for c in (get_job(api, "pytorchjobs", "m1").get("status") or {}).get(
                    "conditions", []
                )
            ),
            timeout=30,
            what="Succeeded",
        )
        status, text = http_get(operator.metrics_port, "/metrics")
        assert status == 200
        families = {f.name: f for f in text_string_to_metric_families(text)}
        assert families.keys() >= JOB_COUNTERS

        def value(name: str) -> float:
            return sum(
                s.value
                for s in families[name].samples
                if s.name == f"{name}_total" and s.labels.get("framework") == "pytorch"
            )

        assert value("training_operator_jobs_created") == 1
        assert value("training_operator_jobs_successful") == 1
        assert value("training_operator_jobs_failed") == 0
    finally:
        code = operator.stop(signal.SIGTERM)
    assert code == 0, (tmp_path / "operator.log").read_text()[-2000:]


def jax_created(port: int) -> list[float]:
    return [
        s.value
        for f in text_string_to_metric_families(http_get(port, "/metrics")[1])
        if f.name == "training_operator_jobs_created"
        for s in f.samples
        if s.name.endswith("_total") and s.labels.get("framework") == "jax"
    ]


def test_a_restarted_operator_does_not_count_existing_jobs_again(
    server: RunningServer, api: k8s.ApiClient, tmp_path: Path
) -> None:
    custom(api).create_namespaced_custom_object(
        "kubeflow.org", "v1", "default", "jaxjobs", manifest("JAXJob", name="j1")
    )
    for attempt in range(2):
        operator = OperatorProcess(
            server.kubeconfig, "--enable-scheme", "jaxjob", log=tmp_path / "operator.log"
        )
        try:
            wait_for(lambda: len(pods_of(api, "j1")) == 2, timeout=30, what="JAX pods")
            port = operator.metrics_port
            # Wait until this operator has finished reconciling the job at least once.
            wait_for(
                partial(reconciles_done, port, "JAXJob"), timeout=30, what="a completed reconcile"
            )
            created = samples(port, "training_operator_jobs_created", framework="jax")
            assert created == ([1.0] if attempt == 0 else []), f"attempt {attempt}: {created}"
        finally:
            assert operator.stop() == 0


def has_created_condition(api: k8s.ApiClient, name: str) -> bool:
    conditions = (get_job(api, "jaxjobs", name).get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Created" for c in conditions)


def jax_jobs_created(metrics_port: int) -> list[float]:
    text = http_get(metrics_port, "/metrics")[1]
    return [
        s.value
        for f in text_string_to_metric_families(text)
        if f.name == "training_operator_jobs_created"
        for s in f.samples
        if s.name.endswith("_total") and s.labels.get("framework") == "jax"
    ]


def test_leader_election_one_reconciles_and_a_standby_takes_over(
    server: RunningServer, api: k8s.ApiClient, tmp_path: Path
) -> None:
    election = [
        "--enable-scheme",
        "xgboostjob",
        "--leader-elect",
        "--leader-election-namespace",
        "default",
        "--leader-election-id",
        "trainop-test-lock",
        "--leader-elect-lease-duration",
        "4",
        "--leader-elect-renew-deadline",
        "3",
        "--leader-elect-retry-period",
        "0.5",
    ]
    first = OperatorProcess(server.kubeconfig, *election, log=tmp_path / "a.log")
    coordination = k8s.CoordinationV1Api(api)

    def holder() -> str | None:
        try:
            lease = coordination.read_namespaced_lease("trainop-test-lock", "default")
        except k8s.ApiException:
            return None
        return lease.spec.holder_identity

    leader = wait_for(holder, timeout=30, what="a leader")
    second = OperatorProcess(server.kubeconfig, *election, log=tmp_path / "b.log")
    try:
        custom(api).create_namespaced_custom_object(
            "kubeflow.org", "v1", "default", "xgboostjobs", manifest("XGBoostJob", name="x1")
        )
        wait_for(lambda: len(pods_of(api, "x1")) == 3, timeout=30, what="pods from the leader")
        assert holder() == leader
        assert http_get(second.health_port, "/readyz")[0] != 200, "the standby is not reconciling"
        first.stop(signal.SIGKILL)
        new_leader = wait_for(lambda: (h := holder()) != leader and h, timeout=20, what="takeover")
        assert new_leader
        k8s.CoreV1Api(api).delete_namespaced_pod("x1-worker-0", "default")
        wait_for(
            lambda: "x1-worker-0" in pods_of(api, "x1"), timeout=20, what="the new leader acts"
        )
    finally:
        second.stop()


def test_gang_scheduling_without_its_pod_group_crd_fails_readyz_naming_the_crd(
    server: RunningServer, api: k8s.ApiClient, tmp_path: Path
) -> None:
    """Upstream exits (spec 8.1); trainop stays up, not ready, and creates no pod (005)."""
    custom(api).create_namespaced_custom_object(
        "kubeflow.org", "v1", "default", "pytorchjobs", manifest("PyTorchJob", name="nogang")
    )
    operator = OperatorProcess(
        server.kubeconfig,
        "--enable-scheme",
        "pytorchjob",
        "--gang-scheduler-name",
        "volcano",
        log=tmp_path / "operator.log",
    )
    try:
        status, body = wait_for(
            lambda: "PodGroup" in (found := http_get(operator.health_port, "/readyz"))[1] and found,
            timeout=30,
            what="/readyz naming the PodGroup CRD",
        )
        assert (status, body) == (
            500,
            "gang scheduler 'volcano' needs the PodGroup CRD podgroups.scheduling.volcano.sh"
            " (scheduling.volcano.sh/v1beta1), which is not installed: crd might be missing,"
            " please install crd; no job is reconciled until it is",
        )
        assert http_get(operator.health_port, "/healthz") == (200, "ok")
        assert pods_of(api, "nogang") == []
    finally:
        assert operator.stop() == 0
        custom(api).delete_namespaced_custom_object(
            "kubeflow.org", "v1", "default", "pytorchjobs", "nogang"
        )
