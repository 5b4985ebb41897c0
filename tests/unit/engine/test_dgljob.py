"""DGLJob's golden cases (dgljob-spec.md section 5) as plans: the objects trainop creates.

G1 (``examples/v1alpha1/GraphSAGE_dist.yaml``): the first reconcile, the workers after the
partitioner Succeeded, the files once the pods have IPs. G3 (``GraphSAGE.yaml``, Skip): the
launcher alone. G4 (the controller test): the stage order, as conditions and Normal events. G5
(``DGL-KE.yaml``): cleanPodPolicy's default Running deletes the running workers on success. IPs
are placeholders (the spec's); the kubelet is played by ``support.apply_plan`` and ``_moved``.
"""

from __future__ import annotations

from typing import Any

from support import NOW, apply_plan, run, with_phase

from trainop.api.manifest import parse_job
from trainop.api.types import Job
from trainop.engine.actions import Create, Delete, Plan, Update
from trainop.engine.observed import Observed, name_of
from trainop.engine.plan import EngineOptions
from trainop.frameworks.options import FrameworkOptions
from trainop.frameworks.topology import ClusterTopology, LoopbackTopology, ip_address

IMAGE = "dgloperator/graphsage:v0.1.0"
DGLRUN_ARGS = [
    "--graph-name", "graphsage", "--partition-entry-point", "code/load_and_partition_graph.py",
    "--num-partitions", "2", "--balance-train", "--balance-edges",
    "--dataset-url", "http://example.org/ogbn-products.zip",
    "--train-entry-point", "code/train_dist.py", "--num-epochs", "1", "--batch-size", "1000",
    "--num-trainers", "1", "--num-samplers", "4", "--num-servers", "1",
]  # fmt: skip
WORKER = {"cpu": "10", "memory": "20Gi"}


def dgl_job(name: str, *, workers: int = 2, mode: str | None = "DGL-API", **spec: Any) -> Job:
    launcher = {"name": "dgl", "image": IMAGE, "command": ["dglrun"], "args": DGLRUN_ARGS}
    worker = {"name": "dgl", "image": IMAGE, "resources": {"limits": WORKER, "requests": WORKER}}
    specs: dict[str, Any] = {
        "Launcher": {"replicas": 1, "template": {"spec": {"containers": [launcher]}}}
    }
    if workers:
        specs["Worker"] = {"replicas": workers, "template": {"spec": {"containers": [worker]}}}
    body = {"cleanPodPolicy": "Running", "dglReplicaSpecs": specs, **spec}
    if mode is not None:
        body["partitionMode"] = mode
    metadata = {"name": name, "namespace": "dgl-operator", "uid": "uid-1"}
    return parse_job(
        {"apiVersion": "kubeflow.org/v1", "kind": "DGLJob", "metadata": metadata, "spec": body}
    )


def created(result: Plan, kind: str | None = None) -> dict[str, dict[str, Any]]:
    return {
        a.name: a.body
        for a in result.actions
        if isinstance(a, Create) and (kind is None or a.kind == kind)
    }


def _moved(observed: Observed, name: str, phase: str, ip: str, code: int | None = None) -> Observed:
    """What the kubelet reports: ``name`` in ``phase`` with IP ``ip``."""
    pods = []
    for pod in observed.pods:
        if name_of(pod) == name:
            pod = with_phase(pod, phase, exit_code=code)
            pod["status"]["podIP"] = ip
        pods.append(pod)
    return Observed(tuple(pods), observed.services, observed.pod_group, observed.objects)


def env_of(pod: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in pod["spec"]["containers"][0].get("env") or []}


