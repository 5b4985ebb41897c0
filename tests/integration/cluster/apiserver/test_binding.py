"""``pods/binding``: the scheduler's write, with kube-apiserver's answers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.cluster.apiserver.conftest import RunningServer, start_server
from trainop import errors
from trainop.kube.http import HttpClient
from trainop.kube.resources import PODS


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RunningServer]:
    yield from start_server(tmp_path / "state")


def test_a_binding_sets_the_node_and_pod_scheduled_once(server: RunningServer) -> None:
    async def scenario() -> None:
        client = HttpClient.from_kubeconfig(path=str(server.kubeconfig))
        try:
            pod = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p"},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            }
            created = await client.create(PODS, pod, namespace="default")
            uid = created["metadata"]["uid"]
            with pytest.raises(errors.ConflictError, match="UID in the precondition"):
                await client.bind(name="p", namespace="default", node="n", uid="other")
            await client.bind(name="p", namespace="default", node="n", uid=uid)
            bound = await client.get(PODS, name="p", namespace="default")
            assert bound["spec"]["nodeName"] == "n"
            conditions = bound["status"]["conditions"]
            assert [(c["type"], c["status"]) for c in conditions] == [("PodScheduled", "True")]
            with pytest.raises(errors.ConflictError, match='already assigned to node "n"'):
                await client.bind(name="p", namespace="default", node="m")
            with pytest.raises(errors.NotFoundError):
                await client.bind(name="absent", namespace="default", node="n")
        finally:
            await client.close()

    server.run(scenario())
