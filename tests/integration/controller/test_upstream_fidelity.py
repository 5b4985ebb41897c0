"""Upstream v1.9's own observable strings and names, driven through the real ``Manager`` on the
embedded API server (``cluster``): issue 11's fidelity items.

Every expected value here is upstream's, taken from its controller tests or code (named per
test), never from trainop's output: the cluster domain suffix of TF_CONFIG hosts, the Failed
message of an ExitCode replica, the MPI scripts and launcher ServiceAccount, the PyTorch init
container command, MXJob's empty ``jobMode``.
"""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest
import yaml
from kubernetes import client as k8s
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from tests.integration.cluster.apiserver.conftest import RunningServer
from tests.integration.controller.cluster import (
    DEADLINE,
    Cluster,
    annotate,
    condition,
    condition_on,
    replica_count,
    replica_spec,
    run_cluster,
    start_cluster_server,
)
from tests.integration.controller.operator_process import (
    OperatorProcess,
    api_client,
    custom,
    get_job,
)
from tests.polling import NotYet, until, wait_for
from tests.unit.api.builders import manifest
from trainop import errors
from trainop.api.kinds import KINDS
from trainop.cli.operator import config_from_flags, operator
from trainop.controller.manager import ManagerOptions
from trainop.frameworks.registry import framework_for
from trainop.kube.client import Obj
from trainop.kube.resources import CONFIGMAPS, ROLEBINDINGS, SERVICEACCOUNTS

# Kinds run in phases (DGLJob) have their own suite, test_phases.py.
ALL_KINDS = [info.kind for info in KINDS if not framework_for(info.kind).starts_after]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    yield from start_cluster_server(tmp_path_factory.mktemp("fidelity"))


def env_of(pod: Obj, container: str) -> dict[str, str | None]:
    found = next(c for c in pod["spec"]["containers"] if c["name"] == container)
    return {e["name"]: e.get("value") for e in found.get("env") or []}


# --- item 3: CUSTOM_CLUSTER_DOMAIN --------------------------------------------------------------


