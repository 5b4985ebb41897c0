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

import asyncio
import contextlib
import uuid
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime, timedelta
from functools import partial

import pytest

from tests.integration.cluster.apiserver.conftest import RunningServer, start_server
from tests.integration.controller.cluster import (
    DEADLINE,
    Cluster,
    annotate,
    condition_on,
    crds,
    is_true,
    replica_spec,
    run_cluster,
    start_cluster_server,
)
from tests.polling import until
from tests.unit.api.builders import manifest
from trainop import errors
from trainop.api.kinds import kind_info
from trainop.controller.manager import GANG_CRD_RECHECK_SECONDS, Manager, ManagerOptions
from trainop.engine.plan import EngineOptions
from trainop.kube.client import Obj
from trainop.kube.clock import FakeClock
from trainop.kube.http import HttpClient
from trainop.kube.resources import (
    CONFIGMAPS,
    COSCHEDULING_PODGROUPS,
    CRDS,
    EVENTS,
    NAMESPACES,
    PODS,
    ROLEBINDINGS,
    ROLES,
    SERVICES,
    Resource,
    job_resource,
)

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


# --- foreign objects (issue 11 item 1) -------------------------------------------------------

LABEL = "training.kubeflow.org/"


async def _other_owner(cluster: Cluster) -> Obj:
    """A controller reference to an object that exists (else the GC deletes the dependent)."""
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "someone-else"}}
    owner = await cluster.client.create(CONFIGMAPS, body, namespace=cluster.namespace)
    return {"apiVersion": "v1", "kind": "ConfigMap", "name": "someone-else",
            "uid": owner["metadata"]["uid"], "controller": True}  # fmt: skip


def _labels(kind: str, job: str, replica_type: str, index: int) -> dict[str, str]:
    return {
        LABEL + "operator-name": kind_info(kind).controller_name,
        LABEL + "job-name": job,
        LABEL + "replica-type": replica_type,
        LABEL + "replica-index": str(index),
    }


def _pod(name: str, labels: dict[str, str] | None = None, **meta: object) -> Obj:
    container = {"name": "main", "image": "busybox:1"}
    metadata = {"name": name, "labels": labels or {}, **meta}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
            "spec": {"containers": [container]}}  # fmt: skip


def _service(name: str, labels: dict[str, str] | None = None, **meta: object) -> Obj:
    metadata = {"name": name, "labels": labels or {}, **meta}
    spec = {"clusterIP": "None", "selector": {"app": "other"}, "ports": [{"port": 80}]}
    return {"apiVersion": "v1", "kind": "Service", "metadata": metadata, "spec": spec}


# What another tenant left under an MPIJob's names: (resource, object). The ownerless worker pod
# carries the job's labels: upstream's MPI controller does not adopt, it reports the conflict.
MPI_FOREIGN: dict[str, tuple[Resource, Obj]] = {
    "ConfigMap": (CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                               "metadata": {"name": "mpi-config"},
                               "data": {"hostfile": "evil slots=1\n"}}),
    "Role": (ROLES, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                     "metadata": {"name": "mpi-launcher"}, "rules": []}),
    "RoleBinding": (ROLEBINDINGS, {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "mpi-launcher"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "other"},
        "subjects": [{"kind": "ServiceAccount", "name": "other"}]}),
    "Pod": (PODS, _pod("mpi-worker-0", _labels("MPIJob", "mpi", "worker", 0))),
}  # fmt: skip


def _owned_pods(pods: dict[str, Obj], job: Obj) -> set[str]:
    return {
        name
        for name, pod in pods.items()
        if any(
            r.get("uid") == job["metadata"]["uid"]
            for r in pod["metadata"].get("ownerReferences") or []
        )
    }