def test_g1_first_reconcile_config_rbac_launcher_and_partitioner() -> None:
    result = run(dgl_job("dgl-graphsage"))
    kinds = [(a.body["kind"], a.name) for a in result.actions if isinstance(a, Create)]
    each = ("ServiceAccount", "Role", "RoleBinding", "Pod")
    assert sorted(kinds) == sorted([
        ("ConfigMap", "dgl-graphsage-config"),
        *((k, "dgl-graphsage-launcher") for k in each),
        *((k, "dgl-graphsage-partitioner") for k in each),
    ])  # fmt: skip
    objects = {(a.body["kind"], a.name): a.body for a in result.actions if isinstance(a, Create)}
    config = objects["ConfigMap", "dgl-graphsage-config"]
    assert set(config["data"]) == {"kubexec.sh", "hostfile", "partfile", "leadfile"}
    assert config["data"]["kubexec.sh"] == (
        "#!/bin/sh\nset -x\nPOD_NAME=$1; shift\n"
        '/opt/kube/kubectl exec ${POD_NAME} -- /bin/sh -c "$*"'
    )
    assert [config["data"][k] for k in ("hostfile", "partfile", "leadfile")] == ["", "", ""]
    assert config["metadata"]["labels"]["app"] == "dgl-graphsage"
    exec_rule = {"apiGroups": [""], "resources": ["pods/exec"], "verbs": ["create"]}
    assert objects["Role", "dgl-graphsage-launcher"]["rules"][1] == {
        **exec_rule, "resourceNames": ["dgl-graphsage-worker-0", "dgl-graphsage-worker-1"]
    }  # fmt: skip
    assert objects["Role", "dgl-graphsage-partitioner"]["rules"][1] == {
        **exec_rule, "resourceNames": ["dgl-graphsage-launcher"]
    }  # fmt: skip

    launcher = objects["Pod", "dgl-graphsage-launcher"]
    assert [c["name"] for c in launcher["spec"]["initContainers"]] == [
        "kubectl-download", "watcher-loop-partitioner", "watcher-loop-worker"
    ]  # fmt: skip
    assert launcher["spec"]["serviceAccountName"] == "dgl-graphsage-launcher"
    assert env_of(launcher) == {
        "DGL_OPERATOR_KUBEXEC_PATH": "/etc/dgl/kubexec.sh",
        "DGL_OPERATOR_HOSTFILE_PATH": "/etc/dgl/hostfile",
        "DGL_OPERATOR_KUBECTL_PATH": "/opt/kube/kubectl",
        "DGL_OPERATOR_ENV": "1",
    }
    assert launcher["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"cpu": "1", "memory": "2Gi"}
    }  # fmt: skip
    assert launcher["metadata"]["labels"]["dgl-replica-name"] == "dgl-graphsage-launcher"
    assert launcher["metadata"]["labels"]["training.kubeflow.org/job-role"] == "master"
    assert launcher["metadata"]["annotations"] == {"dgl-replica": "Launcher"}
    mounts = {m["name"]: m["mountPath"] for m in launcher["spec"]["containers"][0]["volumeMounts"]}
    assert mounts == {
        "kube-volume": "/opt/kube",
        "config-volume": "/etc/dgl",
        "dataset-volume": "/dgl_workspace/dataset",
    }
    config_volume = next(v for v in launcher["spec"]["volumes"] if v["name"] == "config-volume")
    assert [(i["key"], i["mode"]) for i in config_volume["configMap"]["items"]] == [
        ("kubexec.sh", 0o555), ("hostfile", 0o444), ("partfile", 0o444)
    ]  # fmt: skip

    partitioner = objects["Pod", "dgl-graphsage-partitioner"]
    first = partitioner["spec"]["containers"][0]
    assert (first["command"], first["args"]) == (["dglrun"], DGLRUN_ARGS), "the launcher's"
    assert first["resources"] == {"limits": WORKER, "requests": WORKER}, "the Worker template"
    assert "ports" not in first
    assert env_of(partitioner) == {"DGL_OPERATOR_ENV": "1", "DGL_OPERATOR_PHASE_ENV": "Partitioner"}
    assert [c["name"] for c in partitioner["spec"]["initContainers"]] == ["kubectl-download"]
    assert partitioner["spec"]["serviceAccountName"] == "dgl-graphsage-partitioner"
    assert partitioner["spec"]["restartPolicy"] == "Never"
    shm = next(v for v in partitioner["spec"]["volumes"] if v["name"] == "shm-volume")
    assert shm == {"name": "shm-volume", "emptyDir": {"medium": "Memory", "sizeLimit": "10G"}}
    assert "training.kubeflow.org/replica-index" not in partitioner["metadata"]["labels"]


