"""The HttpClient, the informer and the reconciler against the real embedded API server."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.cluster.apiserver.conftest import RunningServer, start_server
from tests.polling import until
from tests.unit.api.builders import manifest
from trainop import errors
from trainop.api.kinds import kind_info
from trainop.controller.caches import OwnedObjects
from trainop.controller.reconciler import JobReconciler
from trainop.controller.topologies import ClusterTopologySource
from trainop.frameworks.registry import framework_for
from trainop.kube.clock import LoopClock
from trainop.kube.events import EventRecorder
from trainop.kube.http import HttpClient
from trainop.kube.informer import Informer
from trainop.kube.resources import CRDS, PODS, SERVICES, job_resource

ROOT = Path(__file__).resolve().parents[3]
PYTORCH = job_resource(kind_info("PyTorchJob"))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    yield from start_server(tmp_path_factory.mktemp("kube"), bookmark_interval=0.2)


def run(server: RunningServer, body: Callable[[HttpClient], Awaitable[None]]) -> None:
    calls: list[tuple[str, str]] = []

    async def main() -> None:
        client = HttpClient.from_kubeconfig(
            path=str(server.kubeconfig), on_request=lambda v, p: calls.append((v, p))
        )
        try:
            await body(client)
        finally:
            await client.close()

    asyncio.run(main())
    assert calls, "every request is reported to the metrics hook"


def pod(name: str, **labels: str) -> dict[str, Any]:
    spec = {"containers": [{"name": "c", "image": "python:3.11", "command": ["true"]}]}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
    }


def test_crud_and_errors_map_to_the_trainop_tree(server: RunningServer) -> None:
    async def body(client: HttpClient) -> None:
        created = await client.create(PODS, pod("a", app="x"), namespace="default")
        assert created["metadata"]["uid"]
        with pytest.raises(errors.AlreadyExistsError):
            await client.create(PODS, pod("a"), namespace="default")
        listed = await client.list(PODS, namespace="default", label_selector="app=x")
        assert [p["metadata"]["name"] for p in listed.items] == ["a"]
        assert listed.resource_version
        patched = await client.patch(
            PODS, name="a", namespace="default", patch={"metadata": {"labels": {"b": "1"}}}
        )
        assert patched["metadata"]["labels"] == {"app": "x", "b": "1"}
        with pytest.raises(errors.ConflictError):
            await client.replace(PODS, created, namespace="default")
        status = {"status": {"phase": "Running"}}
        out = await client.patch(
            PODS, name="a", namespace="default", patch=status, subresource="status"
        )
        assert out["status"]["phase"] == "Running"
        await client.delete(PODS, name="a", namespace="default", propagation_policy="Background")
        with pytest.raises(errors.NotFoundError):
            await client.get(PODS, name="a", namespace="default")

    run(server, body)


def test_unreachable_server_is_one_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    async def main() -> None:
        import httpx2

        client = HttpClient(httpx2.AsyncClient(base_url=f"http://127.0.0.1:{port}"))
        with pytest.raises(errors.UnreachableError, match="get pods"):
            await client.get(PODS, name="x", namespace="default")
        await client.close()

    asyncio.run(main())


def test_generated_crd_installs_and_a_reconcile_creates_real_pods(server: RunningServer) -> None:
    crd = yaml.safe_load((ROOT / "manifests/crds/pytorchjobs.yaml").read_text())

    async def body(client: HttpClient) -> None:
        await client.create(CRDS, crd)
        wanted = manifest("PyTorchJob", name="real", runPolicy={})
        job = await client.create(PYTORCH, wanted, namespace="default")
        assert job["spec"]["runPolicy"]["suspend"] is False, "CRD schema default applied"
        jobs = Informer(client, PYTORCH, namespace="default")
        owned = OwnedObjects(
            pods=Informer(client, PODS, label_selector="training.kubeflow.org/job-name"),
            services=Informer(client, SERVICES, label_selector="training.kubeflow.org/job-name"),
        )
        tasks = [asyncio.create_task(i.run()) for i in [jobs, *owned.all()]]
        try:
            await asyncio.wait_for(
                asyncio.gather(*(i.synced.wait() for i in [jobs, *owned.all()])), 10
            )
            reconciler = JobReconciler(
                client=client,
                jobs=jobs,
                owned=owned,
                framework=framework_for("PyTorchJob"),
                topologies=ClusterTopologySource(),
                clock=LoopClock(),
                recorder=EventRecorder(client=client, clock=LoopClock()),
            )
            await reconciler.reconcile("default/real")
            await until(lambda: len(owned.pods.items()) >= 3, timeout=10, what="three pods cached")
            names = sorted(p["metadata"]["name"] for p in owned.pods.items())
            assert names == ["real-master-0", "real-worker-0", "real-worker-1"]
            master = owned.pods.get("default", "real-master-0")
            assert master is not None
            env = {e["name"]: e.get("value") for e in master["spec"]["containers"][0]["env"]}
            assert env["MASTER_ADDR"] == "real-master-0"
            assert env["WORLD_SIZE"] == "3"
            stored = await client.get(PYTORCH, name="real", namespace="default")
            assert stored["status"]["conditions"][0]["type"] == "Created"
        finally:
            for task in tasks:
                task.cancel()

    run(server, body)