@pytest.mark.parametrize("kind", sorted(MPI_FOREIGN))
def test_mpi_reports_a_foreign_object_once_and_creates_no_launcher(
    server: RunningServer, kind: str
) -> None:
    """Spec 7.5: Warning ``ErrResourceExists`` with upstream's message, no launcher, the
    foreign object neither used nor changed nor counted; reported once; the job goes on once
    the object is gone."""

    async def body(cluster: Cluster) -> None:
        resource, foreign = MPI_FOREIGN[kind]
        before = await cluster.client.create(resource, foreign, namespace=cluster.namespace)
        name = before["metadata"]["name"]
        job = await cluster.create_job(manifest("MPIJob", name="mpi"))
        for _ in range(3):  # several reconciles, rechecks included
            await cluster.advance(30)
        events = await cluster.events("ErrResourceExists")
        assert [(e["type"], e["message"]) for e in events] == [
            ("Warning", f'Resource "{name}" of MPIJobKind "{kind}" already exists and is not'
                        " managed by MPIJob")
        ]  # fmt: skip
        assert events[0]["involvedObject"]["name"] == "mpi"
        pods = await cluster.pods("mpi")
        assert "mpi-launcher" not in pods, "no launcher while a child's name is foreign"
        assert _owned_pods(pods, job) == set(), "no pod at all"
        after = await cluster.get(resource, name)
        assert after is not None
        assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"] or (
            kind == "Pod"  # the kubelet runs the foreign pod
        )
        assert not after["metadata"].get("ownerReferences"), "not adopted"
        status = (await cluster.job_now("MPIJob", "mpi")).get("status") or {}
        workers = (status.get("replicaStatuses") or {}).get("Worker") or {}
        assert not workers.get("active"), "the foreign pod is not counted"

        await cluster.client.delete(resource, name=name, namespace=cluster.namespace)
        await cluster.advance(30)
        launcher = await cluster.until_pods("mpi", 3)
        assert _owned_pods(launcher, job) == {"mpi-launcher", "mpi-worker-0", "mpi-worker-1"}
        mine = await cluster.get(resource, name)
        assert mine is not None
        assert mine["metadata"]["ownerReferences"][0]["uid"] == job["metadata"]["uid"]
        assert len(await cluster.events("ErrResourceExists")) == 1

    run_cluster(server, body)


def test_any_kind_never_uses_a_foreign_service_and_creates_no_pod(server: RunningServer) -> None:
    """Generalised (005): a Service named as the job's but controlled by someone else."""

    async def body(cluster: Cluster) -> None:
        foreign = _service("gen-worker-0", ownerReferences=[await _other_owner(cluster)])
        before = await cluster.client.create(SERVICES, foreign, namespace=cluster.namespace)
        await cluster.create_job(manifest("PyTorchJob", name="gen"))
        await cluster.advance(30)
        await cluster.advance(30)
        events = await cluster.events("ErrResourceExists")
        assert [e["message"] for e in events] == [
            'Resource "gen-worker-0" of PyTorchJobKind "Service" already exists and is not'
            " managed by PyTorchJob"
        ]
        assert await cluster.pods("gen") == {}
        after = await cluster.get(SERVICES, "gen-worker-0")
        assert after is not None
        assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]

    run_cluster(server, body)


# --- orphan adoption and release (issue 11 item 2) ---------------------------------------------


