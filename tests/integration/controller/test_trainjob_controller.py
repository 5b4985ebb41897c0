"""The TrainJob controller against the embedded API server (issue 22's acceptance test).

Real parts: the embedded API server over HTTP with the generated CRDs (TrainJob, runtimes,
JobSet, PodGroups) and its admission chain, the operator's real ``Manager`` with
``--enable-scheme trainjob`` in its own thread and event loop, and the official ``kubernetes``
client for everything the test does, as a user would. There is no JobSet controller (the next
issue): the test writes JobSet status itself, as upstream's integration tests do.

Expected values are the spec's golden cases (section 8): G1 (PlainML + coscheduling +
initializers), G2 (Torch), G4 (OpenMPI), G8 (conditions, jobsStatus), G9 (deadline), and the
terminal ``Failed`` of section 7.1.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, config

from tests.integration.cluster.apiserver.conftest import RunningServer
from tests.integration.controller.cluster import start_cluster_server
from tests.polling import NotYet, wait_for
from trainop.api.trainer import constants as c
from trainop.controller.manager import Manager, ManagerOptions
from trainop.kube.clock import LoopClock
from trainop.kube.http import HttpClient
from trainop.local.session import install_crds

DEADLINE = 30.0
R = {"cpu": "1", "memory": "4Gi"}
PLURALS = c.PLURALS


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    for running in start_cluster_server(tmp_path_factory.mktemp("trainjob")):
        running.run(_install_trainer_crds(running))
        yield running


async def _install_trainer_crds(running: RunningServer) -> None:
    http = HttpClient.from_kubeconfig(path=str(running.kubeconfig))
    try:
        await install_crds(http)  # what `trainop local up` installs: the trainer CRDs, JobSet's
    finally:
        await http.close()


class Operator:
    """The operator's manager (TrainJob enabled) on its own event loop in a thread."""

    def __init__(self, running: RunningServer, namespace: str) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._kubeconfig = str(running.kubeconfig)
        self._namespace = namespace
        self._task: asyncio.Task[None] | None = None
        self.manager: Manager | None = None

    def start(self) -> None:
        self._thread.start()
        self._task = asyncio.run_coroutine_threadsafe(self._spawn(), self._loop).result(10)
        wait_for(lambda: self.manager is not None and self.manager.ready, timeout=DEADLINE,
                 what="the operator's caches synced")  # fmt: skip

    async def _spawn(self) -> asyncio.Task[None]:
        return asyncio.create_task(self._run())

    async def _run(self) -> None:
        http = HttpClient.from_kubeconfig(path=self._kubeconfig)
        options = ManagerOptions(kinds=(c.TRAINJOB,), namespace=self._namespace)
        self.manager = Manager(client=http, clock=LoopClock(), options=options)
        try:
            await self.manager.run()
        finally:
            await http.close()

    async def _cancel(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self._cancel(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()


class Kube:
    """The official client, scoped to one fresh namespace."""

    def __init__(self, running: RunningServer) -> None:
        self.api = config.new_client_from_config(config_file=str(running.kubeconfig))
        self.custom = client.CustomObjectsApi(self.api)
        self.core = client.CoreV1Api(self.api)
        self.namespace = f"tj-{uuid.uuid4().hex[:8]}"
        self.core.create_namespace({"metadata": {"name": self.namespace}})

    def create(self, plural: str, body: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = self.custom.create_namespaced_custom_object(
            c.GROUP, c.VERSION, self.namespace, plural, body
        )
        return out

    def trainjob(self, name: str) -> dict[str, Any]:
        out: dict[str, Any] = self.custom.get_namespaced_custom_object(
            c.GROUP, c.VERSION, self.namespace, PLURALS[c.TRAINJOB], name
        )
        return out

    def patch_trainjob(self, name: str, patch: dict[str, Any]) -> None:
        self.custom.patch_namespaced_custom_object(
            c.GROUP, c.VERSION, self.namespace, PLURALS[c.TRAINJOB], name, patch
        )

    def jobset(self, name: str) -> dict[str, Any] | None:
        try:
            out: dict[str, Any] = self.custom.get_namespaced_custom_object(
                c.JOBSET_GROUP, c.JOBSET_VERSION, self.namespace, c.JOBSET_PLURAL, name
            )
        except client.ApiException as exc:
            if exc.status == 404:
                return None
            raise
        return out

    def until_jobset(self, name: str, **wanted_spec: Any) -> dict[str, Any]:
        def probe() -> dict[str, Any] | NotYet:
            found = self.jobset(name)
            spec = (found or {}).get("spec") or {}
            if found and all(spec.get(k) == v for k, v in wanted_spec.items()):
                return found
            return NotYet(spec)

        out: dict[str, Any] = wait_for(probe, timeout=DEADLINE, what=f"JobSet {name}")
        return out

    def write_jobset_status(self, name: str, status: dict[str, Any]) -> None:
        self.custom.patch_namespaced_custom_object_status(
            c.JOBSET_GROUP, c.JOBSET_VERSION, self.namespace, c.JOBSET_PLURAL, name,
            {"status": status},
        )  # fmt: skip

    def delete_jobset(self, name: str) -> None:
        self.custom.delete_namespaced_custom_object(
            c.JOBSET_GROUP, c.JOBSET_VERSION, self.namespace, c.JOBSET_PLURAL, name
        )

    def until_conditions(self, name: str, wanted: list[tuple[str, str, str, str]]) -> None:
        def probe() -> bool | NotYet:
            found = conditions(self.trainjob(name))
            return found == wanted or NotYet(found)

        wait_for(probe, timeout=DEADLINE, what=f"TrainJob {name} conditions {wanted}")

    def pod_group(self, name: str) -> dict[str, Any]:
        out: dict[str, Any] = self.custom.get_namespaced_custom_object(
            "scheduling.x-k8s.io", "v1alpha1", self.namespace, "podgroups", name
        )
        return out

    def config_map(self, name: str) -> dict[str, Any]:
        out: dict[str, Any] = self.api.sanitize_for_serialization(
            self.core.read_namespaced_config_map(name, self.namespace)
        )
        return out

    def secret(self, name: str) -> dict[str, Any]:
        out: dict[str, Any] = self.api.sanitize_for_serialization(
            self.core.read_namespaced_secret(name, self.namespace)
        )
        return out

    def events(self, reason: str) -> list[dict[str, Any]]:
        listing = self.core.list_namespaced_event(self.namespace)
        found = self.api.sanitize_for_serialization(listing)["items"]
        return [e for e in found if e.get("reason") == reason]


def conditions(trainjob: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    found = (trainjob.get("status") or {}).get("conditions") or []
    return [(x["type"], x["status"], x.get("reason", ""), x.get("message", "")) for x in found]


@pytest.fixture
def kube(server: RunningServer) -> Iterator[Kube]:
    made = Kube(server)
    yield made
    made.api.close()


@pytest.fixture
def operator(server: RunningServer, kube: Kube) -> Iterator[Operator]:
    running = Operator(server, kube.namespace)
    running.start()
    yield running
    running.stop()


# --- runtimes and TrainJobs of the golden cases ------------------------------------------------


def _container(name: str, **extra: Any) -> dict[str, Any]:
    mount = {"name": c.INITIALIZER_VOLUME, "mountPath": "/workspace"}
    return {"name": name, "image": "test:runtime", "command": ["runtime"], "args": ["runtime"],
            "resources": {"requests": R}, "volumeMounts": [mount], **extra}  # fmt: skip


def _replicated_job(name: str, ancestor: str | None, **extra: Any) -> dict[str, Any]:
    volume = {"name": c.INITIALIZER_VOLUME, "persistentVolumeClaim": {"claimName": "pvc"}}
    labels = {c.LABEL_ANCESTOR: ancestor} if ancestor else {}
    pod = {"spec": {"containers": [_container(extra.pop("container", name))],
                    "volumes": [volume]}}  # fmt: skip
    return {
        "name": name,
        "groupName": "default",
        "replicas": 1,
        "template": {"metadata": {"labels": labels}, "spec": {"template": pod}},
        **extra,
    }


def _initializer_jobs() -> list[dict[str, Any]]:
    return [
        _replicated_job(c.DATASET_INITIALIZER, c.ANCESTOR_DATASET_INITIALIZER),
        _replicated_job(c.MODEL_INITIALIZER, c.ANCESTOR_MODEL_INITIALIZER),
    ]


def runtime(name: str, *, jobs: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": c.API_VERSION,
        "kind": c.TRAINING_RUNTIME,
        "metadata": {"name": name},
        "spec": {"template": {"spec": {"replicatedJobs": jobs}}, **spec},
    }


def g1_runtime() -> dict[str, Any]:
    jobs = [*_initializer_jobs(), _replicated_job(c.NODE, c.ANCESTOR_TRAINER)]
    return runtime(
        "alpha",
        jobs=jobs,
        mlPolicy={"numNodes": 100},
        podGroupPolicy={"coscheduling": {"scheduleTimeoutSeconds": 100}},
    )


def trainjob(name: str, runtime_name: str = "alpha", **spec: Any) -> dict[str, Any]:
    ref = {"name": runtime_name, "kind": c.TRAINING_RUNTIME, "apiGroup": c.GROUP}
    return {
        "apiVersion": c.API_VERSION,
        "kind": c.TRAINJOB,
        "metadata": {"name": name},
        "spec": {"runtimeRef": ref, **spec},
    }


def g1_trainjob(name: str = "alpha") -> dict[str, Any]:
    meta = {"labels": {"testingKey": "testingVal"}, "annotations": {"testingKey": "testingVal"}}
    return trainjob(
        name,
        suspend=True,
        runtimePatches=[{"manager": "test.io/manager", "trainingRuntimeSpec": {
            "template": {"metadata": meta}}}],
        trainer={"image": "test:trainjob", "command": ["trainjob"], "args": ["trainjob"],
                 "resourcesPerNode": {"requests": R}},
        initializer={"dataset": {"storageUri": "hf://trainjob-dataset"},
                     "model": {"storageUri": "hf://trainjob-model"}},
    )  # fmt: skip


def by_name(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {item["name"]: item for item in items}


def env_of(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env") or []}


def main_container(jobset: dict[str, Any], job: str, name: str) -> dict[str, Any]:
    replicated = by_name(jobset["spec"]["replicatedJobs"])[job]
    pod = replicated["template"]["spec"]["template"]
    return by_name(pod["spec"]["containers"])[name]


def owned_by(obj: dict[str, Any], trainjob: dict[str, Any]) -> bool:
    refs = obj["metadata"].get("ownerReferences") or []
    return [(r["kind"], r["uid"], r.get("controller")) for r in refs] == [
        (c.TRAINJOB, trainjob["metadata"]["uid"], True)
    ]


# --- the tests -------------------------------------------------------------------------------


def test_g1_a_suspended_trainjob_gets_its_jobset_podgroup_and_snapshot(
    kube: Kube, operator: Operator
) -> None:
    kube.create(PLURALS[c.TRAINING_RUNTIME], g1_runtime())
    created = kube.create(PLURALS[c.TRAINJOB], g1_trainjob())
    jobset = kube.until_jobset("alpha")
    assert owned_by(jobset, created)
    assert jobset["spec"]["suspend"] is True
    assert jobset["metadata"]["labels"]["testingKey"] == "testingVal"
    assert jobset["metadata"]["annotations"]["testingKey"] == "testingVal"
    jobs = by_name(jobset["spec"]["replicatedJobs"])
    assert list(jobs) == [c.DATASET_INITIALIZER, c.MODEL_INITIALIZER, c.NODE]
    for name, job in jobs.items():
        assert job["replicas"] == 1
        pod = job["template"]["spec"]["template"]
        assert pod["metadata"]["labels"][c.COSCHEDULING_POD_GROUP_LABEL] == "alpha"
        want = 100 if name == c.NODE else 1
        assert job["template"]["spec"]["parallelism"] == want
        assert job["template"]["spec"]["completions"] == want
    dataset = main_container(jobset, c.DATASET_INITIALIZER, c.DATASET_INITIALIZER)
    assert env_of(dataset)[c.STORAGE_URI_ENV] == "hf://trainjob-dataset"
    model = main_container(jobset, c.MODEL_INITIALIZER, c.MODEL_INITIALIZER)
    assert env_of(model)[c.STORAGE_URI_ENV] == "hf://trainjob-model"
    node = main_container(jobset, c.NODE, c.NODE)
    assert (node["image"], node["command"], node["args"]) == (
        "test:trainjob",
        ["trainjob"],
        ["trainjob"],
    )
    assert node["resources"]["requests"] == R
    assert not any(name.startswith("PET_") for name in env_of(node))
    assert not node.get("ports")

    group = kube.pod_group("alpha")
    assert owned_by(group, created)
    assert group["spec"]["minMember"] == 102
    assert group["spec"]["minResources"] == {"cpu": "102", "memory": "408Gi"}
    assert group["spec"]["scheduleTimeoutSeconds"] == 100

    snapshot = kube.config_map(f"alpha{c.SNAPSHOT_SUFFIX}")
    [ref] = snapshot["metadata"]["ownerReferences"]
    assert (ref["kind"], ref["controller"], ref["blockOwnerDeletion"]) == (c.TRAINJOB, True, True)
    assert "kind: TrainingRuntime" in snapshot["data"][c.SNAPSHOT_DATA_KEY]
    assert "name: alpha" in snapshot["data"][c.SNAPSHOT_DATA_KEY]
    kube.until_conditions("alpha", [("Suspended", "True", "Suspended", "TrainJob is suspended")])


def test_g8_resume_then_the_jobsets_completion_completes_the_trainjob(
    kube: Kube, operator: Operator
) -> None:
    kube.create(PLURALS[c.TRAINING_RUNTIME], g1_runtime())
    kube.create(PLURALS[c.TRAINJOB], g1_trainjob())
    kube.until_jobset("alpha", suspend=True)
    kube.patch_trainjob("alpha", {"spec": {"suspend": False}})
    kube.until_jobset("alpha", suspend=False)
    resumed = ("Suspended", "False", "Resumed", "TrainJob is resumed")
    kube.until_conditions("alpha", [resumed])
    counts = {"ready": 0, "succeeded": 1, "failed": 0, "active": 0, "suspended": 0}
    jobs = [{"name": n, **counts} for n in (c.DATASET_INITIALIZER, c.MODEL_INITIALIZER, c.NODE)]
    completed = {"type": "Completed", "status": "True", "reason": "AllJobsCompleted",
                 "message": "jobset completed successfully",
                 "lastTransitionTime": "2026-01-01T00:00:00Z"}  # fmt: skip
    kube.write_jobset_status("alpha", {"conditions": [completed], "replicatedJobsStatus": jobs})
    done = ("Complete", "True", "AllJobsCompleted", "jobset completed successfully")
    kube.until_conditions("alpha", [resumed, done])
    assert kube.trainjob("alpha")["status"]["jobsStatus"] == jobs
    assert operator.manager is not None
    text = operator.manager.metrics.exposition().decode()
    labels = f'framework="trainjob",job_namespace="{kube.namespace}"'
    assert f"training_operator_jobs_created_total{{{labels}}} 1.0" in text
    assert f"training_operator_jobs_successful_total{{{labels}}} 1.0" in text
    ok = 'controller_runtime_reconcile_total{controller="trainjob_controller",result="success"}'
    assert ok in text


def test_g8_a_failed_jobset_fails_the_trainjob_for_good(kube: Kube, operator: Operator) -> None:
    kube.create(PLURALS[c.TRAINING_RUNTIME], g1_runtime())
    job = g1_trainjob()
    job["spec"]["suspend"] = False
    kube.create(PLURALS[c.TRAINJOB], job)
    kube.until_jobset("alpha", suspend=False)
    failed = {"type": "Failed", "status": "True", "reason": "FailedJobs",
              "message": "jobset failed due to one or more job failures",
              "lastTransitionTime": "2026-01-01T00:00:00Z"}  # fmt: skip
    counts = {"ready": 0, "succeeded": 0, "failed": 1, "active": 0, "suspended": 0}
    kube.write_jobset_status(
        "alpha", {"conditions": [failed], "replicatedJobsStatus": [{"name": c.NODE, **counts}]}
    )
    failure = ("Failed", "True", "FailedJobs", "jobset failed due to one or more job failures")
    wait_for(lambda: failure in conditions(kube.trainjob("alpha")), timeout=DEADLINE,
             what="TrainJob Failed")  # fmt: skip
    # Spec 7.1: terminal. The JobSet is gone (TTL, or by hand): no new JobSet, Failed stays.
    kube.delete_jobset("alpha")
    kube.patch_trainjob("alpha", {"metadata": {"labels": {"poke": "1"}}})  # one more pass
    wait_for(lambda: operator.manager is not None and _drained(operator.manager), timeout=DEADLINE,
             what="the TrainJob queue drained")  # fmt: skip
    assert kube.jobset("alpha") is None
    assert failure in conditions(kube.trainjob("alpha"))


def _drained(manager: Manager) -> bool:
    queue = manager.queues[c.TRAINJOB]
    return not queue.depth and not queue.in_flight


def test_g9_an_active_deadline_fails_the_trainjob_and_deletes_its_jobset(
    kube: Kube, operator: Operator
) -> None:
    kube.create(PLURALS[c.TRAINING_RUNTIME], g1_runtime())
    job = g1_trainjob()
    job["spec"].update(suspend=False, activeDeadlineSeconds=1)
    kube.create(PLURALS[c.TRAINJOB], job)
    deadline = ("Failed", "True", "DeadlineExceeded", "TrainJob exceeded its active deadline")
    wait_for(lambda: deadline in conditions(kube.trainjob("alpha")), timeout=DEADLINE,
             what="DeadlineExceeded")  # fmt: skip
    wait_for(lambda: kube.jobset("alpha") is None, timeout=DEADLINE, what="JobSet deleted")


def test_g2_torch_runtime_env_and_port(kube: Kube, operator: Operator) -> None:
    kube.create(PLURALS[c.TRAINING_RUNTIME], runtime(
        "alpha", jobs=[_replicated_job(c.NODE, c.ANCESTOR_TRAINER)],
        mlPolicy={"numNodes": 100, "torch": {}}))  # fmt: skip
    kube.create(
        PLURALS[c.TRAINJOB],
        trainjob(
            "alpha",
            trainer={
                "image": "test:trainjob",
                "command": ["trainjob"],
                "args": ["trainjob"],
                "resourcesPerNode": {"requests": R},
                "env": [{"name": "TRAIN_JOB", "value": "value"}],
            },
        ),
    )
    jobset = kube.until_jobset("alpha")  # fmt: skip
    assert jobset["spec"]["suspend"] is False
    node = main_container(jobset, c.NODE, c.NODE)
    assert node["image"] == "test:trainjob"
    assert node["ports"] == [{"containerPort": 29500, "protocol": "TCP"}]
    index = {"fieldRef": {"fieldPath": c.COMPLETION_INDEX_FIELD}}
    assert env_of(node) == {
        "TRAIN_JOB": "value", "PET_NNODES": "100", "PET_NPROC_PER_NODE": "1",
        "PET_NODE_RANK": index, "PET_MASTER_ADDR": "alpha-node-0-0.alpha",
        "PET_MASTER_PORT": "29500",
    }  # fmt: skip


def test_g4_openmpi_hostfile_and_ssh_secret(kube: Kube, operator: Operator) -> None:
    launcher = _replicated_job(c.LAUNCHER, None, container=c.NODE,
                               dependsOn=[{"name": c.NODE, "status": "Ready"}])  # fmt: skip
    launcher["template"]["spec"]["template"]["spec"]["containers"][0].update(
        command=["mpirun"], args=["echo.sh"])  # fmt: skip
    # Upstream's G4 lists the launcher before node; JobSet's webhook (which the embedded API
    # server runs, upstream's envtest does not) lets a replicatedJob depend only on earlier ones.
    jobs = [*_initializer_jobs(), _replicated_job(c.NODE, c.ANCESTOR_TRAINER), launcher]
    mpi = {"numProcPerNode": 8, "mpiImplementation": "OpenMPI",
           "sshAuthMountPath": "/root/.ssh", "runLauncherAsNode": False}  # fmt: skip
    kube.create(PLURALS[c.TRAINING_RUNTIME], runtime(
        "alpha", jobs=jobs, mlPolicy={"numNodes": 1, "mpi": mpi}))  # fmt: skip
    created = kube.create(PLURALS[c.TRAINJOB], trainjob("alpha", trainer={
        "numNodes": 2, "image": "test:trainjob", "resourcesPerNode": {"requests": R},
        "env": [{"name": "TRAIN_JOB", "value": "value"}]}))  # fmt: skip
    jobset = kube.until_jobset("alpha")
    jobs_by_name = by_name(jobset["spec"]["replicatedJobs"])
    assert jobs_by_name[c.LAUNCHER]["template"]["spec"]["parallelism"] == 1
    assert jobs_by_name[c.NODE]["template"]["spec"]["parallelism"] == 2
    runner = main_container(jobset, c.LAUNCHER, c.NODE)
    assert env_of(runner) | {} == env_of(runner)  # a mapping, for the checks below
    assert env_of(runner)["OMPI_MCA_orte_default_hostfile"] == "/etc/mpi/hostfile"
    assert env_of(runner)["OMPI_MCA_orte_set_default_slots"] == "8"
    assert {m["mountPath"] for m in runner["volumeMounts"]} >= {"/root/.ssh", "/etc/mpi"}
    hostfile = kube.config_map("alpha-mpi-hostfile")
    assert owned_by(hostfile, created)
    assert hostfile["data"]["hostfile"] == (
        "alpha-node-0-0.alpha slots=8\nalpha-node-0-1.alpha slots=8\n"
    )
    secret = kube.secret("alpha-mpi-ssh-auth")
    assert owned_by(secret, created)
    assert (secret["type"], secret["immutable"]) == ("kubernetes.io/ssh-auth", True)
    assert set(secret["data"]) == {"ssh-privatekey", "ssh-publickey"}


def test_a_missing_runtime_fails_the_trainjob_and_others_still_run(
    server: RunningServer, kube: Kube
) -> None:
    # The runtime is deleted while the operator is down, after admission accepted the job.
    kube.create(PLURALS[c.TRAINING_RUNTIME], g1_runtime())
    kube.create(PLURALS[c.TRAINJOB], g1_trainjob("orphan"))
    kube.custom.delete_namespaced_custom_object(
        c.GROUP, c.VERSION, kube.namespace, PLURALS[c.TRAINING_RUNTIME], "alpha"
    )
    other = g1_runtime()
    other["metadata"]["name"] = "beta"
    kube.create(PLURALS[c.TRAINING_RUNTIME], other)
    kube.create(PLURALS[c.TRAINJOB], trainjob("fine", "beta", suspend=True))
    running = Operator(server, kube.namespace)
    running.start()
    try:

        def failed() -> bool | NotYet:
            found = conditions(kube.trainjob("orphan"))
            return any(x[:3] == ("Failed", "True", c.REASON_RUNTIME_NOT_SUPPORTED)
                       for x in found) or NotYet(found)  # fmt: skip

        wait_for(failed, timeout=DEADLINE, what="orphan Failed")
        [message] = [x[3] for x in conditions(kube.trainjob("orphan")) if x[0] == "Failed"]
        assert "TrainingRuntime specified in TrainJob is not found" in message
        assert kube.until_jobset("fine")  # the operator keeps serving the other jobs
        assert kube.jobset("orphan") is None
    finally:
        running.stop()


def test_g1_while_suspended_patches_reach_the_jobset_and_the_trainer_is_immutable(
    kube: Kube, operator: Operator
) -> None:
    kube.create(PLURALS[c.TRAINING_RUNTIME], g1_runtime())
    kube.create(PLURALS[c.TRAINJOB], g1_trainjob())
    kube.until_jobset("alpha", suspend=True)
    patches = kube.trainjob("alpha")["spec"]["runtimePatches"]
    selector = {"manager": "test.io/selector", "trainingRuntimeSpec": {"template": {"spec": {
        "replicatedJobs": [{"name": c.NODE, "template": {"spec": {"template": {"spec": {
            "nodeSelector": {"updated": "selector"}}}}}}]}}}}  # fmt: skip
    kube.patch_trainjob("alpha", {"spec": {"runtimePatches": [*patches, selector]}})

    def node_selector() -> object:
        found = kube.jobset("alpha") or {"spec": {"replicatedJobs": []}}
        jobs = by_name(found["spec"]["replicatedJobs"])
        pod = (jobs.get(c.NODE) or {}).get("template", {}).get("spec", {}).get("template", {})
        return (pod.get("spec") or {}).get("nodeSelector") == {"updated": "selector"}

    wait_for(node_selector, timeout=DEADLINE, what="the patched nodeSelector on the JobSet")
    with pytest.raises(client.ApiException) as refused:
        kube.patch_trainjob("alpha", {"spec": {"trainer": {"image": "test:changed"}}})
    assert refused.value.status == 422


def test_g10_the_snapshot_pins_the_runtime(kube: Kube, operator: Operator) -> None:
    pinned = g1_runtime()
    pinned["spec"]["template"]["metadata"] = {"labels": {"snapshot-test-marker": "snapshot-v1"}}
    kube.create(PLURALS[c.TRAINING_RUNTIME], pinned)
    kube.create(PLURALS[c.TRAINJOB], trainjob("alpha", suspend=True))
    jobset = kube.until_jobset("alpha", suspend=True)
    assert jobset["metadata"]["labels"]["snapshot-test-marker"] == "snapshot-v1"
    kube.custom.patch_namespaced_custom_object(
        c.GROUP, c.VERSION, kube.namespace, PLURALS[c.TRAINING_RUNTIME], "alpha",
        {"spec": {"template": {"metadata": {"labels": {"snapshot-test-marker": "snapshot-v2"}}}}},
    )  # fmt: skip
    kube.patch_trainjob("alpha", {"spec": {"suspend": False}})
    jobset = kube.until_jobset("alpha", suspend=False)
    assert jobset["metadata"]["labels"]["snapshot-test-marker"] == "snapshot-v1"
    snapshot = kube.config_map(f"alpha{c.SNAPSHOT_SUFFIX}")["data"][c.SNAPSHOT_DATA_KEY]
    assert "snapshot-v1" in snapshot
    assert "snapshot-v2" not in snapshot
