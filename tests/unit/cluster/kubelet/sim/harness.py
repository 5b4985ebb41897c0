"""Drive a ``SimulatedKubelet`` on a ``FakeClock`` against any ``Client``.

Shared by the unit tests (``FakeClient``) and the integration tests (the embedded API server
through ``HttpClient``). Time only moves in ``advance``; after it, ``drained`` guarantees
every status write the kubelet made has been acknowledged, so reads need no polling. Waiting
for the kubelet to *see* a change (it arrives through a watch) polls with ``tests.polling``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from tests.polling import until
from trainop import errors
from trainop.cluster.kubelet.sim import PREFIX, SimulatedKubelet
from trainop.kube.client import Client, Obj
from trainop.kube.clock import FakeClock
from trainop.kube.resources import PODS

DEADLINE = 20.0


def sim_pod(
    name: str,
    *,
    restart_policy: str = "Never",
    node_name: str = "",
    containers: tuple[str, ...] = ("main",),
    init_containers: tuple[str, ...] = (),
    **rules: object,
) -> Obj:
    """A pod manifest whose ``sim.trainop.dev/`` annotations are ``rules`` (run_seconds=...)."""
    annotations = {PREFIX + k.replace("_", "-"): str(v).lower() for k, v in rules.items()}
    spec: dict[str, Any] = {
        "restartPolicy": restart_policy,
        "containers": [{"name": c, "image": f"img/{c}:1", "command": ["true"]} for c in containers],
    }
    if init_containers:
        spec["initContainers"] = [
            {"name": c, "image": "img/init:1", "command": ["true"]} for c in init_containers
        ]
    if node_name:
        spec["nodeName"] = node_name
    meta = {"name": name, "annotations": annotations}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


@dataclass
class Sim:
    client: Client
    clock: FakeClock
    kubelet: SimulatedKubelet
    namespace: str

    async def create(self, pod: Obj) -> Obj:
        """Create ``pod``; return once the kubelet has handled it and written its status."""
        created = await self.client.create(PODS, pod, namespace=self.namespace)
        name = created["metadata"]["name"]
        uid = created["metadata"]["uid"]
        await until(
            lambda: (self.kubelet.pod(self.namespace, name) or _NONE).uid == uid, timeout=DEADLINE
        )
        await self.kubelet.drained()
        return created

    async def advance(self, seconds: float) -> None:
        """Move the fake clock; return once the writes it caused are acknowledged."""
        self.clock.advance(seconds)
        await self.kubelet.drained()

    async def get(self, name: str) -> Obj:
        return await self.client.get(PODS, name=name, namespace=self.namespace)

    async def status(self, name: str) -> dict[str, Any]:
        status: dict[str, Any] = (await self.get(name))["status"]
        return status

    async def gone(self, name: str) -> bool:
        try:
            await self.get(name)
        except errors.NotFoundError:
            return True
        return False

    @property
    def patches(self) -> int:
        return self.kubelet.writer.sent["patch"]


class _NoPod:
    uid = ""


_NONE: Any = _NoPod()


@contextlib.asynccontextmanager
async def simulated(
    client: Client, *, namespace: str = "default", **options: Any
) -> AsyncIterator[Sim]:
    """A running kubelet on a ``FakeClock``, watching ``namespace``."""
    clock = FakeClock()
    kubelet = SimulatedKubelet(client=client, clock=clock, namespace=namespace, **options)
    task = asyncio.create_task(kubelet.run())
    try:
        async with asyncio.timeout(DEADLINE):
            await kubelet.synced.wait()
        yield Sim(client, clock, kubelet, namespace)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