def test_g1_workers_and_services_once_the_partitioner_succeeded_then_the_files() -> None:
    job = dgl_job("dgl-graphsage")
    job, observed = apply_plan(job, Observed(), run(job))
    observed = _moved(observed, "dgl-graphsage-launcher", "Pending", "10.1.0.2")
    observed = _moved(observed, "dgl-graphsage-partitioner", "Running", "10.1.0.3")
    partitioning = run(job, observed)
    assert created(partitioning) == {}, "no worker while the partitioner runs"
    job, observed = apply_plan(job, observed, partitioning)

    observed = _moved(observed, "dgl-graphsage-partitioner", "Succeeded", "10.1.0.3", 0)
    result = run(job, observed)
    pods, services = created(result, "Pod"), created(result, "Service")
    assert set(pods) == set(services) == {"dgl-graphsage-worker-0", "dgl-graphsage-worker-1"}
    worker = pods["dgl-graphsage-worker-0"]
    assert worker["spec"]["containers"][0]["command"] == ["sleep"]
    assert worker["spec"]["containers"][0]["args"] == ["365d"]
    assert env_of(worker) == {"DGL_OPERATOR_ENV": "1"}
    assert not worker["spec"].get("initContainers")
    assert services["dgl-graphsage-worker-1"]["spec"]["clusterIP"] == "None"

    job, observed = apply_plan(job, observed, result)
    for index, ip in enumerate(("10.1.0.11", "10.1.0.12")):
        observed = _moved(observed, f"dgl-graphsage-worker-{index}", "Running", ip)
    files = next(a.body for a in run(job, observed).actions if isinstance(a, Update))["data"]
    assert files["hostfile"] == (
        "10.1.0.11 30050 dgl-graphsage-worker-0 slots=1\n"
        "10.1.0.12 30050 dgl-graphsage-worker-1 slots=1\n"
    )
    assert files["partfile"] == "10.1.0.3 30050 dgl-graphsage-partitioner\n"
    assert files["leadfile"] == "10.1.0.2 30050 dgl-graphsage-launcher\n"


def test_the_hostfile_waits_for_every_worker_ip() -> None:
    """The Qihoo operator lists an unscheduled worker with an empty IP (a leading space):
    trainop writes the hostfile once it is complete, so dglrun never reads half of it."""
    job = dgl_job("half", slotsPerWorker=4)
    job, observed = apply_plan(job, Observed(), run(job))
    observed = _moved(observed, "half-partitioner", "Succeeded", "10.1.0.3", 0)
    job, observed = apply_plan(job, observed, run(job, observed))
    observed = _moved(observed, "half-worker-1", "Running", "10.1.0.12")
    result = run(job, observed)
    assert not [a for a in result.actions if isinstance(a, Update)], "hostfile still empty"
    observed = _moved(observed, "half-worker-0", "Running", "10.1.0.11")
    files = next(a.body for a in run(job, observed).actions if isinstance(a, Update))["data"]
    assert files["hostfile"].splitlines() == [
        "10.1.0.11 30050 half-worker-0 slots=4", "10.1.0.12 30050 half-worker-1 slots=4"
    ]  # fmt: skip


