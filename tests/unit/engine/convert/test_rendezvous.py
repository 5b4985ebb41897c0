"""Each pod of a converted job gets the rendezvous facts its script reads under v1 (v1 spec 7.2,
7.3, 7.6; MPI: the hostfile of trainer-v2-spec 3.5): world size, its own rank, and a master
address that names the rank-0 pod. The pods are the planner's JobSet expanded as JobSet and the
Job controller would (``jobset_pods``), each process's env read after its shell prologue ran."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from tests.unit.engine.convert import jobset_pods
from tests.unit.engine.convert.support import example_jobs, planned_jobset, replicas

Wire = dict[str, Any]


def _jobs(kind: str) -> list[tuple[str, Wire]]:
    return [(name, job) for name, job in example_jobs() if job["kind"] == kind]


def _processes(jobset: Wire, tmp_path: Path) -> list[tuple[jobset_pods.Pod, dict[str, str]]]:
    """(pod, env of its first container's process) for every pod of the JobSet."""
    found = []
    for n, pod in enumerate(jobset_pods.expand(jobset)):
        where = tmp_path / str(n)
        where.mkdir()
        found.append((pod, jobset_pods.process_env(pod, pod.body["spec"]["containers"][0], where)))
    return found


def _port(job: Wire, replica_type: str, port_name: str, default: int) -> int:
    field = next(k for k in job["spec"] if k.endswith("ReplicaSpecs"))
    for container in job["spec"][field][replica_type]["template"]["spec"]["containers"]:
        for port in container.get("ports", []):
            if port.get("name") == port_name:
                return int(port["containerPort"])
    return default


TORCH = [(n, j) for n, j in _jobs("PyTorchJob") if "Master" in j["spec"]["pytorchReplicaSpecs"]]


@pytest.mark.parametrize(("name", "job"), TORCH, ids=[n for n, _ in TORCH])
def test_pytorch_pods_get_world_size_rank_and_the_rank0_master(
    name: str, job: Wire, tmp_path: Path
) -> None:
    _, jobset, _ = planned_jobset(job)
    counts = replicas(job)
    nproc = str(job["spec"].get("nprocPerNode", "auto"))
    world = sum(counts.values()) * (int(nproc) if nproc.isdigit() else 1)
    seen = _processes(jobset, tmp_path)
    assert len(seen) == sum(counts.values())
    ranks = {}
    for pod, env in seen:
        expected_rank = (
            pod.index if pod.replicated_job == "master" else pod.index + counts["Master"]
        )
        assert env["RANK"] == env["PET_NODE_RANK"] == str(expected_rank)
        assert env["WORLD_SIZE"] == str(world)
        port = _port(job, "Master", "pytorchjob-port", 23456)
        assert env["MASTER_PORT"] == env["PET_MASTER_PORT"] == str(port)
        ranks[expected_rank] = pod
    rank0 = ranks[0].fqdn
    assert rank0 == f"{job['metadata']['name']}-master-0-0.{job['metadata']['name']}"
    assert {env["MASTER_ADDR"] for _, env in seen} == {rank0}
    assert sorted(ranks) == list(range(sum(counts.values())))


ELASTIC = [(n, j) for n, j in _jobs("PyTorchJob") if "elasticPolicy" in j["spec"]]


@pytest.mark.parametrize(("name", "job"), ELASTIC, ids=[n for n, _ in ELASTIC])
def test_elastic_pytorch_pods_rendezvous_at_worker_0(name: str, job: Wire, tmp_path: Path) -> None:
    _, jobset, _ = planned_jobset(job)
    seen = _processes(jobset, tmp_path)
    worker0 = next(pod for pod, _ in seen if pod.replicated_job == "worker" and pod.index == 0)
    policy = job["spec"]["elasticPolicy"]
    port = _port(job, "Worker", "pytorchjob-port", 23456)
    for _, env in seen:
        assert env["PET_RDZV_ENDPOINT"] == f"{worker0.fqdn}:{port}"
        assert env["PET_NNODES"] == f"{policy['minReplicas']}:{policy['maxReplicas']}"


XGBOOST = _jobs("XGBoostJob")


@pytest.mark.parametrize(("name", "job"), XGBOOST, ids=[n for n, _ in XGBOOST])
def test_xgboost_pods_get_world_size_rank_master_and_workers(
    name: str, job: Wire, tmp_path: Path
) -> None:
    _, jobset, _ = planned_jobset(job)
    counts = replicas(job)
    seen = _processes(jobset, tmp_path)
    world = sum(counts.values())
    workers = [pod.fqdn for pod, _ in seen if pod.replicated_job == "worker"]
    master = next(pod for pod, env in seen if env["RANK"] == "0")
    assert master.replicated_job == "master"
    assert master.index == 0
    for pod, env in seen:
        offset = 0 if pod.replicated_job == "master" else counts["Master"]
        assert env["RANK"] == str(pod.index + offset)
        assert env["WORLD_SIZE"] == str(world)
        assert env["MASTER_ADDR"] == master.fqdn
        assert env["MASTER_PORT"] == str(_port(job, "Master", "xgboostjob-port", 9999))
        assert env["WORKER_ADDRS"].split(",") == workers[: world - 1]
    assert sorted(int(env["RANK"]) for _, env in seen) == list(range(world))


JAX = _jobs("JAXJob")


@pytest.mark.parametrize(("name", "job"), JAX, ids=[n for n, _ in JAX])
def test_jax_pods_get_process_count_id_and_the_coordinator(
    name: str, job: Wire, tmp_path: Path
) -> None:
    _, jobset, _ = planned_jobset(job)
    seen = _processes(jobset, tmp_path)
    total = sum(replicas(job).values())
    coordinator = next(pod for pod, env in seen if env["PROCESS_ID"] == "0")
    for pod, env in seen:
        assert env["PROCESS_ID"] == str(pod.index)
        assert env["NUM_PROCESSES"] == str(total)
        assert env["COORDINATOR_ADDRESS"] == coordinator.fqdn
        assert env["COORDINATOR_PORT"] == str(_port(job, "Worker", "jaxjob-port", 6666))
    assert coordinator.fqdn == f"{job['metadata']['name']}-worker-0-0.{job['metadata']['name']}"
    assert sorted(int(env["PROCESS_ID"]) for _, env in seen) == list(range(total))


MPI = _jobs("MPIJob")


@pytest.mark.parametrize(("name", "job"), MPI, ids=[n for n, _ in MPI])
def test_mpi_launcher_gets_a_hostfile_of_every_worker_pod(
    name: str, job: Wire, tmp_path: Path
) -> None:
    conversion, jobset, objects = planned_jobset(job)
    pods = jobset_pods.expand(jobset)
    slots = job["spec"].get("slotsPerWorker", 1)
    workers = [pod.fqdn for pod in pods if pod.replicated_job == "node"]
    assert len(workers) == replicas(job)["Worker"]
    hostfile = next(
        o for o in objects if o["kind"] == "ConfigMap" and "hostfile" in o.get("data", {})
    )
    assert hostfile["data"]["hostfile"] == "".join(f"{w} slots={slots}\n" for w in workers)
    (launcher,) = [pod for pod in pods if pod.replicated_job == "launcher"]
    container = launcher.body["spec"]["containers"][0]
    env = jobset_pods.process_env(launcher, container, tmp_path)
    assert env["OMPI_MCA_orte_default_hostfile"] == "/etc/mpi/hostfile"
    assert {"name": "mpi-hostfile", "mountPath": "/etc/mpi"} in container["volumeMounts"]
    command = container["command"] + container.get("args", [])
    np = next((int(command[i + 1]) for i, w in enumerate(command) if re.fullmatch("-np?", w)), None)
    assert np is None or np <= len(workers) * slots  # the world mpirun asks for fits the hosts
    depends = {rj["name"]: rj.get("dependsOn") for rj in jobset["spec"]["replicatedJobs"]}
    assert depends["launcher"] == [{"name": "node", "status": "Ready"}]
    assert conversion.runtime["spec"]["mlPolicy"]["mpi"]["numProcPerNode"] == slots


TF = [(n, j) for n, j in _jobs("TFJob") if sum(replicas(j).values()) > 1]


@pytest.mark.parametrize(("name", "job"), TF, ids=[n for n, _ in TF])
def test_tf_config_names_every_pod_and_the_pods_own_task(
    name: str, job: Wire, tmp_path: Path
) -> None:
    _, jobset, _ = planned_jobset(job)
    seen = _processes(jobset, tmp_path)
    port = {rt: _port(job, rt, "tfjob-port", 2222) for rt in replicas(job)}
    cluster = {
        rt.lower(): [f"{p.fqdn}:{port[rt]}" for p, _ in seen if p.replicated_job == rt.lower()]
        for rt in replicas(job)
    }
    for pod, env in seen:
        config = json.loads(env["TF_CONFIG"])
        assert config["task"] == {"type": pod.replicated_job, "index": pod.index}
        assert config["cluster"] == cluster


def test_paddle_collective_master_is_worker_0_and_its_own_ip_there(tmp_path: Path) -> None:
    (job,) = [j for n, j in _jobs("PaddleJob") if "collective" in n]
    _, jobset, _ = planned_jobset(job)
    port = _port(job, "Worker", "master", 36543)
    seen = _processes(jobset, tmp_path)
    worker0 = next(pod for pod, _ in seen if pod.index == 0)
    for pod, env in seen:
        expected = "10.1.0.7" if pod.index == 0 else worker0.fqdn  # the pod's own IP (stub node)
        assert env["PADDLE_MASTER"] == f"{expected}:{port}"
        assert env["PADDLE_NNODES"] == str(sum(replicas(job).values()))