def test_orphans_matching_the_selector_are_adopted_and_counted(server: RunningServer) -> None:
    """Spec 4.3 step 2 (the controller-ref manager): an ownerless pod and Service with the
    job's labels get the job as controller owner and are used, not duplicated."""

    async def body(cluster: Cluster) -> None:
        labels = _labels("PyTorchJob", "ad", "worker", 1)
        await cluster.client.create(PODS, _pod("ad-worker-1", labels), namespace=cluster.namespace)
        await cluster.client.create(
            SERVICES, _service("ad-worker-1", labels), namespace=cluster.namespace
        )
        job = await cluster.create_job(
            annotate(manifest("PyTorchJob", name="ad"), "Master", run_seconds=100_000)
        )
        pods = await cluster.until_pods("ad", 3, "Running")
        assert set(pods) == {"ad-master-0", "ad-worker-0", "ad-worker-1"}
        owner = {
            "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "ad",
            "uid": job["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True,
        }  # fmt: skip
        assert pods["ad-worker-1"]["metadata"]["ownerReferences"] == [owner]
        assert pods["ad-worker-1"]["spec"]["containers"][0]["name"] == "main", "the orphan"
        service = await cluster.get(SERVICES, "ad-worker-1")
        assert service is not None
        assert service["metadata"]["ownerReferences"] == [owner]
        assert service["spec"]["selector"] == {"app": "other"}, "adopted as it is"
        await cluster.settle()
        status = (await cluster.job_now("PyTorchJob", "ad"))["status"]
        assert status["replicaStatuses"]["Worker"]["active"] == 2, "the adopted pod counts"
        assert await cluster.events("ErrResourceExists") == []

    run_cluster(server, body)


def test_an_orphan_appearing_later_is_adopted_without_waiting_for_another_event(
    server: RunningServer,
) -> None:
    """The orphan's own event queues the job its labels name; adopted beyond ``replicas``, it
    is then deleted as any pod of a removed index (spec 4.5 step 3a)."""

    async def body(cluster: Cluster) -> None:
        await cluster.create_job(
            annotate(manifest("PyTorchJob", name="late"), "Master", run_seconds=100_000)
        )
        await cluster.until_pods("late", 3, "Running")
        await cluster.settle()
        labels = _labels("PyTorchJob", "late", "worker", 2)
        await cluster.client.create(
            PODS, _pod("late-worker-2", labels), namespace=cluster.namespace
        )

        async def gone() -> bool:
            return await cluster.get(PODS, "late-worker-2") is None

        await until(gone, timeout=DEADLINE, what="the adopted extra pod deleted")
        await cluster.settle()
        deleted = await cluster.events("SuccessfulDeletePod")
        assert [e["message"] for e in deleted] == ["Deleted pod: late-worker-2"]

    run_cluster(server, body)


def test_a_pod_whose_labels_no_longer_match_is_released(server: RunningServer) -> None:
    """The controller-ref manager releases what no longer matches: the owner reference is
    removed and the pod is no longer counted (its name stays taken: a foreign object)."""

    async def body(cluster: Cluster) -> None:
        await cluster.create_job(
            annotate(manifest("PyTorchJob", name="rel"), "Master", run_seconds=100_000)
        )
        await cluster.until_pods("rel", 3, "Running")
        await cluster.settle()
        relabel = {"metadata": {"labels": {LABEL + "operator-name": "someone-else"}}}
        await cluster.client.patch(
            PODS, name="rel-worker-1", namespace=cluster.namespace, patch=relabel
        )

        async def released() -> bool:
            pod = await cluster.get(PODS, "rel-worker-1")
            return pod is not None and not pod["metadata"].get("ownerReferences")

        await until(released, timeout=DEADLINE, what="rel-worker-1 released")
        await cluster.settle()
        status = (await cluster.job_now("PyTorchJob", "rel"))["status"]
        assert status["replicaStatuses"]["Worker"]["active"] == 1, "no longer counted"
        assert [e["message"] for e in await cluster.events("ErrResourceExists")] == [
            'Resource "rel-worker-1" of PyTorchJobKind "Pod" already exists and is not'
            " managed by PyTorchJob"
        ]

    run_cluster(server, body)


# --- gang scheduling without its CRD (issue 11 item 9) ---------------------------------------


@pytest.fixture(scope="module")
def bare_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """An embedded API server with no CRD installed (the test installs what it needs)."""
    yield from start_server(tmp_path_factory.mktemp("bare"), bookmark_interval=0.5)


def test_gang_scheduling_without_the_pod_group_crd_is_not_ready_and_creates_no_pods(
    bare_server: RunningServer,
) -> None:
    """Upstream exits (``crd might be missing, please install crd``, spec 8.1); trainop stays
    not ready, naming the CRD, creates nothing, and starts once the CRD is installed (005)."""

    async def main() -> None:
        calls: list[str] = []
        client = HttpClient.from_kubeconfig(
            path=str(bare_server.kubeconfig), on_request=lambda verb, plural: calls.append(plural)
        )
        clock = FakeClock(start=datetime.now(UTC).replace(microsecond=0))
        namespace = f"gang-{uuid.uuid4().hex[:8]}"
        all_crds = {crd["metadata"]["name"]: crd for crd in crds()}
        try:
            await client.create(CRDS, all_crds["pytorchjobs.kubeflow.org"])
            await client.create(NAMESPACES, {"metadata": {"name": namespace}})
            engine = EngineOptions(gang_scheduler_name="scheduler-plugins")
            options = ManagerOptions(kinds=("PyTorchJob",), namespace=namespace, engine=engine)
            manager = Manager(client=client, clock=clock, options=options)
            job = manifest("PyTorchJob", name="gang")
            job["metadata"]["namespace"] = namespace
            jobs = job_resource(kind_info("PyTorchJob"))
            await client.create(jobs, job, namespace=namespace)
            task = asyncio.create_task(manager.run())
            try:

                async def checks() -> int:
                    return calls.count("podgroups")

                await until(checks, timeout=DEADLINE, what="the PodGroup CRD checked")
                assert not manager.ready
                assert manager.not_ready_reason == (
                    "gang scheduler 'scheduler-plugins' needs the PodGroup CRD"
                    " podgroups.scheduling.x-k8s.io (scheduling.x-k8s.io/v1alpha1), which is not"
                    " installed: crd might be missing, please install crd; no job is reconciled"
                    " until it is"
                )
                for round_ in range(2, 4):  # time passes: checked again, still nothing done

                    async def checked(n: int = round_) -> bool:
                        if await checks() < n:  # the manager may not be asleep yet: move on
                            clock.advance(GANG_CRD_RECHECK_SECONDS)
                        return await checks() >= n

                    await until(checked, timeout=DEADLINE, what=f"check {round_}")
                    assert not manager.ready
                assert set(calls[3:]) == {"podgroups"}, "no informer, no reconcile started"
                pods = await client.list(PODS, namespace=namespace)
                assert pods.items == [], "no pod of a gang job without its PodGroup"

                await client.create(CRDS, all_crds["podgroups.scheduling.x-k8s.io"])

                async def started() -> bool:
                    if not manager.ready:  # the next check is due (the CRD may take a moment)
                        clock.advance(GANG_CRD_RECHECK_SECONDS)
                    return manager.ready

                await until(started, timeout=DEADLINE, what="ready once the CRD is installed")

                async def group() -> Obj | None:
                    with contextlib.suppress(Exception):
                        return await client.get(
                            COSCHEDULING_PODGROUPS, name="gang", namespace=namespace
                        )
                    return None

                await until(group, timeout=DEADLINE, what="the PodGroup created")

                async def three_pods() -> bool:
                    return len((await client.list(PODS, namespace=namespace)).items) == 3

                await until(three_pods, timeout=DEADLINE, what="the gang's pods created")
            finally:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        finally:
            await client.close()

    asyncio.run(main())


def test_a_pod_group_crd_removed_while_running_stops_pod_creation(
    bare_server: RunningServer,
) -> None:
    """A create answered NotFound (the PodGroup resource no longer served) is a failure, not
    a success: the job's pods are not created without their PodGroup."""

    async def main() -> None:
        client = HttpClient.from_kubeconfig(path=str(bare_server.kubeconfig))
        clock = FakeClock(start=datetime.now(UTC).replace(microsecond=0))
        namespace = f"gone-{uuid.uuid4().hex[:8]}"
        all_crds = {crd["metadata"]["name"]: crd for crd in crds()}
        group_crd = "podgroups.scheduling.x-k8s.io"
        try:
            for name in ("pytorchjobs.kubeflow.org", group_crd):
                with contextlib.suppress(errors.AlreadyExistsError):
                    await client.create(CRDS, all_crds[name])
            await client.create(NAMESPACES, {"metadata": {"name": namespace}})
            engine = EngineOptions(gang_scheduler_name="scheduler-plugins")
            options = ManagerOptions(kinds=("PyTorchJob",), namespace=namespace, engine=engine)
            manager = Manager(client=client, clock=clock, options=options)
            jobs = job_resource(kind_info("PyTorchJob"))
            task = asyncio.create_task(manager.run())
            try:

                async def ready() -> bool:
                    if not manager.ready:
                        clock.advance(GANG_CRD_RECHECK_SECONDS)
                    return manager.ready

                await until(ready, timeout=DEADLINE, what="the manager ready")
                await client.delete(CRDS, name=group_crd)

                async def unserved() -> bool:
                    try:
                        await client.list(COSCHEDULING_PODGROUPS, namespace=namespace)
                    except errors.NotFoundError:
                        return True
                    return False

                await until(unserved, timeout=DEADLINE, what="the PodGroup CRD gone")
                job = manifest("PyTorchJob", name="after")
                job["metadata"]["namespace"] = namespace
                await client.create(jobs, job, namespace=namespace)

                async def failed_create() -> list[Obj]:
                    listing = await client.list(EVENTS, namespace=namespace)
                    return [e for e in listing.items if e["reason"] == "FailedCreatePodGroup"]

                events = await until(failed_create, timeout=DEADLINE, what="FailedCreatePodGroup")
                assert events[0]["message"].startswith("Error creating: ")
                for _ in range(3):  # retried with backoff: still no pod
                    clock.advance(GANG_CRD_RECHECK_SECONDS)
                    await until(
                        partial(_more, failed_create, len(events)), timeout=DEADLINE, what="a retry"
                    )
                    events = await failed_create()
                assert (await client.list(PODS, namespace=namespace)).items == []
            finally:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        finally:
            await client.close()

    asyncio.run(main())


async def _more(probe: Callable[[], Awaitable[list[Obj]]], count: int) -> bool:
    return len(await probe()) > count


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _names(objs: list[Obj]) -> list[str]:
    return sorted(o["metadata"]["name"] for o in objs)
