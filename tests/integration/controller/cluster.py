"""One controller fixture for every kind: the real ``Manager`` in-process, the embedded API
server over real HTTP, and the ``SimulatedKubelet``, all on one ``FakeClock``.

``run_cluster(server, body, ...)`` gives ``body`` a ``Cluster`` scoped to a fresh namespace
(the manager and the kubelet watch only it, so tests never see each other's objects).
Time moves only in ``Cluster.advance``: deadlines, TTLs, restart delays and run times take no
real time. Reads go to the API server; a test waits for a state with ``tests.polling.until``
(a real-time deadline, never a fixed sleep) and, before asserting that something did *not*
happen, calls ``settle`` so that every reaction to the last step has run.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

from tests.integration.cluster.apiserver.conftest import RunningServer, start_server
from tests.polling import NotYet, until
from trainop import errors
from trainop.api.kinds import kind_info
from trainop.cluster.kubelet.sim import PREFIX, Rules, SimulatedKubelet
from trainop.controller.manager import Manager, ManagerOptions
from trainop.engine.naming import JOB_NAME_LABEL
from trainop.kube.client import Obj
from trainop.kube.clock import FakeClock
from trainop.kube.http import HttpClient
from trainop.kube.resources import CRDS, EVENTS, NAMESPACES, PODS, SERVICES, Resource, job_resource

ROOT = Path(__file__).resolve().parents[3]
DEADLINE = 60.0  # real seconds any awaited state may take (a bound on failure, not a wait)
QUIET = 0.15  # real seconds without an API request or queued key that count as settled
# Pods run 30 simulated seconds unless a test says otherwise; restarts back off 5.
DEFAULT_RULES = Rules(run_seconds=30, restart_delay_seconds=5)

Probe = Callable[[], Awaitable[Any]]


def pod_group_crd(group: str, version: str) -> Obj:
    """A minimal PodGroup CRD: any fields, a status subresource (as the real ones have)."""
    schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"podgroups.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {
                "kind": "PodGroup",
                "plural": "podgroups",
                "singular": "podgroup",
                "listKind": "PodGroupList",
            },
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                    "subresources": {"status": {}},
                }
            ],
        },
    }


def crds() -> Iterator[Obj]:
    """The generated job CRDs (``manifests/crds``) and the two PodGroup CRDs."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # 0.6 MB each: parse in C
    for path in sorted((ROOT / "manifests/crds").glob("*.yaml")):
        crd = yaml.load(path.read_text(), Loader=loader)  # a safe loader (C)
        if crd.get("kind") == "CustomResourceDefinition":
            yield crd
    yield pod_group_crd("scheduling.volcano.sh", "v1beta1")
    yield pod_group_crd("scheduling.x-k8s.io", "v1alpha1")


def start_cluster_server(state_dir: Path, **options: Any) -> Iterator[RunningServer]:
    """An embedded API server with every CRD the suite needs installed (``options``: more
    ``ServerConfig`` fields, e.g. ``limits``)."""
    for server in start_server(state_dir, bookmark_interval=0.5, **options):
        asyncio.run(_install_crds(server.kubeconfig))
        yield server


async def _install_crds(kubeconfig: Path) -> None:
    client = HttpClient.from_kubeconfig(path=str(kubeconfig))
    try:
        for crd in crds():
            await client.create(CRDS, crd)
    finally:
        await client.close()


def condition(job: Obj, kind: str) -> dict[str, Any] | None:
    for found in (job.get("status") or {}).get("conditions") or []:
        if found["type"] == kind:
            return dict(found)
    return None


def condition_on(job: Obj, kind: str) -> dict[str, Any]:
    """The condition ``kind`` of ``job``, which must be present."""
    found = condition(job, kind)
    assert found is not None, f"no {kind} condition: {job.get('status')}"
    return found


def is_true(job: Obj, kind: str) -> bool:
    found = condition(job, kind)
    return found is not None and found["status"] == "True"


def sim_annotations(**rules: object) -> dict[str, str]:
    """``sim.trainop.dev/`` annotations for a pod template (``run_seconds=5`` ...)."""
    return {PREFIX + k.replace("_", "-"): str(v).lower() for k, v in rules.items()}


def replica_spec(job: Obj, replica_type: str) -> dict[str, Any]:
    """One replica type's spec in a job manifest (to edit in place)."""
    spec: dict[str, Any] = job["spec"][kind_info(job["kind"]).replica_specs_field][replica_type]
    return spec


def annotate(job: Obj, replica_type: str, **rules: object) -> Obj:
    """``job`` with simulation rules on one replica type's pod template."""
    meta = replica_spec(job, replica_type)["template"].setdefault("metadata", {})
    meta.setdefault("annotations", {}).update(sim_annotations(**rules))
    return job


def replica_counts(job: Obj) -> dict[str, int]:
    """Replicas per type of a job manifest (unset counts as 1)."""
    specs = job["spec"][kind_info(job["kind"]).replica_specs_field]
    return {rt: int(spec.get("replicas", 1)) for rt, spec in specs.items()}


def replica_count(job: Obj) -> int:
    return sum(replica_counts(job).values())


