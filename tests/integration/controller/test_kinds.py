"""The controller for every kind: the real ``Manager`` against the embedded API server over HTTP,
pods moved by the ``SimulatedKubelet``, all on one ``FakeClock`` (``cluster``).

Behaviour that differs by kind (lifecycle, success rules, restarts, failures, backoff,
managedBy) runs for every kind of the registry that starts all its replicas at once (a kind run
in phases, DGLJob, has test_phases.py); the run-policy scenarios (deadline, TTL,
cleanPodPolicy, suspend, gang scheduling) on a representative pair, since the engine applies
them once for every kind. Expected conditions and messages: the spec, sections 4-8, with the
departures of docs/design/005.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.integration.cluster.apiserver.conftest import RunningServer
from tests.integration.controller.cluster import (
    DEADLINE,
    Cluster,
    annotate,
    condition,
    condition_on,
    is_true,
    replica_count,
    replica_counts,
    replica_spec,
    run_cluster,
    sim_annotations,
    start_cluster_server,
)
from tests.polling import until
from tests.unit.api.builders import manifest
from trainop.api import manifest as wire
from trainop.api.kinds import KINDS, kind_info
from trainop.cluster.kubelet.sim import PREFIX, Rules
from trainop.controller.manager import ManagerOptions
from trainop.engine.naming import JOB_NAME_LABEL
from trainop.engine.plan import EngineOptions
from trainop.frameworks.registry import framework_for
from trainop.kube.client import Obj
from trainop.kube.resources import (
    CONFIGMAPS,
    COSCHEDULING_PODGROUPS,
    PODS,
    VOLCANO_PODGROUPS,
    Resource,
)

# Kinds run in phases (DGLJob: replicas created only after another type succeeded) have their
# own suite, test_phases.py: these scenarios expect every replica to run from the start.
ALL_KINDS = [info.kind for info in KINDS if not framework_for(info.kind).starts_after]
LABEL = "training.kubeflow.org/"
# The framework's key variable, spot-checked on one pod: (pod suffix, variable, value).
KEY_ENV = {
    "TFJob": ("worker-1", "TF_CONFIG", None),
    "PyTorchJob": ("worker-1", "MASTER_ADDR", "{job}-master-0"),
    "XGBoostJob": ("worker-0", "MASTER_ADDR", "{job}-master-0"),
    "PaddleJob": ("worker-1", "PADDLE_MASTER", "{job}-master-0:36543"),
    "JAXJob": ("worker-1", "COORDINATOR_ADDRESS", "{job}-worker-0"),
    "MXJob": ("worker-0", "DMLC_PS_ROOT_URI", "{job}-scheduler-0"),
}
# MPI delivers its peers in a ConfigMap: (name, key, value).
KEY_CONFIG = {
    "MPIJob": ("{job}-config", "hostfile", "{job}-worker-0 slots=1\n{job}-worker-1 slots=1\n")
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    yield from start_cluster_server(tmp_path_factory.mktemp("controller"))


# --- expectations shared by the scenarios ----------------------------------------------------


def expected_pod_names(job: Obj) -> set[str]:
    name, unindexed = job["metadata"]["name"], framework_for(job["kind"]).unindexed_types
    return {
        f"{name}-{rt.lower()}" if rt in unindexed else f"{name}-{rt.lower()}-{i}"
        for rt, count in replica_counts(job).items()
        for i in range(count)
    }


def assert_owned_by(obj: Obj, job: Obj) -> None:
    assert obj["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": job["kind"],
            "name": job["metadata"]["name"],
            "uid": job["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def assert_pod_labels(pods: dict[str, Obj], job: Obj) -> None:
    info, name = kind_info(job["kind"]), job["metadata"]["name"]
    masters = []
    for pod_name, pod in pods.items():
        labels = pod["metadata"]["labels"]
        assert labels[LABEL + "operator-name"] == info.controller_name
        assert labels[LABEL + "job-name"] == name
        replica_type = labels[LABEL + "replica-type"]
        assert pod_name.startswith(f"{name}-{replica_type}")
        if labels.get(LABEL + "replica-index") is not None:
            assert pod_name == f"{name}-{replica_type}-{labels[LABEL + 'replica-index']}"
        if labels.get(LABEL + "job-role") == "master":
            masters.append(pod_name)
    assert len(masters) == 1, f"exactly one job-role=master pod: {masters}"


def env_of(pod: Obj, container: str) -> dict[str, str | None]:
    found = next(c for c in pod["spec"]["containers"] if c["name"] == container)
    return {e["name"]: e.get("value") for e in found.get("env") or []}


async def assert_key_env(cluster: Cluster, job: Obj, pods: dict[str, Obj]) -> None:
    """The framework's peers reach the pods: one key variable, or MPI's hostfile."""
    kind, name = job["kind"], job["metadata"]["name"]
    if kind in KEY_ENV:
        suffix, variable, value = KEY_ENV[kind]
        env = env_of(pods[f"{name}-{suffix}"], kind_info(kind).default_container)
        if value is not None:
            assert env[variable] == value.format(job=name)
        else:  # TF_CONFIG: the whole cluster, addressed by Service DNS names, and this task
            config = json.loads(env[variable] or "{}")
            host = f"{name}-worker-1.{cluster.namespace}.svc:2222"
            assert config["cluster"]["worker"][1] == host
            assert config["task"] == {"type": "worker", "index": 1}
    if kind in KEY_CONFIG:
        config_name, key, value = KEY_CONFIG[kind]
        config_map = await cluster.get(CONFIGMAPS, config_name.format(job=name))
        assert config_map is not None
        assert config_map["data"][key] == value.format(job=name)
        assert_owned_by(config_map, job)


def assert_finished(job: Obj, outcome: str) -> None:
    """``outcome`` True, Running no longer True, completionTime set (every terminal path)."""
    assert is_true(job, outcome), job.get("status")
    assert is_true(job, "Created")
    running = condition(job, "Running")
    assert running is None or running["status"] == "False"
    assert job["status"].get("completionTime"), "completionTime is set on every terminal path"
    assert (condition(job, outcome) or {}).get("reason") == f"{job['kind']}{outcome}"


# --- per kind ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_a_job_runs_to_success_with_its_pods_services_and_env(
    server: RunningServer, kind: str
) -> None:
    async def body(cluster: Cluster) -> None:
        job = await cluster.create_job(manifest(kind, name="life"))
        running = await cluster.until_condition(kind, "life", "Running")
        assert is_true(running, "Created")
        pods = await cluster.until_pods("life", replica_count(job), "Running")
        assert set(pods) == expected_pod_names(job)
        assert_pod_labels(pods, job)
        for pod in pods.values():
            assert_owned_by(pod, job)
        services = await cluster.services("life")
        if framework_for(kind).creates_services:
            assert set(services) == set(pods), "one headless Service per pod, same name"
            for service in services.values():
                assert service["spec"]["clusterIP"] == "None"
                assert_owned_by(service, job)
        else:
            assert services == {}
        await assert_key_env(cluster, job, pods)

        await cluster.advance(29)
        assert is_true(await cluster.job_now(kind, "life"), "Running"), "pods run 30s"
        await cluster.advance(1)
        done = await cluster.until_condition(kind, "life", "Succeeded")
        assert_finished(done, "Succeeded")
        assert done["status"]["completionTime"] == cluster.at(30)
        counts = {rt: s.get("succeeded", 0) for rt, s in done["status"]["replicaStatuses"].items()}
        assert counts == replica_counts(job)

    run_cluster(server, body)


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_on_failure_restarts_containers_in_place(server: RunningServer, kind: str) -> None:
    async def body(cluster: Cluster) -> None:
        spec = manifest(kind, name="flaky")
        replica_spec(spec, "Worker")["restartPolicy"] = "OnFailure"
        annotate(spec, "Worker", run_seconds=10, exit_code=1, fail_times=1)
        job = await cluster.create_job(spec)
        before = await cluster.until_pods("flaky", replica_count(job), "Running")
        await cluster.advance(10)  # the workers exit 1; the kubelet restarts them after 5s
        await cluster.advance(5)
        after = await cluster.until_pods("flaky", replica_count(job), "Running")
        worker = "flaky-worker-0"
        assert after[worker]["metadata"]["uid"] == before[worker]["metadata"]["uid"]
        assert after[worker]["status"]["containerStatuses"][0]["restartCount"] == 1
        assert is_true(await cluster.job_now(kind, "flaky"), "Running")
        await cluster.advance(30)
        assert_finished(await cluster.until_condition(kind, "flaky", "Succeeded"), "Succeeded")
        assert await cluster.events(f"{kind}Restarting") == [], "no pod was recreated"

    run_cluster(server, body)


async def evict(cluster: Cluster, pod: str) -> None:
    """The pod ends in phase Failed without its containers exiting (an eviction)."""
    status = {"phase": "Failed", "reason": "Evicted", "message": "The node was low on memory."}
    await cluster.client.patch(
        PODS, name=pod, namespace=cluster.namespace, patch={"status": status}, subresource="status"
    )


@pytest.mark.parametrize("policy", ["OnFailure", "ExitCode"])
@pytest.mark.parametrize("kind", ALL_KINDS)
def test_a_failed_worker_is_recreated_and_the_job_recovers(
    server: RunningServer, kind: str, policy: str
) -> None:
    """OnFailure: an evicted pod (phase Failed); ExitCode: exit 137 via annotation (retryable).
    The fault is transient: the template loses it before the failure, so recreated pods run."""

    async def body(cluster: Cluster) -> None:
        spec = manifest(kind, name="retry")
        replica_spec(spec, "Worker")["restartPolicy"] = policy
        if policy == "ExitCode":
            annotate(spec, "Worker", run_seconds=10, exit_code=137)
        job = await cluster.create_job(spec)
        before = await cluster.until_pods("retry", replica_count(job), "Running")
        clean = {PREFIX + "run-seconds": None, PREFIX + "exit-code": None}
        field = kind_info(kind).replica_specs_field
        patch = {"spec": {field: {"Worker": {"template": {"metadata": {"annotations": clean}}}}}}
        await cluster.patch_job(kind, "retry", patch)
        await cluster.settle()
        unchanged = await cluster.pods("retry")
        assert (
            unchanged["retry-worker-0"]["metadata"]["uid"]
            == before["retry-worker-0"]["metadata"]["uid"]
        ), "a template change alone recreates nothing"

        if policy == "ExitCode":
            await cluster.advance(10)
        else:
            await evict(cluster, "retry-worker-0")
        restarting = await until(
            lambda: cluster.events(f"{kind}Restarting"), timeout=DEADLINE, what="a Restarting event"
        )
        assert restarting[0]["type"] == "Warning"
        assert "Worker replica(s) failed" in restarting[0]["message"]

        async def recreated() -> dict[str, Obj] | None:
            pods = await cluster.until_pods("retry", replica_count(job), "Running")
            uid = pods["retry-worker-0"]["metadata"]["uid"]
            return pods if uid != before["retry-worker-0"]["metadata"]["uid"] else None

        await until(recreated, timeout=DEADLINE, what="worker-0 recreated and running")
        job_now = await cluster.until_condition(kind, "retry", "Running")
        assert condition(job_now, "Restarting") is None, "Running replaces Restarting"
        assert job_now["status"]["restarts"] >= 1
        await cluster.advance(30)
        assert_finished(await cluster.until_condition(kind, "retry", "Succeeded"), "Succeeded")

    run_cluster(server, body)


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_exit_code_below_128_fails_the_job(server: RunningServer, kind: str) -> None:
    async def body(cluster: Cluster) -> None:
        spec = manifest(kind, name="broken")
        replica_spec(spec, "Worker")["restartPolicy"] = "ExitCode"
        annotate(spec, "Worker", run_seconds=10, exit_code=1)
        job = await cluster.create_job(spec)
        await cluster.until_pods("broken", replica_count(job), "Running")
        await cluster.advance(10)
        failed = await cluster.until_condition(kind, "broken", "Failed")
        assert_finished(failed, "Failed")
        # Upstream's common message for an ExitCode replica (test_upstream_fidelity.py).
        message = condition_on(failed, "Failed")["message"]
        assert message == 'job "broken" is failing because "Worker" replica(s) failed.'
        assert await cluster.events(f"{kind}Restarting") == []

    run_cluster(server, body)


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_backoff_limit_exhausted_fails_the_job(server: RunningServer, kind: str) -> None:
    async def body(cluster: Cluster) -> None:
        spec = manifest(kind, name="backoff", runPolicy={"backoffLimit": 1})
        replica_spec(spec, "Worker")["restartPolicy"] = "ExitCode"
        replica_spec(spec, "Worker")["replicas"] = 1
        annotate(spec, "Worker", run_seconds=10, exit_code=137)
        job = await cluster.create_job(spec)
        await cluster.until_pods("backoff", replica_count(job), "Running")
        await cluster.advance(10)  # first failure: one restart, within the limit
        await until(
            lambda: cluster.events(f"{kind}Restarting"), timeout=DEADLINE, what="first restart"
        )
        await cluster.until_pods("backoff", replica_count(job), "Running")
        assert not is_true(await cluster.job_now(kind, "backoff"), "Failed")
        await cluster.advance(10)  # second failure: a second restart would exceed the limit
        failed = await cluster.until_condition(kind, "backoff", "Failed")
        assert_finished(failed, "Failed")
        assert condition_on(failed, "Failed")["message"] == (
            "Job backoff has failed because it has reached the specified backoff limit"
        )
        await cluster.until_pods("backoff", 0)

    run_cluster(server, body)


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_a_job_managed_elsewhere_is_left_alone(server: RunningServer, kind: str) -> None:
    async def body(cluster: Cluster) -> None:
        managed = {"managedBy": "kueue.x-k8s.io/multikueue"}
        await cluster.create_job(manifest(kind, name="remote", runPolicy=managed))
        ours = await cluster.create_job(manifest(kind, name="local"))
        await cluster.until_pods("local", replica_count(ours), "Running")
        await cluster.settle()
        assert await cluster.pods("remote") == {}
        assert await cluster.services("remote") == {}
        remote = await cluster.job_now(kind, "remote")
        assert not remote.get("status"), "no status at all, not even Created"

    run_cluster(server, body)


# --- run policies on a representative pair ---------------------------------------------------


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_active_deadline_fires_exactly_on_time(server: RunningServer, kind: str) -> None:
    """Upstream waited for an unrelated event (quirk 3); here nothing happens in between."""

    async def body(cluster: Cluster) -> None:
        job = await cluster.create_job(
            manifest(kind, name="late", runPolicy={"activeDeadlineSeconds": 100})
        )
        await cluster.until_pods("late", replica_count(job), "Running")
        await cluster.advance(99)
        assert not is_true(await cluster.job_now(kind, "late"), "Failed")
        assert len(await cluster.pods("late")) == replica_count(job)
        await cluster.advance(1)
        failed = await cluster.until_condition(kind, "late", "Failed")
        assert_finished(failed, "Failed")
        assert condition_on(failed, "Failed")["message"] == (
            "Job late has failed because it was active longer than specified deadline"
        )
        assert failed["status"]["completionTime"] == cluster.at(100)
        await cluster.until_pods("late", 0)

    run_cluster(server, body, rules=Rules(run_seconds=1000))


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_ttl_deletes_the_finished_job_on_time(server: RunningServer, kind: str) -> None:
    async def body(cluster: Cluster) -> None:
        job = await cluster.create_job(
            manifest(kind, name="ttl", runPolicy={"ttlSecondsAfterFinished": 60})
        )
        await cluster.until_pods("ttl", replica_count(job), "Running")
        await cluster.advance(30)
        await cluster.until_condition(kind, "ttl", "Succeeded")
        await cluster.advance(59)
        assert await cluster.job_now(kind, "ttl") is not None
        await cluster.advance(1)
        await until(
            lambda: _is_gone(cluster, kind, "ttl"), timeout=DEADLINE, what="the job deleted"
        )
        events = await cluster.events("SuccessfulDeleteJob")
        assert [e["message"] for e in events] == ["Deleted job: ttl"]

    run_cluster(server, body)


async def _is_gone(cluster: Cluster, kind: str, name: str) -> bool:
    return await cluster.job(kind, name) is None


@pytest.mark.parametrize("policy", ["All", "Running", "None"])
@pytest.mark.parametrize("kind", ALL_KINDS)
def test_clean_pod_policy_once_every_replica_finished(
    server: RunningServer, kind: str, policy: str
) -> None:
    """All deletes every pod (and Service); Running and None keep the finished ones.

    The other replicas finish (10 s) before the kind's primary one (30 s), so every pod has
    ended when the job succeeds whichever replica decides success for the kind.
    """

    async def body(cluster: Cluster) -> None:
        spec = manifest(kind, name="tidy", runPolicy={"cleanPodPolicy": policy})
        primary = framework_for(kind).primary_type(wire.parse_job(spec))
        for replica_type in spec["spec"][kind_info(kind).replica_specs_field]:
            if replica_type != primary:
                annotate(spec, replica_type, run_seconds=10)
        job = await cluster.create_job(spec)
        everyone = expected_pod_names(job)
        await cluster.until_pods("tidy", replica_count(job), "Running")
        await cluster.advance(10)
        await cluster.advance(20)
        await cluster.until_condition(kind, "tidy", "Succeeded")
        remaining = set() if policy == "All" else everyone
        pods = await cluster.until_pods("tidy", len(remaining))
        assert set(pods) == remaining
        await cluster.settle()
        assert set(await cluster.pods("tidy")) == remaining
        if framework_for(kind).creates_services:
            assert set(await cluster.services("tidy")) == remaining

    run_cluster(server, body)


@pytest.mark.parametrize(
    ("policy", "remaining"),
    [
        ("All", set()),
        ("Running", {"clean-master-0"}),
        ("None", {"clean-master-0", "clean-worker-0", "clean-worker-1"}),
    ],
)
def test_clean_pod_policy_after_success(
    server: RunningServer, policy: str, remaining: set[str]
) -> None:
    """The master finishes (the job succeeds) while the workers still run."""

    async def body(cluster: Cluster) -> None:
        spec = manifest("PyTorchJob", name="clean", runPolicy={"cleanPodPolicy": policy})
        annotate(spec, "Worker", run_seconds=1000)
        await cluster.create_job(spec)
        await cluster.until_pods("clean", 3, "Running")
        await cluster.advance(30)
        await cluster.until_condition("PyTorchJob", "clean", "Succeeded")
        pods = await cluster.until_pods("clean", len(remaining))
        assert set(pods) == remaining
        await cluster.settle()
        assert set(await cluster.pods("clean")) == remaining
        assert set(await cluster.services("clean")) == remaining, "a deleted pod's Service too"

    run_cluster(server, body)


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_suspend_deletes_the_pods_and_resume_recreates_them(
    server: RunningServer, kind: str
) -> None:
    async def body(cluster: Cluster) -> None:
        job = await cluster.create_job(manifest(kind, name="pause"))
        count = replica_count(job)
        await cluster.until_pods("pause", count, "Running")
        await cluster.until_condition(kind, "pause", "Running")
        await cluster.patch_job(kind, "pause", {"spec": {"runPolicy": {"suspend": True}}})
        suspended = await cluster.until_condition(kind, "pause", "Suspended")
        assert condition_on(suspended, "Suspended")["reason"] == f"{kind}Suspended"
        assert condition_on(suspended, "Running")["status"] == "False"
        await cluster.until_pods("pause", 0)
        assert await cluster.services("pause") == {}
        await cluster.advance(50)  # suspended time does not count, pods stay gone
        assert await cluster.pods("pause") == {}

        await cluster.patch_job(kind, "pause", {"spec": {"runPolicy": {"suspend": False}}})
        await cluster.until_pods("pause", count, "Running")
        resumed = await cluster.until_condition(kind, "pause", "Running")
        again = condition_on(resumed, "Suspended")
        assert (again["status"], again["reason"]) == ("False", f"{kind}Resumed")
        assert resumed["status"]["startTime"] == cluster.at(50), "resume restarts the clock"
        await cluster.advance(30)
        assert_finished(await cluster.until_condition(kind, "pause", "Succeeded"), "Succeeded")

    run_cluster(server, body)


GANGS = {
    "volcano": (VOLCANO_PODGROUPS, "volcano"),
    "scheduler-plugins": (COSCHEDULING_PODGROUPS, "scheduler-plugins"),
}


@pytest.mark.parametrize("scheduler", list(GANGS))
@pytest.mark.parametrize("kind", ALL_KINDS)
def test_gang_scheduling_creates_and_deletes_the_pod_group(
    server: RunningServer, kind: str, scheduler: str
) -> None:
    resource, scheduler_name = GANGS[scheduler]

    async def body(cluster: Cluster) -> None:
        job = await cluster.create_job(manifest(kind, name="gang"))
        group = await until(
            lambda: cluster.get(resource, "gang"), timeout=DEADLINE, what="the PodGroup"
        )
        assert group["apiVersion"] == resource.api_version
        assert group["spec"]["minMember"] == replica_count(job)
        assert_owned_by(group, job)
        if scheduler == "volcano":
            await cluster.settle()
            assert await cluster.pods("gang") == {}, "Volcano: no pods before admission"
            await admit(cluster, resource)
        pods = await cluster.until_pods("gang", replica_count(job), "Running")
        for pod in pods.values():
            assert pod["spec"]["schedulerName"] == scheduler_name
            if scheduler == "volcano":
                assert pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "gang"
            else:
                assert pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "gang"
        await cluster.advance(30)
        await cluster.until_condition(kind, "gang", "Succeeded")
        await until(
            lambda: _absent(cluster, resource, "gang"), timeout=DEADLINE, what="PodGroup deleted"
        )

    options = ManagerOptions(engine=EngineOptions(gang_scheduler_name=scheduler_name))
    run_cluster(server, body, options=options)


async def admit(cluster: Cluster, resource: Resource) -> None:
    """What Volcano does once the gang fits: the PodGroup leaves phase Pending."""
    await cluster.client.patch(
        resource,
        name="gang",
        namespace=cluster.namespace,
        patch={"status": {"phase": "Running"}},
        subresource="status",
    )


async def _absent(cluster: Cluster, resource: Resource, name: str) -> bool:
    return await cluster.get(resource, name) is None


def test_only_the_enabled_kinds_are_reconciled(server: RunningServer) -> None:
    async def body(cluster: Cluster) -> None:
        assert set(cluster.manager.queues) == {"PyTorchJob"}
        await cluster.create_job(manifest("TFJob", name="off"))
        on = await cluster.create_job(manifest("PyTorchJob", name="on"))
        await cluster.until_pods("on", replica_count(on), "Running")
        await cluster.settle()
        assert await cluster.pods("off") == {}
        assert not (await cluster.job_now("TFJob", "off")).get("status")

    run_cluster(server, body, options=ManagerOptions(kinds=("pytorchjob",)))


def test_pods_carry_simulation_rules_from_their_template(server: RunningServer) -> None:
    """The suite's premise: template annotations reach the pods the kubelet simulates."""

    async def body(cluster: Cluster) -> None:
        spec = annotate(manifest("JAXJob", name="rules"), "Worker", run_seconds=7)
        await cluster.create_job(spec)
        pods = await cluster.until_pods("rules", 2, "Running")
        for pod in pods.values():
            assert pod["metadata"]["annotations"].items() >= sim_annotations(run_seconds=7).items()
            assert pod["metadata"]["labels"][JOB_NAME_LABEL] == "rules"
        await cluster.advance(7)
        await cluster.until_pods("rules", 2, "Succeeded")

    run_cluster(server, body)