def test_local_topology_gives_loopback_addresses_and_allocated_ports() -> None:
    """Through the Topology seam: a loopback topology's IP and the worker's own port."""
    from trainop.engine.plan import plan
    from trainop.frameworks.registry import framework_for

    job = dgl_job("local", workers=1)
    ports = {"local-launcher-0": 40001, "local-worker-0": 40002}
    topology = LoopbackTopology(ports=ports)
    options = EngineOptions(frameworks=FrameworkOptions(container_root="$(TRAINOP_ROOT)"))
    result = plan(job, Observed(), framework_for("DGLJob"), topology, NOW, options=options)
    files = created(result, "ConfigMap")["local-config"]["data"]
    # Known before the worker exists (the address does not come from the pod): complete.
    assert files["hostfile"] == "127.0.0.1 40002 local-worker-0 slots=1\n"
    assert files["leadfile"] == "127.0.0.1 30050 local-launcher\n"
    assert files["partfile"] == "127.0.0.1 30050 local-partitioner\n"
    launcher = created(result, "Pod")["local-launcher"]
    assert env_of(launcher)["DGL_OPERATOR_HOSTFILE_PATH"] == "$(TRAINOP_ROOT)/etc/dgl/hostfile"


def test_ip_address_takes_the_topologys_ip_else_the_pods() -> None:
    job = dgl_job("ips", workers=1)
    pod_ips = {"ips-worker-0": "10.0.0.7"}
    cluster, loopback = ClusterTopology(), LoopbackTopology(ports={}, address="127.0.0.1")
    found = ip_address(cluster, job=job, replica_type="Worker", index=0, pod_ips=pod_ips)
    assert found == "10.0.0.7"
    assert ip_address(cluster, job=job, replica_type="Worker", index=0, pod_ips={}) is None
    assert ip_address(loopback, job=job, replica_type="Worker", index=0, pod_ips={}) == "127.0.0.1"


def test_g3_skip_runs_the_launcher_alone_and_succeeds() -> None:
    job = dgl_job("dgl-graphsage", workers=0, mode="Skip")
    result = run(job)
    objects = {(a.body["kind"], a.name) for a in result.actions if isinstance(a, Create)}
    assert objects == {
        ("ConfigMap", "dgl-graphsage-config"),
        *((k, "dgl-graphsage-launcher") for k in ("ServiceAccount", "Role", "RoleBinding", "Pod")),
    }
    role = created(result, "Role")["dgl-graphsage-launcher"]
    assert role["rules"][1]["resourceNames"] == [], "the spec's G3: no worker to exec into"
    launcher = created(result, "Pod")["dgl-graphsage-launcher"]
    assert env_of(launcher) == {"DGL_OPERATOR_PHASE_ENV": "Launcher_Workload"}
    assert not launcher["spec"].get("initContainers")
    assert launcher["spec"]["containers"][0]["resources"]["limits"] == {"cpu": "1", "memory": "2Gi"}
    job, observed = apply_plan(job, Observed(), result)
    observed = _moved(observed, "dgl-graphsage-launcher", "Succeeded", "10.1.0.2", 0)
    done = run(job, observed)
    assert [c.type for c in done.status.conditions or () if c.status == "True"] == [
        "Created", "Succeeded"
    ]  # fmt: skip


def _reasons(result: Plan) -> list[str]:
    return [e.reason for e in result.events]


