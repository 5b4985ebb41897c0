"""The local Job controller and simulated kubelets against the embedded API server, on a fake
clock, one fresh namespace per test (for ``test_jobs_controller``).

Several kubelets may run at once, each with its own rules and a label selector, so pods of one
Job can behave differently by completion index (``batch.kubernetes.io/job-completion-index``).
Time moves only in ``advance``, after the system settled (no API request for ``QUIET`` real
seconds and every kubelet drained), so every step sees one instant.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from tests.integration.cluster.apiserver.conftest import RunningServer
from tests.polling import NotYet, until
from trainop import errors
from trainop.cluster.controllers.jobs import JOBS, LocalJobController
from trainop.cluster.kubelet.sim import Rules, SimulatedKubelet
from trainop.kube.client import Obj
from trainop.kube.clock import FakeClock
from trainop.kube.http import HttpClient
from trainop.kube.resources import EVENTS, NAMESPACES, PODS

DEADLINE = 30.0  # real seconds any awaited state may take (a bound on failure, not a wait)
QUIET = 0.15
INDEX = "batch.kubernetes.io/job-completion-index"


@dataclass(frozen=True)
class Node:
    """A simulated kubelet: its pods' rules and which pods it runs."""

    name: str
    rules: Rules
    selector: str = ""


@dataclass
class Plane:
    client: HttpClient
    clock: FakeClock
    namespace: str
    kubelets: list[SimulatedKubelet]
    requests: list[int] = field(default_factory=lambda: [0])

    async def create(self, job: Obj) -> Obj:
        return await self.client.create(JOBS, job, namespace=self.namespace)

    async def patch(self, name: str, patch: Obj) -> Obj:
        return await self.client.patch(JOBS, name=name, namespace=self.namespace, patch=patch)

    async def job(self, name: str) -> Obj | None:
        try:
            return await self.client.get(JOBS, name=name, namespace=self.namespace)
        except errors.NotFoundError:
            return None

    async def pods(self, job: str) -> list[Obj]:
        listing = await self.client.list(
            PODS, namespace=self.namespace, label_selector=f"batch.kubernetes.io/job-name={job}"
        )
        return sorted(listing.items, key=lambda p: p["metadata"]["name"])

    async def events(self, reason: str) -> list[Obj]:
        listing = await self.client.list(EVENTS, namespace=self.namespace)
        return [e for e in listing.items if e.get("reason") == reason]

    async def settle(self) -> None:
        last, quiet_since = -1, time.monotonic()

        async def quiet() -> bool:
            nonlocal last, quiet_since
            for kubelet in self.kubelets:
                await kubelet.drained()
            if self.requests[0] != last:
                last, quiet_since = self.requests[0], time.monotonic()
            return time.monotonic() - quiet_since >= QUIET

        await until(quiet, timeout=DEADLINE, what="the plane settled", interval=0.01)

    async def advance(self, seconds: float) -> None:
        await self.settle()
        self.clock.advance(seconds)
        await self.settle()

    async def until_status(self, name: str, check: Callable[[dict[str, Any]], bool]) -> Obj:
        """The Job once ``check(status)`` holds."""

        async def probe() -> Obj | NotYet:
            job = await self.job(name)
            status = (job or {}).get("status") or {}
            return job if job is not None and check(status) else NotYet(status)

        found: Obj = await until(probe, timeout=DEADLINE, what=f"job {name}")
        return found

    async def until_condition(self, name: str, ctype: str) -> Obj:
        return await self.until_status(name, lambda s: ctype in true_types(s))


def true_types(status: dict[str, Any]) -> list[str]:
    return [c["type"] for c in status.get("conditions") or [] if c.get("status") == "True"]


def run_plane(
    server: RunningServer,
    body: Callable[[Plane], Awaitable[None]],
    nodes: Sequence[Node] = (Node("node", Rules(run_seconds=5)),),
    *,
    with_controller: bool = True,
) -> None:
    """Run ``body`` with a Job controller (unless the body runs its own) and ``nodes``
    watching a fresh namespace."""

    async def main() -> None:
        requests = [0]

        def count(verb: str, plural: str) -> None:
            del verb, plural
            requests[0] += 1

        client = HttpClient.from_kubeconfig(path=str(server.kubeconfig), on_request=count)
        namespace = f"jobs-{uuid.uuid4().hex[:8]}"
        clock = FakeClock(start=datetime.now(UTC).replace(microsecond=0))
        try:
            await client.create(NAMESPACES, {"metadata": {"name": namespace}})
            controller = LocalJobController(client=client, clock=clock, namespace=namespace)
            kubelets = [
                SimulatedKubelet(client=client, clock=clock, namespace=namespace,
                                 node_name=n.name, label_selector=n.selector, defaults=n.rules)
                for n in nodes
            ]  # fmt: skip
            runners: list[LocalJobController | SimulatedKubelet] = [*kubelets]
            if with_controller:
                runners.insert(0, controller)
            tasks = [asyncio.create_task(c.run()) for c in runners]
            try:
                await until(
                    lambda: all(c.synced.is_set() for c in runners),
                    timeout=DEADLINE,
                    what="caches synced",
                )
                await body(Plane(client, clock, namespace, kubelets, requests))
            finally:
                for task in tasks:
                    task.cancel()
                for task in tasks:
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
        finally:
            await client.close()

    asyncio.run(main())
