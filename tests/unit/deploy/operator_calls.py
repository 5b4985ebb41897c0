"""Run the real reconciler over scenarios of every kind and record what it asks the API for.

``run_process`` does the same for the operator process's own calls outside the reconciler:
leader election (``LeaderElector``) and the webhook certificates (``cert_publishing``), with the
namespace and name of each call, since those rules are confined to one namespace or object.

``Recording`` is the operator's client: it forwards to a ``FakeClient`` (the "API server") and
notes each request as RBAC sees it, (apiGroup, resource[/subresource], verb), plus every body it
creates. The scenarios drive jobs through their lives by changing the server directly (pod
phases, spec edits), as users and kubelets do, so only the operator's own requests are recorded.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.polling import until
from tests.unit.api.builders import manifest
from tests.unit.deploy.trainjob_calls import trainjobs
from trainop import errors
from trainop.api.kinds import KINDS, kind_info
from trainop.controller import cert_publishing, certs
from trainop.controller.caches import OwnedObjects
from trainop.controller.leader import LeaderElector
from trainop.controller.mpi_v2beta1 import (
    LAUNCHER_JOBS,
    V2Beta1Caches,
    V2Beta1Reconciler,
    informer_resources,
)
from trainop.controller.reconciler import JobReconciler
from trainop.controller.topologies import ClusterTopologySource
from trainop.controller.webhook_configurations import injected
from trainop.engine import gang
from trainop.engine.plan import EngineOptions
from trainop.frameworks.registry import framework_for
from trainop.kube import resources as r
from trainop.kube.client import Obj
from trainop.kube.clock import FakeClock
from trainop.kube.events import EventRecorder
from trainop.kube.fake import FakeClient
from trainop.kube.informer import Informer

Request = tuple[str, str, str]  # (apiGroup, resource, verb)
_ROOT = Path(__file__).resolve().parents[3]
# Every webhook configuration the operator injects its CA into: v1, and Trainer v2's two.
WEBHOOK_CONFIGURATIONS = (
    _ROOT / "manifests/base/validating-webhook-configuration.yaml",
    _ROOT / "manifests/trainer/webhooks/mutating-webhook-configuration.yaml",
    _ROOT / "manifests/trainer/webhooks/validating-webhook-configuration.yaml",
)
# What jobs own besides pods, services and PodGroups (controller/caches.py).
OTHERS = (r.CONFIGMAPS, r.SERVICEACCOUNTS, r.ROLES, r.ROLEBINDINGS, r.HPAS)


@dataclass(frozen=True)
class Call:
    """One request as RBAC authorises it: verb, group, resource[/sub], namespace and name.

    ``namespace`` is '' for a cluster-scoped object; ``name`` is '' for list and watch.
    """

    verb: str
    group: str
    resource: str
    namespace: str
    name: str


@dataclass
class Usage:
    requests: set[Request] = field(default_factory=set)
    calls: set[Call] = field(default_factory=set)
    created: list[tuple[r.Resource, Obj]] = field(default_factory=list)


def _namespace_of(obj: Obj) -> str:
    return str(obj.get("metadata", {}).get("namespace") or "")


def _name(resource: r.Resource, subresource: str = "") -> str:
    return f"{resource.plural}/{subresource}" if subresource else resource.plural


class Recording:
    """A ``Client`` that records RBAC requests and created bodies (module docstring)."""

    def __init__(self, server: FakeClient, usage: Usage) -> None:
        self._server, self._usage = server, usage

    def _note(self, verb: str, resource: r.Resource, subresource: str = "", *,
              namespace: str | None = None, name: str = "") -> None:  # fmt: skip
        plural = _name(resource, subresource)
        self._usage.requests.add((resource.group, plural, verb))
        where = (namespace or "") if resource.namespaced else ""
        self._usage.calls.add(Call(verb, resource.group, plural, where, name))

    async def get(self, resource: r.Resource, *, name: str, namespace: str | None = None) -> Obj:
        self._note("get", resource, namespace=namespace, name=name)
        return await self._server.get(resource, name=name, namespace=namespace)

    async def list(self, resource: r.Resource, **kw: Any) -> Any:
        self._note("list", resource, namespace=kw.get("namespace"))
        return await self._server.list(resource, **kw)

    async def create(self, resource: r.Resource, obj: Obj, *,
                     namespace: str | None = None) -> Obj:  # fmt: skip
        # RBAC authorises a create without the object's name (resourceNames never match it).
        self._note("create", resource, namespace=namespace or _namespace_of(obj))
        self._usage.created.append((resource, obj))
        return await self._server.create(resource, obj, namespace=namespace)

    async def patch(self, resource: r.Resource, *, subresource: str = "", **kw: Any) -> Obj:
        self._note("patch", resource, subresource, namespace=kw.get("namespace"),
                   name=kw["name"])  # fmt: skip
        if kw.get("patch_type") == "apply" and not await self._exists(resource, **kw):
            # A server-side apply that creates is authorised as a create too.
            self._note("create", resource, namespace=kw.get("namespace"))
            self._usage.created.append((resource, kw["patch"]))
        return await self._server.patch(resource, subresource=subresource, **kw)

    async def _exists(self, resource: r.Resource, **kw: Any) -> bool:
        try:
            await self._server.get(resource, name=kw["name"], namespace=kw.get("namespace"))
        except errors.NotFoundError:
            return False
        return True

    async def replace(self, resource: r.Resource, obj: Obj, *, subresource: str = "",
                      namespace: str | None = None) -> Obj:  # fmt: skip
        self._note("update", resource, subresource, namespace=namespace or _namespace_of(obj),
                   name=obj["metadata"]["name"])  # fmt: skip
        return await self._server.replace(
            resource, obj, subresource=subresource, namespace=namespace
        )

    async def delete(self, resource: r.Resource, **kw: Any) -> None:
        self._note("delete", resource, namespace=kw.get("namespace"), name=kw["name"])
        await self._server.delete(resource, **kw)

    def watch(self, resource: r.Resource, **kw: Any) -> Any:
        self._note("watch", resource, namespace=kw.get("namespace"))
        return self._server.watch(resource, **kw)

    async def close(self) -> None:
        return None


async def settle(server: FakeClient, informers: list[Informer]) -> None:
    """Wait until every informer holds what the server serves."""

    async def caught_up() -> bool:
        for informer in informers:
            served = (await server.list(informer.resource)).items
            seen = {(o["metadata"]["name"], o["metadata"]["resourceVersion"])
                    for o in informer.items()}  # fmt: skip
            if seen != {(o["metadata"]["name"], o["metadata"]["resourceVersion"])
                        for o in served}:  # fmt: skip
                return False
        return True

    await until(caught_up, timeout=5, what="every informer caught up", interval=0)


@dataclass
class Operator:
    """One kind's reconciler with its informers, against ``server``."""

    server: FakeClient
    informers: list[Informer]
    reconciler: JobReconciler
    kind: str
    clock: FakeClock

    @property
    def jobs(self) -> r.Resource:
        return r.job_resource(kind_info(self.kind))

    async def settle(self) -> None:
        await settle(self.server, self.informers)

    async def reconcile(self) -> None:
        await self.settle()
        await self.reconciler.reconcile("default/job")
        await self.settle()

    async def edit(self, spec_patch: Obj) -> None:
        await self.server.patch(self.jobs, name="job", namespace="default", patch=spec_patch)

    async def set_phase(self, phase: str) -> None:
        for pod in (await self.server.list(r.PODS)).items:
            name = pod["metadata"]["name"]
            patch = {"status": {"phase": phase}}
            await self.server.patch(
                r.PODS, name=name, namespace="default", patch=patch, subresource="status"
            )

    async def names(self, resource: r.Resource) -> list[str]:
        return [o["metadata"]["name"] for o in (await self.server.list(resource)).items]


