"""Upstream v1.9's own observable strings and names, driven through the real ``Manager`` on the
embedded API server (``cluster``): issue 11's fidelity items.

Every expected value here is upstream's, taken from its controller tests or code (named per
test), never from trainop's output: the cluster domain suffix of TF_CONFIG hosts, the Failed
message of an ExitCode replica, the MPI scripts and launcher ServiceAccount, the PyTorch init
container command, MXJob's empty ``jobMode``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.integration.apiserver.conftest import RunningServer
from tests.integration.controller.cluster import (
    Cluster,
    annotate,
    condition_on,
    eventually,
    replica_count,
    replica_spec,
    run_cluster,
    start_cluster_server,
)
from tests.unit.api.builders import manifest
from trainop.api.kinds import KINDS
from trainop.controller.manager import ManagerOptions
from trainop.kube.client import Obj

ALL_KINDS = [info.kind for info in KINDS]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    yield from start_cluster_server(tmp_path_factory.mktemp("fidelity"))


def env_of(pod: Obj, container: str) -> dict[str, str | None]:
    found = next(c for c in pod["spec"]["containers"] if c["name"] == container)
    return {e["name"]: e.get("value") for e in found.get("env") or []}


# --- item 3: CUSTOM_CLUSTER_DOMAIN --------------------------------------------------------------


def test_custom_cluster_domain_suffixes_tf_config_hosts(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Upstream ``tensorflow/tensorflow_test.go`` (TestClusterSpec, customClusterDomain
    ``tf.training.com``): hosts are ``<job>-<rt>-<i>.<ns>.svc.tf.training.com:2222``; the other
    kinds' peer names stay short Service names (spec 7)."""
    monkeypatch.setenv("CUSTOM_CLUSTER_DOMAIN", "tf.training.com")
    options = ManagerOptions()  # read from the operator's environment, as upstream

    async def body(cluster: Cluster) -> None:
        spec = manifest("TFJob", name="dom")
        del spec["spec"]["tfReplicaSpecs"]["Chief"]
        await cluster.create_job(spec)
        pods = await cluster.until_pods("dom", 3)
        ns = cluster.namespace
        expected = (
            '{"cluster":{"ps":["dom-ps-0.NS.svc.tf.training.com:2222"],'
            '"worker":["dom-worker-0.NS.svc.tf.training.com:2222",'
            '"dom-worker-1.NS.svc.tf.training.com:2222"]},'
            '"task":{"type":"worker","index":1},"environment":"cloud"}'
        ).replace("NS", ns)
        assert env_of(pods["dom-worker-1"], "tensorflow")["TF_CONFIG"] == expected

        await cluster.create_job(manifest("PyTorchJob", name="short"))
        torch = await cluster.until_pods("short", 3)
        assert env_of(torch["short-worker-0"], "pytorch")["MASTER_ADDR"] == "short-master-0"

    run_cluster(server, body, options=options)


def test_without_a_cluster_domain_tf_config_hosts_end_in_svc(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CUSTOM_CLUSTER_DOMAIN", raising=False)

    async def body(cluster: Cluster) -> None:
        spec = manifest("TFJob", name="plain")
        await cluster.create_job(spec)
        pods = await cluster.until_pods("plain", 4)
        config = json.loads(env_of(pods["plain-worker-0"], "tensorflow")["TF_CONFIG"] or "")
        assert config["cluster"]["chief"] == [f"plain-chief-0.{cluster.namespace}.svc:2222"]

    run_cluster(server, body, options=ManagerOptions())


# --- item 4: the Failed message of an ExitCode replica --------------------------------------


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_exit_code_failure_uses_upstreams_message(server: RunningServer, kind: str) -> None:
    """Upstream ``tensorflow/pod_test.go`` "Test Unretryable Exit Code" (and ``common/pod.go``,
    shared by every kind): condition message ``job "<name>" is failing because "Worker"
    replica(s) failed.``, reason ``<Kind>Failed``; the event is a Warning with that message."""

    async def body(cluster: Cluster) -> None:
        spec = manifest(kind, name="unretryable")
        replica_spec(spec, "Worker")["restartPolicy"] = "ExitCode"
        annotate(spec, "Worker", run_seconds=10, exit_code=1)
        job = await cluster.create_job(spec)
        await cluster.until_pods("unretryable", replica_count(job), "Running")
        await cluster.advance(10)
        failed = await cluster.until_condition(kind, "unretryable", "Failed")
        found = condition_on(failed, "Failed")
        assert found["reason"] == f"{kind}Failed"
        assert (
            found["message"] == 'job "unretryable" is failing because "Worker" replica(s) failed.'
        )
        events = await eventually(lambda: cluster.events(f"{kind}Failed"), what="Failed event")
        assert [(e["type"], e["message"]) for e in events] == [("Warning", found["message"])]

    run_cluster(server, body)
