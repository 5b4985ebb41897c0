"""What a job claims and what it leaves alone: the real ``Manager`` against the embedded API
server over HTTP, pods moved by the ``SimulatedKubelet``, one ``FakeClock`` (``cluster``).

- terminating pods that outlive their grace period (a lost node) count as failed;
- foreign objects (a child's name taken by an object the job does not control);
- orphan adoption and release (upstream's controller-ref manager);
- gang scheduling without the PodGroup CRD.

Expected values: the spec (sections 4.3, 4.5, 7.5, 8.1) and upstream's
``mpijob_controller.go`` message format, with the departures of docs/design/005.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta

import pytest

from tests.integration.apiserver.conftest import RunningServer
from tests.integration.controller.cluster import (
    Cluster,
    annotate,
    condition_on,
    is_true,
    replica_spec,
    run_cluster,
    start_cluster_server,
)
from tests.unit.api.builders import manifest
from trainop.kube.client import Obj
from trainop.kube.resources import PODS

LOST_NODE = "lost-node"  # no kubelet serves it: its pods never end by themselves


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    yield from start_cluster_server(tmp_path_factory.mktemp("claims"))


def _time(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp)


async def _run_on_lost_node(cluster: Cluster, name: str) -> None:
    """What the lost node's kubelet reported before it went away: the pod is Running."""
    status = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    await cluster.client.patch(
        PODS, name=name, namespace=cluster.namespace, patch={"status": status},
        subresource="status",
    )  # fmt: skip


# --- terminating pods (issue 11 item 10) -----------------------------------------------------


def test_a_pod_stuck_terminating_on_a_lost_node_counts_failed_after_its_grace(
    server: RunningServer,
) -> None:
    """Upstream counted a terminating Running pod as failed at once (spec 4.5 d); trainop does
    once its grace period plus a minute has passed (005), so a job never waits on it forever:
    with restartPolicy Never the job fails, exactly then (a requeue, no event needed)."""

    async def body(cluster: Cluster) -> None:
        job = annotate(manifest("PyTorchJob", name="lost"), "Master", run_seconds=100_000)
        worker = replica_spec(job, "Worker")
        worker["restartPolicy"] = "Never"
        worker["template"]["spec"]["nodeName"] = LOST_NODE
        await cluster.create_job(job)
        await cluster.until_pods("lost", 3)
        for index in (0, 1):
            await _run_on_lost_node(cluster, f"lost-worker-{index}")
        await cluster.until_condition("PyTorchJob", "lost", "Running")
        await cluster.settle()

        await cluster.client.delete(PODS, name="lost-worker-1", namespace=cluster.namespace)
        pod = await cluster.get(PODS, "lost-worker-1")
        assert pod is not None, "a pod bound to a node waits for its kubelet"
        meta = pod["metadata"]
        grace = int(meta["deletionGracePeriodSeconds"])
        assert grace == 30
        lost_at = _time(meta["deletionTimestamp"]) + timedelta(seconds=grace + 60)

        await cluster.advance((lost_at - cluster.clock.now()).total_seconds() - 1)
        waiting = await cluster.job_now("PyTorchJob", "lost")
        assert not is_true(waiting, "Failed"), "within its grace the pod is not failed yet"
        worker_status = waiting["status"]["replicaStatuses"]["Worker"]
        assert (worker_status.get("active"), worker_status.get("failed")) == (1, None)

        await cluster.advance(1)
        failed = await cluster.until_condition("PyTorchJob", "lost", "Failed")
        assert condition_on(failed, "Failed")["reason"] == "PyTorchJobFailed"
        assert failed["status"]["replicaStatuses"]["Worker"]["failed"] == 1
        assert failed["status"]["completionTime"] == _stamp(lost_at)

    run_cluster(server, body)


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _names(objs: list[Obj]) -> list[str]:
    return sorted(o["metadata"]["name"] for o in objs)