@asynccontextmanager
async def operator(usage: Usage, kind: str, scheduler: str = "") -> AsyncIterator[Operator]:
    server, clock = FakeClient(), FakeClock()
    client = Recording(server, usage)
    chosen = gang.scheduler_for(scheduler)
    groups = [r.resource_for(api_version=chosen.api_version, kind="PodGroup")] if chosen else []
    owned = OwnedObjects(
        pods=Informer(client, r.PODS),
        services=Informer(client, r.SERVICES),
        pod_groups=[Informer(client, g) for g in groups],
        others=[Informer(client, o) for o in OTHERS],
    )
    jobs = Informer(client, r.job_resource(kind_info(kind)))
    reconciler = JobReconciler(
        client=client, jobs=jobs, owned=owned, framework=framework_for(kind),
        topologies=ClusterTopologySource(), clock=clock,
        recorder=EventRecorder(client=client, clock=clock),
        options=EngineOptions(gang_scheduler_name=scheduler),
    )  # fmt: skip
    informers = [jobs, *owned.all()]
    tasks = [asyncio.create_task(i.run()) for i in informers]
    try:
        yield Operator(server, informers, reconciler, kind, clock)
    finally:
        for task in tasks:
            task.cancel()


Scenario = Callable[[Usage], Awaitable[None]]


async def lifecycle(usage: Usage, kind: str) -> None:
    """Create → Running → Succeeded → deleted by TTL."""
    async with operator(usage, kind) as op:
        job = manifest(kind, runPolicy={"ttlSecondsAfterFinished": 60})
        await op.server.create(op.jobs, job, namespace="default")
        await op.reconcile()
        for phase in ("Running", "Succeeded"):
            await op.set_phase(phase)
            await op.reconcile()
        op.clock.advance(60)
        await op.reconcile()
        assert await op.names(op.jobs) == [], f"{kind}: the TTL should have deleted the job"