def test_g4_stage_order_as_conditions_and_events() -> None:
    """Partitioning (partitioner 1 running), Partitioned (succeeded), Training (launcher and
    both workers running), then Succeeded (launcher succeeded): no lag, no flicker."""
    job = dgl_job("dgl-test-job", mode=None)
    job, observed = apply_plan(job, Observed(), run(job))
    observed = _moved(observed, "dgl-test-job-partitioner", "Running", "10.1.0.3")
    step = run(job, observed)
    assert _reasons(step)[-2:] == ["DGLJobRunning", "DGLJobPartitioning"]
    job, observed = apply_plan(job, observed, step)
    observed = _moved(observed, "dgl-test-job-partitioner", "Succeeded", "10.1.0.3", 0)
    step = run(job, observed)
    assert "DGLJobPartitioned" in _reasons(step)
    assert "DGLJobTraining" not in _reasons(step)
    job, observed = apply_plan(job, observed, step)
    for index in range(2):
        observed = _moved(observed, f"dgl-test-job-worker-{index}", "Running", f"10.1.0.1{index}")
    observed = _moved(observed, "dgl-test-job-launcher", "Running", "10.1.0.2")
    step = run(job, observed)
    assert _reasons(step) == ["DGLJobTraining"]
    counts = step.status.replica_statuses or {}
    assert (counts["Partitioner"].succeeded, counts["Worker"].active) == (1, 2)
    job, observed = apply_plan(job, observed, step)
    assert _reasons(run(job, observed)) == [], "each stage once"
    observed = _moved(observed, "dgl-test-job-launcher", "Succeeded", "10.1.0.2", 0)
    done = run(job, observed)
    assert "DGLJobSucceeded" in _reasons(done)
    counts = done.status.replica_statuses or {}
    assert counts["Launcher"].succeeded == 1


def test_a_partitioner_that_fails_fails_the_job_and_no_worker_is_created() -> None:
    job = dgl_job("broken")
    job, observed = apply_plan(job, Observed(), run(job))
    observed = _moved(observed, "broken-partitioner", "Failed", "10.1.0.3", 1)
    result = run(job, observed)
    failed = next(c for c in result.status.conditions or () if c.type == "Failed")
    assert (failed.reason, failed.message) == (
        "DGLJobFailed", "DGLJob broken is failed because 1 Partitioner replica(s) failed."
    )  # fmt: skip
    assert created(result, "Pod") == {}
    assert Delete("v1", "Pod", "broken-launcher") in result.actions, "cleanPodPolicy Running"


def test_a_partitioner_and_launcher_that_finish_together_start_no_worker() -> None:
    """The job finishes in the pass that would open the gate: no worker is created."""
    job = dgl_job("quick")
    job, observed = apply_plan(job, Observed(), run(job))
    observed = _moved(observed, "quick-partitioner", "Succeeded", "10.1.0.3", 0)
    observed = _moved(observed, "quick-launcher", "Succeeded", "10.1.0.2", 0)
    result = run(job, observed)
    assert created(result, "Pod") == {}
    assert created(result, "Service") == {}


def test_g5_success_deletes_the_running_workers_and_keeps_the_rest() -> None:
    """DGL-KE: cleanPodPolicy defaulted to Running; mode defaulted to DGL-API."""
    job = dgl_job("dgl-complex", mode=None)
    job = job.model_copy(update={"spec": job.spec.model_copy(update={"clean_pod_policy": None})})
    job, observed = apply_plan(job, Observed(), run(job))
    observed = _moved(observed, "dgl-complex-partitioner", "Succeeded", "10.1.0.3", 0)
    job, observed = apply_plan(job, observed, run(job, observed))
    for index in range(2):
        observed = _moved(observed, f"dgl-complex-worker-{index}", "Running", f"10.1.0.1{index}")
    observed = _moved(observed, "dgl-complex-launcher", "Succeeded", "10.1.0.2", 0)
    result = run(job, observed)
    deleted = {a.name for a in result.actions if isinstance(a, Delete) and a.kind == "Pod"}
    assert deleted == {"dgl-complex-worker-0", "dgl-complex-worker-1"}


def test_gang_scheduling_counts_the_pods_of_the_first_phase() -> None:
    options = EngineOptions(gang_scheduler_name="scheduler-plugins")
    result = run(dgl_job("gang"), options=options)
    group = next(a.body for a in result.actions if isinstance(a, Create) and a.kind == "PodGroup")
    assert group["spec"]["minMember"] == 2, "launcher and partitioner: workers come later"
    assert group["spec"]["minResources"] == WORKER, "the partitioner's (the launcher has none)"