@dataclass
class Cluster:
    """A running manager and kubelet on one namespace; see the module docstring."""

    client: HttpClient
    clock: FakeClock
    manager: Manager
    kubelet: SimulatedKubelet
    namespace: str
    start: datetime
    requests: list[int] = field(default_factory=lambda: [0])

    # --- writes ---------------------------------------------------------------------------

    async def create_job(self, job: Obj) -> Obj:
        job["metadata"]["namespace"] = self.namespace
        info = kind_info(job["kind"])
        return await self.client.create(job_resource(info), job, namespace=self.namespace)

    async def patch_job(self, kind: str, name: str, patch: Obj) -> Obj:
        return await self.client.patch(
            job_resource(kind_info(kind)), name=name, namespace=self.namespace, patch=patch
        )

    async def advance(self, seconds: float) -> None:
        """Let the system settle, move the fake clock (firing every due timer), settle again:
        time moves only while nothing is in flight, so every step sees one instant."""
        await self.settle()
        self.clock.advance(seconds)
        await self.settle()

    async def settle(self) -> None:
        """Return once no API request was made and no key was queued for ``QUIET`` seconds."""
        last, quiet_since = -1, time.monotonic()

        async def quiet() -> bool:
            nonlocal last, quiet_since
            await self.kubelet.drained()
            busy = any(q.depth or q.in_flight for q in self.manager.queues.values())
            if busy or self.requests[0] != last:
                last, quiet_since = self.requests[0], time.monotonic()
            return time.monotonic() - quiet_since >= QUIET

        await until(
            quiet, timeout=DEADLINE, what="the controller and kubelet settled", interval=0.005
        )

    # --- reads ----------------------------------------------------------------------------

    async def events(self, reason: str) -> list[Obj]:
        """The Events recorded in the namespace with ``reason``."""
        listing = await self.client.list(EVENTS, namespace=self.namespace)
        return [e for e in listing.items if e.get("reason") == reason]

    async def get(self, resource: Resource, name: str) -> Obj | None:
        try:
            return await self.client.get(resource, name=name, namespace=self.namespace)
        except errors.NotFoundError:
            return None

    def at(self, seconds: float) -> str:
        """The wire timestamp ``seconds`` of fake time after the cluster started."""
        return (self.start + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")

    async def job_now(self, kind: str, name: str) -> Obj:
        """The job, which must exist."""
        job = await self.job(kind, name)
        assert job is not None, f"{kind} {name} is gone"
        return job

    async def job(self, kind: str, name: str) -> Obj | None:
        return await self.get(job_resource(kind_info(kind)), name)

    async def children(self, resource: Resource, job: str) -> dict[str, Obj]:
        listing = await self.client.list(
            resource, namespace=self.namespace, label_selector=f"{JOB_NAME_LABEL}={job}"
        )
        return {o["metadata"]["name"]: o for o in listing.items}

    async def pods(self, job: str) -> dict[str, Obj]:
        return await self.children(PODS, job)

    async def services(self, job: str) -> dict[str, Obj]:
        return await self.children(SERVICES, job)

    async def until_condition(self, kind: str, name: str, condition_type: str) -> Obj:
        """The job once ``condition_type`` is True on it."""

        async def probe() -> Obj | NotYet:
            job = await self.job(kind, name)
            if job is not None and is_true(job, condition_type):
                return job
            return NotYet((job or {}).get("status"))

        found: Obj = await until(probe, timeout=DEADLINE, what=f"{kind} {name} {condition_type}")
        return found

    async def until_pods(self, name: str, count: int, phase: str | None = None) -> dict[str, Obj]:
        """The job's pods once there are ``count`` of them (all in ``phase``, if given)."""

        async def probe() -> tuple[dict[str, Obj]] | NotYet:
            pods = await self.pods(name)
            live = {n: p for n, p in pods.items() if not p["metadata"].get("deletionTimestamp")}
            phases = {(p.get("status") or {}).get("phase") for p in live.values()}
            if len(live) == count and (phase is None or phases <= {phase}):
                return (live,)  # truthy even when no pod is wanted
            return NotYet({n: (p.get("status") or {}).get("phase") for n, p in live.items()})

        found: tuple[dict[str, Obj]] = await until(
            probe, timeout=DEADLINE, what=f"{count} {phase or ''} pods of {name}"
        )
        return found[0]


def run_cluster(
    server: RunningServer,
    body: Callable[[Cluster], Awaitable[None]],
    *,
    options: ManagerOptions | None = None,
    rules: Rules = DEFAULT_RULES,
) -> None:
    """Run ``body`` against a manager and a kubelet watching a fresh namespace."""

    async def main() -> None:
        requests = [0]

        def count(verb: str, plural: str) -> None:
            del verb, plural
            requests[0] += 1

        client = HttpClient.from_kubeconfig(path=str(server.kubeconfig), on_request=count)
        namespace = f"ctl-{uuid.uuid4().hex[:8]}"
        start = datetime.now(UTC).replace(microsecond=0)
        clock = FakeClock(start=start)
        try:
            await client.create(NAMESPACES, {"metadata": {"name": namespace}})
            scoped = dataclasses.replace(options or ManagerOptions(), namespace=namespace)
            manager = Manager(client=client, clock=clock, options=scoped)
            kubelet = SimulatedKubelet(
                client=client, clock=clock, namespace=namespace, defaults=rules
            )
            tasks = [asyncio.create_task(manager.run()), asyncio.create_task(kubelet.run())]
            try:
                await until(_ready(manager, kubelet), timeout=DEADLINE, what="caches synced")
                await body(Cluster(client, clock, manager, kubelet, namespace, start, requests))
            finally:
                for task in tasks:
                    task.cancel()
                for task in tasks:
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
        finally:
            await client.close()

    asyncio.run(main())


def _ready(manager: Manager, kubelet: SimulatedKubelet) -> Probe:
    async def probe() -> bool:
        return manager.ready and kubelet.synced.is_set()

    return probe