async def gang_scheduled(usage: Usage, scheduler: str) -> None:
    """PodGroup created, updated when minAvailable changes, deleted when the job finishes."""
    async with operator(usage, "TFJob", scheduler) as op:
        group = gang.scheduler_for(scheduler)
        assert group is not None
        groups = r.resource_for(api_version=group.api_version, kind="PodGroup")
        await op.server.create(op.jobs, manifest("TFJob"), namespace="default")
        await op.reconcile()
        await op.server.patch(groups, name="job", namespace="default",
                              patch={"status": {"phase": "Running"}})  # fmt: skip
        await op.edit({"spec": {"runPolicy": {"schedulingPolicy": {"minAvailable": 2}}}})
        await op.reconcile()
        await op.set_phase("Succeeded")
        await op.reconcile()
        assert await op.names(groups) == [], "the PodGroup should be gone with the job"


async def elastic_suspended(usage: Usage) -> None:
    """Elastic PyTorchJob: HPA created, updated, deleted with pods and Services on suspend."""
    metric = {"type": "Resource", "resource": {"name": "cpu", "target": {
        "type": "Utilization", "averageUtilization": 80}}}  # fmt: skip
    elastic = {"minReplicas": 1, "maxReplicas": 3, "rdzvBackend": "c10d", "metrics": [metric]}
    async with operator(usage, "PyTorchJob") as op:
        job = manifest("PyTorchJob", elasticPolicy=elastic)
        await op.server.create(op.jobs, job, namespace="default")
        await op.reconcile()
        assert await op.names(r.HPAS) == ["job"]
        await op.edit({"spec": {"elasticPolicy": {"maxReplicas": 4}}})
        await op.reconcile()
        await op.edit({"spec": {"runPolicy": {"suspend": True}}})
        await op.reconcile()
        assert await op.names(r.HPAS) == await op.names(r.SERVICES) == []


async def mpi_changes(usage: Usage) -> None:
    """MPIJob scaled up (hostfile and Role change), then its launcher account renamed."""
    async with operator(usage, "MPIJob") as op:
        await op.server.create(op.jobs, manifest("MPIJob"), namespace="default")
        await op.reconcile()
        await op.edit({"spec": {"mpiReplicaSpecs": {"Worker": {"replicas": 3}}}})
        await op.reconcile()
        launcher = manifest("MPIJob")["spec"]["mpiReplicaSpecs"]["Launcher"]
        launcher["template"]["spec"]["serviceAccountName"] = "custom"
        await op.edit({"spec": {"mpiReplicaSpecs": {"Launcher": launcher}}})
        await op.reconcile()
        binding = await op.server.get(r.ROLEBINDINGS, name="job-launcher", namespace="default")
        assert binding["subjects"][0]["name"] == "custom"


async def mpi_v2beta1(usage: Usage, scheduler: str = "") -> None:
    """MPIJob v2beta1 (V2Beta1Reconciler): objects created, a drifted Service selector, a
    rekeyed Secret, Running workers in the ConfigMap, suspend and resume of the launcher Job,
    success and cleanup; the status written through the subresource."""
    server, clock = FakeClient(), FakeClock()
    client = Recording(server, usage)
    made = {n: Informer(client, res) for n, res in informer_resources(scheduler).items()}
    caches = V2Beta1Caches(pods=Informer(client, r.PODS), **made)
    reconciler = V2Beta1Reconciler(
        client=client,
        caches=caches,
        clock=clock,
        recorder=EventRecorder(client=client, clock=clock),
        gang_scheduler_name=scheduler,
    )
    jobs = r.job_resource(kind_info("MPIJob"))
    spec = {"sshAuthMountPath": "/root/.ssh", "runPolicy": {"cleanPodPolicy": "All"}}
    await server.create(jobs, manifest("MPIJob", **spec), namespace="default")
    informers = [caches.pods, *caches.informers()]
    tasks = [asyncio.create_task(i.run()) for i in informers]

    async def reconcile() -> None:
        await settle(server, informers)
        await reconciler.reconcile(await server.get(jobs, name="job", namespace="default"))
        await settle(server, informers)

    async def edit(resource: r.Resource, name: str, patch: Obj, sub: str = "") -> None:
        await server.patch(resource, name=name, namespace="default", patch=patch, subresource=sub)

    try:
        await reconcile()
        await edit(r.SERVICES, "job", {"spec": {"selector": {"app": "other"}}})
        secret = await server.get(r.SECRETS, name="job-ssh", namespace="default")
        await server.replace(r.SECRETS, {**secret, "data": {"id_rsa": ""}}, namespace="default")
        for pod in (await server.list(r.PODS, namespace="default")).items:
            await edit(r.PODS, pod["metadata"]["name"], {"status": {"phase": "Running"}}, "status")
        await reconcile()
        await edit(jobs, "job", {"spec": {"runPolicy": {"suspend": True}}})
        await reconcile()
        await edit(jobs, "job", {"spec": {"runPolicy": {"suspend": False}}})
        await reconcile()
        done = {"conditions": [{"type": "Complete", "status": "True"}]}
        await edit(LAUNCHER_JOBS, "job-launcher", {"status": done}, "status")
        await reconcile()
        await reconcile()
        assert [p["metadata"]["name"] for p in (await server.list(r.PODS)).items] == []
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def scenarios() -> dict[str, Scenario]:
    found: dict[str, Scenario] = {}
    for info in KINDS:
        found[f"lifecycle-{info.kind}"] = lambda u, k=info.kind: lifecycle(u, k)
    for scheduler in ("volcano", "scheduler-plugins"):
        found[f"gang-{scheduler}"] = lambda u, s=scheduler: gang_scheduled(u, s)
    found["elastic-suspended"] = elastic_suspended
    found["mpi-changes"] = mpi_changes
    found["mpi-v2beta1"] = mpi_v2beta1
    for scheduler in ("volcano", "scheduler-plugins"):
        found[f"mpi-v2beta1-gang-{scheduler}"] = lambda u, s=scheduler: mpi_v2beta1(u, s)
    found["trainjobs"] = lambda u: trainjobs(lambda server: Recording(server, u), settle)
    return found