def test_custom_cluster_domain_suffixes_tf_config_hosts(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Upstream ``tensorflow/tensorflow_test.go`` (TestClusterSpec, customClusterDomain
    ``tf.training.com``): hosts are ``<job>-<rt>-<i>.<ns>.svc.tf.training.com:2222``; the other
    kinds' peer names stay short Service names (spec 7)."""
    monkeypatch.setenv("CUSTOM_CLUSTER_DOMAIN", "tf.training.com")
    options = ManagerOptions()  # read from the operator's environment, as upstream

    async def body(cluster: Cluster) -> None:
        spec = manifest("TFJob", name="dom")
        del spec["spec"]["tfReplicaSpecs"]["Chief"]
        await cluster.create_job(spec)
        pods = await cluster.until_pods("dom", 3)
        ns = cluster.namespace
        expected = (
            '{"cluster":{"ps":["dom-ps-0.NS.svc.tf.training.com:2222"],'
            '"worker":["dom-worker-0.NS.svc.tf.training.com:2222",'
            '"dom-worker-1.NS.svc.tf.training.com:2222"]},'
            '"task":{"type":"worker","index":1},"environment":"cloud"}'
        ).replace("NS", ns)
        assert env_of(pods["dom-worker-1"], "tensorflow")["TF_CONFIG"] == expected

        await cluster.create_job(manifest("PyTorchJob", name="short"))
        torch = await cluster.until_pods("short", 3)
        assert env_of(torch["short-worker-0"], "pytorch")["MASTER_ADDR"] == "short-master-0"

    run_cluster(server, body, options=options)


def test_without_a_cluster_domain_tf_config_hosts_end_in_svc(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CUSTOM_CLUSTER_DOMAIN", raising=False)

    async def body(cluster: Cluster) -> None:
        spec = manifest("TFJob", name="plain")
        await cluster.create_job(spec)
        pods = await cluster.until_pods("plain", 4)
        config = json.loads(env_of(pods["plain-worker-0"], "tensorflow")["TF_CONFIG"] or "")
        assert config["cluster"]["chief"] == [f"plain-chief-0.{cluster.namespace}.svc:2222"]

    run_cluster(server, body, options=ManagerOptions())


# --- item 4: the Failed message of an ExitCode replica --------------------------------------


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_exit_code_failure_uses_upstreams_message(server: RunningServer, kind: str) -> None:
    """Upstream ``tensorflow/pod_test.go`` "Test Unretryable Exit Code" (and ``common/pod.go``,
    shared by every kind): condition message ``job "<name>" is failing because "Worker"
    replica(s) failed.``, reason ``<Kind>Failed``; the event is a Warning with that message."""

    async def body(cluster: Cluster) -> None:
        spec = manifest(kind, name="unretryable")
        replica_spec(spec, "Worker")["restartPolicy"] = "ExitCode"
        annotate(spec, "Worker", run_seconds=10, exit_code=1)
        job = await cluster.create_job(spec)
        await cluster.until_pods("unretryable", replica_count(job), "Running")
        await cluster.advance(10)
        failed = await cluster.until_condition(kind, "unretryable", "Failed")
        found = condition_on(failed, "Failed")
        assert found["reason"] == f"{kind}Failed"
        assert (
            found["message"] == 'job "unretryable" is failing because "Worker" replica(s) failed.'
        )
        events = await until(
            lambda: cluster.events(f"{kind}Failed"), timeout=DEADLINE, what="Failed event"
        )
        assert [(e["type"], e["message"]) for e in events] == [("Warning", found["message"])]

    run_cluster(server, body)


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_restart_uses_upstreams_message(server: RunningServer, kind: str) -> None:
    """Upstream ``common/pod.go`` (every kind): a failed pod deleted for restart sets
    ``Restarting`` with ``job <name> is restarting because <Type> replica(s) failed.`` and
    records it as a Warning ``<Kind>Restarting`` (the event carries the condition's message;
    the condition itself gives way to Running once the pod is back)."""

    async def body(cluster: Cluster) -> None:
        spec = manifest(kind, name="again")
        replica_spec(spec, "Worker")["restartPolicy"] = "ExitCode"
        annotate(spec, "Worker", run_seconds=10, exit_code=137, fail_times=1)
        job = await cluster.create_job(spec)
        await cluster.until_pods("again", replica_count(job), "Running")
        await cluster.advance(10)
        events = await until(
            lambda: cluster.events(f"{kind}Restarting"), timeout=DEADLINE, what="restart"
        )
        message = "job again is restarting because Worker replica(s) failed."
        assert {(e["type"], e["message"]) for e in events} == {("Warning", message)}

    run_cluster(server, body)


# --- item 5: MPI scripts and the launcher's ServiceAccount -----------------------------------

# Upstream ``mpi/mpijob_controller.go`` (newConfigMap, updateDiscoverHostsInConfigMap).
KUBEXEC = (
    '#!/bin/sh\nset -x\nPOD_NAME=$1\nshift\n/opt/kube/kubectl exec ${POD_NAME} -- /bin/sh -c "$*"'
)
KUBEXEC_MAIN = (
    "#!/bin/sh\nset -x\nPOD_NAME=$1\nshift\n"
    '/opt/kube/kubectl exec ${POD_NAME} --container mpi -- /bin/sh -c "$*"'
)


async def _config_data(cluster: Cluster, name: str, key: str, wanted: str) -> str:
    async def probe() -> str | NotYet:
        found = await cluster.get(CONFIGMAPS, f"{name}-config")
        value = ((found or {}).get("data") or {}).get(key)
        return value if value == wanted else NotYet(value)

    found: str = await until(probe, what=f"{key} of {name}", timeout=10)
    return found


def test_mpi_scripts_are_byte_identical_to_upstreams(server: RunningServer) -> None:
    async def body(cluster: Cluster) -> None:
        await cluster.create_job(manifest("MPIJob", name="m"))
        await cluster.until_pods("m", 3, "Running")
        await _config_data(cluster, "m", "kubexec.sh", KUBEXEC)
        running = "#!/bin/sh\necho m-worker-0:1\necho m-worker-1:1"
        await _config_data(cluster, "m", "discover_hosts.sh", running)

        gpu = manifest("MPIJob", name="g", mainContainer="mpi", slotsPerWorker=2)
        launcher = replica_spec(gpu, "Launcher")["template"]["spec"]["containers"][0]
        launcher["resources"] = {"limits": {"nvidia.com/gpu": "1"}}
        await cluster.create_job(gpu)
        await cluster.until_pods("g", 3, "Running")
        await _config_data(cluster, "g", "kubexec.sh", KUBEXEC_MAIN)
        # A GPU launcher's line ends in a newline of its own: an empty line follows (upstream).
        gpu_hosts = "#!/bin/sh\necho g-launcher:2\n\necho g-worker-0:2\necho g-worker-1:2"
        await _config_data(cluster, "g", "discover_hosts.sh", gpu_hosts)
        hostfile = "g-launcher slots=2\ng-worker-0 slots=2\ng-worker-1 slots=2\n"
        await _config_data(cluster, "g", "hostfile", hostfile)

    run_cluster(server, body)


def test_mpi_pod_events_are_worded_as_upstreams(server: RunningServer) -> None:
    """Upstream ``mpijob_controller.go``: workers ``SuccessfulCreatePod`` ``Created worker pod:
    <name>``, the launcher ``MPIJobRunning`` ``launcher pod created success: <name>``; a
    template restartPolicy warns ``SettedPodTemplateRestartPolicy`` (sic) for the launcher
    only. Other kinds keep the common wording (spec 4.6)."""

    async def body(cluster: Cluster) -> None:
        spec = manifest("MPIJob", name="ev")
        for replica_type in ("Launcher", "Worker"):
            replica_spec(spec, replica_type)["template"]["spec"]["restartPolicy"] = "OnFailure"
        await cluster.create_job(spec)
        await cluster.until_pods("ev", 3)

        async def messages(reason: str) -> list[tuple[str, str]]:
            return sorted((e["type"], e["message"]) for e in await cluster.events(reason))

        async def until_messages(reason: str, wanted: list[tuple[str, str]]) -> None:
            async def probe() -> bool | NotYet:
                found = await messages(reason)
                return found == wanted or NotYet(found)

            await until(probe, what=f"{reason} events", timeout=10)

        await until_messages(
            "SuccessfulCreatePod",
            [
                ("Normal", "Created worker pod: ev-worker-0"),
                ("Normal", "Created worker pod: ev-worker-1"),
            ],
        )
        await until_messages(
            "MPIJobRunning", [("Normal", "launcher pod created success: ev-launcher")]
        )
        warning = (
            "Restart policy in pod template will be overwritten by restart policy in replica spec"
        )
        await until_messages("SettedPodTemplateRestartPolicy", [("Warning", warning)])
        await cluster.settle()
        assert await messages("SetPodTemplateRestartPolicy") == []

        torch = manifest("PyTorchJob", name="tev")
        replica_spec(torch, "Master")["template"]["spec"]["restartPolicy"] = "OnFailure"
        await cluster.create_job(torch)
        await cluster.until_pods("tev", 3)
        await until(
            lambda: cluster.events("SetPodTemplateRestartPolicy"),
            timeout=DEADLINE,
            what="the common warning",
        )

        async def common_wording() -> bool:
            return ("Normal", "Created pod: tev-master-0") in await messages("SuccessfulCreatePod")

        await until(common_wording, what="Created pod: tev-master-0", timeout=10)

    run_cluster(server, body)


def _with_account(name: str, account: str) -> Obj:
    spec = manifest("MPIJob", name=name)
    replica_spec(spec, "Launcher")["template"]["spec"]["serviceAccountName"] = account
    return spec


def test_mpi_launcher_account_named_in_the_template_is_created_when_missing(
    server: RunningServer,
) -> None:
    """Upstream getOrCreateLauncherServiceAccount: the template's ``serviceAccountName`` is
    created (labels ``app: <job>``, controlled by the job) and bound by the RoleBinding."""

    async def body(cluster: Cluster) -> None:
        job = await cluster.create_job(_with_account("sa", "trainer"))
        pods = await cluster.until_pods("sa", 3)
        assert pods["sa-launcher"]["spec"]["serviceAccountName"] == "trainer"
        account = await until(
            lambda: cluster.get(SERVICEACCOUNTS, "trainer"),
            timeout=DEADLINE,
            what="ServiceAccount trainer",
        )
        assert account["metadata"]["labels"]["app"] == "sa"
        [owner] = account["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["uid"], owner["controller"]) == (
            "MPIJob",
            job["metadata"]["uid"],
            True,
        )
        binding = await cluster.get(ROLEBINDINGS, "sa-launcher")
        assert binding is not None
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": "trainer", "namespace": cluster.namespace}
        ]
        assert await cluster.get(SERVICEACCOUNTS, "sa-launcher") is None

    run_cluster(server, body)


def test_mpi_launcher_account_that_exists_is_reused_as_it_is(server: RunningServer) -> None:
    """Upstream reuses an existing account whoever made it (no ownership check, unlike the
    ConfigMap, Role and RoleBinding): the job runs, the account is left untouched."""

    async def body(cluster: Cluster) -> None:
        await cluster.client.create(
            SERVICEACCOUNTS,
            {"metadata": {"name": "shared", "labels": {"team": "a"}}},
            namespace=cluster.namespace,
        )
        await cluster.create_job(_with_account("reuse", "shared"))
        pods = await cluster.until_pods("reuse", 3, "Running")
        assert pods["reuse-launcher"]["spec"]["serviceAccountName"] == "shared"
        await cluster.settle()
        account = await cluster.get(SERVICEACCOUNTS, "shared")
        assert account is not None
        assert account["metadata"]["labels"] == {"team": "a"}
        assert "ownerReferences" not in account["metadata"]
        assert await cluster.events("ErrResourceExists") == []
        binding = await cluster.get(ROLEBINDINGS, "reuse-launcher")
        assert binding is not None
        assert binding["subjects"][0]["name"] == "shared"
        assert set(await cluster.pods("reuse")) == {
            "reuse-launcher",
            "reuse-worker-0",
            "reuse-worker-1",
        }

    run_cluster(server, body)


# --- item 6: MXJob jobMode -------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["", "MXTrain", "AnythingElse"])
def test_mxjob_accepts_any_job_mode_string(server: RunningServer, mode: str) -> None:
    """Upstream v1.8.1: ``jobMode`` is a required plain string (CRD ``type: string``, no enum;
    the Go zero value is ``""``) and the controller never reads it."""

    async def body(cluster: Cluster) -> None:
        spec = manifest("MXJob", name="mx", jobMode=mode)
        created = await cluster.create_job(spec)
        assert created["spec"]["jobMode"] == mode
        await cluster.until_condition("MXJob", "mx", "Running")

    run_cluster(server, body)


# --- item 8: the PyTorch init container ---------------------------------------------------


def _operator_options(*args: str) -> ManagerOptions:
    """The manager options ``trainop operator`` builds from these flags."""
    context = operator.make_context("operator", list(args))
    return config_from_flags(context.params).manager


def _init_containers(pods: dict[str, Obj]) -> list[Obj]:
    found: list[Obj] = pods["pt-worker-0"]["spec"].get("initContainers") or []
    return found


def test_pytorch_init_container_is_upstreams_default(server: RunningServer) -> None:
    """Upstream ``pytorch/initcontainer.go`` (v1.9 default template, max tries 100)."""
    options = _operator_options("--pytorch-init-container-template-file", "/nonexistent.yaml")

    async def body(cluster: Cluster) -> None:
        await cluster.create_job(manifest("PyTorchJob", name="pt"))
        pods = await cluster.until_pods("pt", 3)
        assert _init_containers(pods) == [
            {
                "name": "init-pytorch",
                "image": "alpine:3.10",
                "imagePullPolicy": "IfNotPresent",
                "resources": {
                    "limits": {"cpu": "100m", "memory": "20Mi"},
                    "requests": {"cpu": "50m", "memory": "10Mi"},
                },
                "command": [
                    "sh",
                    "-c",
                    "err=1;for i in $(seq 100); do if nslookup pt-master-0; then err=0 && break;"
                    " fi;echo waiting for master; sleep 2; done; exit $err",
                ],
                # the API server's defaults, as a cluster stores them
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
            }
        ]
        assert "initContainers" not in pods["pt-master-0"]["spec"]

    run_cluster(server, body, options=options)


# The restricted template Kubeflow's manifests mount with --pytorch-init-container-template-file.
RESTRICTED = """\
- name: init-pytorch
  image: {{.InitContainerImage}}
  imagePullPolicy: IfNotPresent
  command: ['sh', '-c', 'err=1;for i in $(seq {{.MaxTries}}); do if nslookup {{.MasterAddr}}; \
then err=0 && break; fi;echo waiting for master; sleep 2; done; exit $err']
  securityContext:
    allowPrivilegeEscalation: false
    runAsNonRoot: true
    runAsUser: 1000
"""


def test_pytorch_init_container_template_file_is_honoured(
    server: RunningServer, tmp_path: Path
) -> None:
    template = tmp_path / "initContainer.yaml"
    template.write_text(RESTRICTED)
    options = _operator_options(
        "--pytorch-init-container-template-file",
        str(template),
        "--pytorch-init-container-max-tries",
        "7",
        "--pytorch-init-container-image",
        "busybox:1.36",
    )

    async def body(cluster: Cluster) -> None:
        await cluster.create_job(manifest("PyTorchJob", name="pt"))
        pods = await cluster.until_pods("pt", 3)
        [init] = _init_containers(pods)
        assert init["image"] == "busybox:1.36"
        assert init["securityContext"] == {
            "allowPrivilegeEscalation": False,
            "runAsNonRoot": True,
            "runAsUser": 1000,
        }
        assert init["command"][2] == (
            "err=1;for i in $(seq 7); do if nslookup pt-master-0; then err=0 && break; fi;"
            "echo waiting for master; sleep 2; done; exit $err"
        )

    run_cluster(server, body, options=options)


def test_a_broken_init_container_template_stops_the_operator(tmp_path: Path) -> None:
    template = tmp_path / "initContainer.yaml"
    template.write_text("- name: x\n  image: {{.Image}}\n")
    with pytest.raises(errors.InvalidTemplateError, match="can't evaluate field Image"):
        _operator_options("--pytorch-init-container-template-file", str(template))


# --- item 13: controller-runtime's and client-go's metrics ----------------------------------


def _families(port: int) -> dict[str, list[Sample]]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    return {f.name: list(f.samples) for f in text_string_to_metric_families(text)}


def _value(families: dict[str, list[Sample]], sample: str, **labels: str) -> float | None:
    family = sample.removesuffix("_total").removesuffix("_count").removesuffix("_sum")
    for found in families.get(family, []):
        if found.name == sample and found.labels == labels:
            return float(found.value)
    return None


def _job_succeeded(api: k8s.ApiClient, namespace: str) -> bool:
    job = get_job(api, "pytorchjobs", "met", namespace)
    conditions = (job.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Succeeded" and c["status"] == "True" for c in conditions)


def _set_phase(api: k8s.ApiClient, namespace: str, phase: str) -> None:
    core = k8s.CoreV1Api(api)
    selector = "training.kubeflow.org/job-name=met"
    for pod in core.list_namespaced_pod(namespace, label_selector=selector).items:
        core.patch_namespaced_pod_status(pod.metadata.name, namespace, {"status": {"phase": phase}})


def test_operator_serves_controller_runtime_metrics(server: RunningServer, tmp_path: Path) -> None:
    """Names, labels and result values of controller-runtime v0.19
    (``pkg/internal/controller/metrics``) and client-go (``workqueue``, ``rest_client``), which
    upstream's ``/metrics`` serves beside its job counters (spec 11)."""
    api = api_client(server.kubeconfig)
    namespace = "metrics-fidelity"
    k8s.CoreV1Api(api).create_namespace({"metadata": {"name": namespace}})
    process = OperatorProcess(
        server.kubeconfig,
        *("--enable-scheme", "pytorchjob", "--namespace", namespace),
        *("--leader-elect", "--leader-election-namespace", namespace),
        log=tmp_path / "operator.log",
    )
    try:
        job = manifest("PyTorchJob", name="met")
        job["metadata"]["namespace"] = namespace
        custom(api).create_namespaced_custom_object(
            "kubeflow.org", "v1", namespace, "pytorchjobs", job
        )
        core = k8s.CoreV1Api(api)
        wait_for(
            lambda: len(core.list_namespaced_pod(namespace).items) == 3,
            timeout=30,
            what="three pods",
        )
        _set_phase(api, namespace, "Running")
        _set_phase(api, namespace, "Succeeded")
        wait_for(partial(_job_succeeded, api, namespace), timeout=30, what="Succeeded")
        controller = "pytorchjob-controller"

        def settled() -> dict[str, list[Sample]] | None:
            families = _families(process.metrics_port)
            gets = _value(families, "workqueue_queue_duration_seconds_count", name=controller)
            works = _value(families, "workqueue_work_duration_seconds_count", name=controller)
            return families if gets and gets == works else None

        families = wait_for(settled, timeout=30, what="every key handed out was done")
        results = {
            result: _value(
                families, "controller_runtime_reconcile_total", controller=controller, result=result
            )
            for result in ("success", "error", "requeue", "requeue_after")
        }
        assert None not in results.values(), results  # every result is served, from 0
        assert (results["success"] or 0) >= 1
        assert results["requeue"] == 0
        errors_total = _value(
            families, "controller_runtime_reconcile_errors_total", controller=controller
        )
        assert errors_total == results["error"]
        timed = _value(
            families, "controller_runtime_reconcile_time_seconds_count", controller=controller
        )
        assert timed == sum(v or 0 for v in results.values())
        gets = _value(families, "workqueue_queue_duration_seconds_count", name=controller)
        assert gets == timed
        adds = _value(families, "workqueue_adds_total", name=controller)
        assert adds is not None
        assert adds >= gets
        assert _value(families, "workqueue_depth", name=controller) == 0
        assert _value(families, "workqueue_retries_total", name=controller) == results["error"]
        for gauge in (
            "workqueue_unfinished_work_seconds",
            "workqueue_longest_running_processor_seconds",
        ):
            assert _value(families, gauge, name=controller) == 0
        assert (_value(families, "process_resident_memory_bytes") or 0) > 0
        lease = "1ca428e5.training-operator.kubeflow.org"
        assert _value(families, "leader_election_master_status", name=lease) == 1
        host = urllib.parse.urlsplit(
            yaml.safe_load(server.kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
        ).netloc
        pods_created = _value(
            families, "rest_client_requests_total", code="201", method="POST", host=host
        )
        assert pods_created is not None
        assert pods_created >= 3
        posts = _value(
            families, "rest_client_request_duration_seconds_count", verb="POST", host=host
        )
        assert posts is not None
        assert posts >= pods_created
        assert (
            _value(families, "rest_client_requests_total", code="200", method="GET", host=host) or 0
        ) >= 1
    finally:
        code = process.stop()
    assert code == 0, (tmp_path / "operator.log").read_text()[-2000:]


# --- item 11: backoffLimit counting (a deliberate departure, docs/migration.md) ---------------


def test_backoff_limit_is_the_number_of_retries_that_run(server: RunningServer) -> None:
    """docs/migration.md's table: ``backoffLimit: 2``, an OnFailure worker that crashes on every
    run. Upstream (spec 5.3: restarts of Running pods ``>= backoffLimit``) fails the job as the
    kubelet starts the third run (restartCount 2); trainop lets that retry run, and fails the
    job when a third retry would exceed the limit, as batch/v1 counts ``failed > backoffLimit``."""

    async def body(cluster: Cluster) -> None:
        spec = manifest("JAXJob", name="retry", runPolicy={"backoffLimit": 2})
        replica_spec(spec, "Worker").update(replicas=1, restartPolicy="OnFailure")
        annotate(spec, "Worker", run_seconds=10, exit_code=1)
        await cluster.create_job(spec)
        await cluster.until_pods("retry", 1, "Running")
        for run in (1, 2):
            await cluster.advance(10)  # run ``run`` crashes
            await cluster.advance(5)  # the kubelet starts the next run in place
            pods = await cluster.until_pods("retry", 1, "Running")
            restarts = pods["retry-worker-0"]["status"]["containerStatuses"][0]["restartCount"]
            assert restarts == run
            job = await cluster.job_now("JAXJob", "retry")
            assert condition(job, "Failed") is None, f"upstream fails here: {restarts} >= 2"
        await cluster.advance(10)  # the third run crashes: a third retry would exceed 2
        await cluster.advance(5)
        failed = await cluster.until_condition("JAXJob", "retry", "Failed")
        assert condition_on(failed, "Failed")["message"] == (
            "Job retry has failed because it has reached the specified backoff limit"
        )

    run_cluster(server, body)
