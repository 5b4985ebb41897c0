"""Fixtures: an embedded API server on 127.0.0.1 in a background event loop, and clients.

The server runs in its own thread and event loop (the official client is synchronous), one
per test module; each test gets a fresh namespace so tests never see each other's objects.
``driver`` is parametrised over the official ``kubernetes`` client and lightkube's
``AsyncClient``, so every scenario runs against both.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests.integration.cluster.apiserver import drivers
from trainop.cluster.apiserver import ApiServer, ServerConfig
from trainop.kube.podlogs import MemoryLogSource

T = TypeVar("T")


@dataclass
class RunningServer:
    """A started server and the loop it runs on."""

    server: ApiServer
    loop: asyncio.AbstractEventLoop
    logs: Any  # the log source: a MemoryLogSource that tests write to, or the kubelet's

    @property
    def kubeconfig(self) -> Path:
        return self.server.kubeconfig_path

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine on the server's loop and wait for it."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=30)

    def call(self, fn: Any) -> Any:
        """Call a plain function on the server's loop thread (log writes, for example)."""

        async def invoke() -> Any:
            return fn()

        return self.run(invoke())


def start_server(
    state_dir: Path, *, log_source: Any = None, **options: Any
) -> Iterator[RunningServer]:
    """Start a server in a thread (logs from ``log_source``, else an in-memory source that
    tests write to); stop it and its loop afterwards."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    logs = log_source if log_source is not None else MemoryLogSource()
    server = ApiServer(ServerConfig(state_dir=state_dir, log_source=logs, **options))
    running = RunningServer(server=server, loop=loop, logs=logs)
    running.run(server.start())
    try:
        yield running
    finally:
        running.run(server.stop())
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """A server shared by the tests of one module (short history so 410 is reachable).

    These modules serve a stand-in ``pytorchjobs.kubeflow.org`` CRD (``test_scenarios.CRD``)
    whose objects are not training jobs, so the webhook's job rules are off here; the suites
    with the real CRDs (``tests/integration/controller``, ``test_admission``) keep them on.
    """
    yield from start_server(
        tmp_path_factory.mktemp("apiserver"),
        bookmark_interval=0.2,
        history=100,
        job_admission=False,
    )


@pytest.fixture(params=["official", "lightkube", "trainop"])
def driver(request: pytest.FixtureRequest, api: RunningServer) -> Iterator[drivers.Driver]:
    """The same scenarios through the official client, lightkube, and the controller's client."""
    made = drivers.make(request.param, api.kubeconfig)
    try:
        yield made
    finally:
        made.close()


@pytest.fixture
def ns(driver: drivers.Driver) -> str:
    """A fresh namespace for one test."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    driver.create(
        drivers.NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )
    return name