def run_all() -> Usage:
    """Every scenario's requests and created bodies, together."""
    usage = Usage()
    for scenario in scenarios().values():
        asyncio.run(scenario(usage))
    return usage


# ---- outside the reconciler: leader election and webhook certificates ---------------------

OPERATOR_NAMESPACE = "kubeflow"  # where the Deployment, its Role and RoleBinding live


@dataclass(frozen=True)
class ProcessNames:
    """The names the shipped Deployment passes to ``trainop operator`` (its args)."""

    lease: str
    secret: str
    service: str


async def leader_election(usage: Usage, names: ProcessNames) -> None:
    """First candidate creates the Lease and renews it; a second takes it over and releases."""
    server, clock = FakeClient(), FakeClock()
    client = Recording(server, usage)

    def candidate(identity: str) -> LeaderElector:
        return LeaderElector(client=client, clock=clock, namespace=OPERATOR_NAMESPACE,
                             name=names.lease, identity=identity)  # fmt: skip

    first, second = candidate("first"), candidate("second")
    await first.acquire()
    assert not await second.try_acquire_or_renew(), "the Lease is held"
    assert await first.try_acquire_or_renew(), "the holder renews"
    clock.advance(60)
    await second.acquire()
    await second.release()
    lease = await server.get(r.LEASES, name=names.lease, namespace=OPERATOR_NAMESPACE)
    assert lease["spec"]["holderIdentity"] is None


async def webhook_certificates(usage: Usage, names: ProcessNames) -> None:
    """Secret created, then reused, then filled in when shipped empty; CA injected once into
    each configuration the operator running TrainJobs keeps (``injected``)."""
    server, clock = FakeClient(), FakeClock()
    client = Recording(server, usage)
    for path in WEBHOOK_CONFIGURATIONS:
        [configuration] = [d for d in yaml.safe_load_all(path.read_text()) if d]
        kind = configuration["kind"]
        [resource] = {t.resource for t in injected(trainjobs=True) if t.resource.kind == kind}
        await server.create(resource, configuration)

    async def ensure() -> certs.CertBundle:
        return await cert_publishing.ensure_secret(
            client, namespace=OPERATOR_NAMESPACE, name=names.secret, service=names.service,
            now=clock.now())  # fmt: skip

    bundle = await ensure()
    assert await ensure() == bundle, "a usable stored bundle is reused"
    await server.replace(r.SECRETS, {**await server.get(r.SECRETS, name=names.secret,
                         namespace=OPERATOR_NAMESPACE), "data": {}})  # fmt: skip
    bundle = await ensure()
    for target in injected(trainjobs=True):
        inject = {"ca_cert": bundle.ca_cert, "name": target.name, "resource": target.resource}
        assert await cert_publishing.inject_ca_bundle(client, **inject)
        assert not await cert_publishing.inject_ca_bundle(client, **inject)


def run_process(names: ProcessNames) -> Usage:
    """The requests of the operator process outside the reconciler, with their names."""
    usage = Usage()
    asyncio.run(leader_election(usage, names))
    asyncio.run(webhook_certificates(usage, names))
    return usage
