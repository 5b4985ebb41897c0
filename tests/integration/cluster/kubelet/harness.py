"""Drive a ``Kubelet`` against the embedded API server (in a thread) with real processes.

The kubelet runs on the test's own event loop through ``HttpClient``; the API server serves
pod logs from the kubelet's ``LogFiles``. Everything waits with ``tests.polling``; every
process a test starts is ended by the fixtures, also when the test fails.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests import polling
from tests.integration.cluster.apiserver import conftest as apiserver_fixtures
from tests.integration.cluster.apiserver.conftest import RunningServer
from trainop.cluster.kubelet import Backoff, Kubelet, KubeletConfig, LogFiles
from trainop.kube.client import Obj
from trainop.kube.http import HttpClient
from trainop.kube.resources import NAMESPACES, PODS

DEADLINE = 30.0
PYTHON = sys.executable


def start_server(state_dir: Path, logs: LogFiles) -> Iterator[RunningServer]:
    """The embedded API server on its own thread, serving logs from ``logs``."""
    yield from apiserver_fixtures.start_server(state_dir, log_source=logs, bookmark_interval=0.2)


def py(code: str, name: str = "main", **extra: Any) -> Obj:
    """A container running ``python -c code``."""
    return {"name": name, "image": "python:3", "command": [PYTHON, "-c", code], **extra}


def pod(name: str, *containers: Obj, restart_policy: str = "Never", **spec: Any) -> Obj:
    body = {"restartPolicy": restart_policy, "containers": list(containers), **spec}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": body}


@dataclass
class Local:
    client: HttpClient
    kubelet: Kubelet
    namespace: str
    root: Path

    async def create(self, manifest: Obj, resource: Any = PODS) -> Obj:
        return await self.client.create(resource, manifest, namespace=self.namespace)

    async def get(self, name: str) -> Obj:
        return await self.client.get(PODS, name=name, namespace=self.namespace)

    async def wait(
        self, name: str, predicate: Callable[[Obj], bool], *, timeout: float = DEADLINE
    ) -> Obj:
        """Poll the pod until ``predicate`` holds (AssertionError with the last status)."""
        found: Obj = {}

        async def probe() -> Obj | polling.NotYet:
            nonlocal found
            with contextlib.suppress(Exception):  # not created yet; a predicate's KeyError
                found = await self.get(name)
                if predicate(found):
                    return found
            return polling.NotYet(found.get("status"))

        pod: Obj = await polling.until(
            probe, timeout=timeout, what=f"pod {name} to match", interval=0.05
        )
        return pod

    async def phase(self, name: str, *phases: str) -> Obj:
        return await self.wait(name, lambda p: (p.get("status") or {}).get("phase") in phases)

    async def gone(self, name: str, *, timeout: float = DEADLINE) -> None:
        async def probe() -> bool | polling.NotYet:
            try:
                pod = await self.get(name)
            except Exception:  # NotFound
                return True
            return polling.NotYet(pod.get("status"))

        await polling.until(probe, timeout=timeout, what=f"pod {name} removed", interval=0.05)


@contextlib.asynccontextmanager
async def local(
    server: RunningServer, logs: LogFiles, root: Path, **options: Any
) -> AsyncIterator[Local]:
    """A kubelet on a fresh namespace; stopped (with its processes) afterwards."""
    client = HttpClient.from_kubeconfig(path=str(server.kubeconfig))
    namespace = f"k-{uuid.uuid4().hex[:8]}"
    clock = options.pop("clock", None)  # a FakeClock times the back-offs
    runtime = options.pop("container_runtime", None)  # None: host processes
    config = KubeletConfig(
        root=root,
        backoff=options.pop("backoff", Backoff(initial=0.05, maximum=0.2)),
        gpus=options.pop("gpus", ()),
        shutdown_grace=1.0,
        **options,
    )
    kubelet = Kubelet(
        client=client,
        config=config,
        namespace=namespace,
        logs=logs,
        clock=clock,
        container_runtime=runtime,
    )
    task = asyncio.create_task(kubelet.run())
    try:
        await client.create(NAMESPACES, {"metadata": {"name": namespace}})
        async with asyncio.timeout(DEADLINE):
            await kubelet.synced.wait()
        yield Local(client, kubelet, namespace, root)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await client.close()


def run_local(
    server: RunningServer,
    logs: LogFiles,
    root: Path,
    body: Callable[[Local], Awaitable[None]],
    **options: Any,
) -> None:
    async def main() -> None:
        async with local(server, logs, root, **options) as env:
            await body(env)

    asyncio.run(main())


def is_alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting to be reaped counts as dead)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def wait_dead(pids: list[int], *, timeout: float = DEADLINE) -> None:
    def probe() -> bool | polling.NotYet:
        alive = [p for p in pids if is_alive(p)]
        return not alive or polling.NotYet(alive)

    polling.wait_for(probe, timeout=timeout, what="every process dead", interval=0.02)


def kill_all(pids: list[int]) -> None:
    """Clean-up: SIGKILL whatever is still alive (never reached when the test passed)."""
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
