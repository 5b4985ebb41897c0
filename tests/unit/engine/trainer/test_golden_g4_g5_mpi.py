"""Golden cases G4 (OpenMPI, separate launcher) and G5 (``runLauncherAsNode``) of the Trainer
v2 spec §8; expected values typed from the spec."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from tests.unit.engine.trainer.builders import (
    PRIVATE,
    PUBLIC,
    R,
    applied,
    container,
    env_by_name,
    job,
    keys,
    main_container,
    owner,
    pod_of,
    replicated,
    run,
    runtime,
    trainjob,
    wrapper_jobs,
)

from trainop.engine.trainer.info import build_info
from trainop.engine.trainer.plan import Observed
from trainop.engine.trainer.plugins import mpi
from trainop.engine.trainer.plugins.base import BuildContext

SSH_VOLUME = {
    "name": "mpi-ssh-auth",
    "secret": {
        "secretName": "alpha-mpi-ssh-auth",
        "defaultMode": 0o400,
        "items": [
            {"key": "ssh-privatekey", "path": "id_rsa", "mode": 0o640},
            {"key": "ssh-publickey", "path": "id_rsa.pub", "mode": 0o644},
            {"key": "ssh-publickey", "path": "authorized_keys", "mode": 0o644},
        ],
    },
}
HOSTFILE_VOLUME = {
    "name": "mpi-hostfile",
    "configMap": {
        "name": "alpha-mpi-hostfile",
        "items": [{"key": "hostfile", "path": "hostfile", "mode": 0o444}],
    },
}
OMPI = {
    "OMPI_MCA_orte_default_hostfile": "/etc/mpi/hostfile",
    "OMPI_MCA_orte_keep_fqdn_hostnames": "true",
    "OMPI_MCA_orte_set_default_slots": "8",
    "OMPI_MCA_plm_rsh_args": "-o ConnectionAttempts=10",
}


def g4_runtime(slots: int) -> dict[str, Any]:
    jobs = wrapper_jobs(resources={"requests": R})
    launcher = job(
        "launcher",
        None,
        container("node", image="test:runtime", command=["mpirun"], args=["echo.sh"]),
        job={"replicas": 1, "dependsOn": [{"name": "node", "status": "Ready"}]},
    )
    jobs.insert(2, launcher)
    policy = {
        "numNodes": 1,
        "mpi": {
            "numProcPerNode": slots,
            "mpiImplementation": "OpenMPI",
            "sshAuthMountPath": "/root/.ssh",
            "runLauncherAsNode": False,
        },
    }
    return runtime("alpha", jobs, ml_policy=policy)


def g4_trainjob(**trainer: Any) -> dict[str, Any]:
    spec = {
        "numNodes": 2,
        "image": "test:trainjob",
        "resourcesPerNode": {"requests": R},
        "env": [{"name": "TRAIN_JOB", "value": "value"}],
        **trainer,
    }
    return trainjob("alpha", "alpha", trainer=spec)


@pytest.mark.parametrize(
    ("case", "slots", "trainer"),
    [
        ("runtime slots 8", 8, {}),
        ("TrainJob numProcPerNode 8 over runtime 1", 1, {"numProcPerNode": 8}),
    ],
)
def test_g4_openmpi(case: str, slots: int, trainer: dict[str, Any]) -> None:
    result = run(g4_trainjob(**trainer), g4_runtime(slots))
    jobset = applied(result, "JobSet")
    for name, count in (("launcher", 1), ("node", 2)):
        spec = replicated(jobset, name)["template"]["spec"]
        assert (spec["parallelism"], spec["completions"]) == (count, count), case
    launcher_pod = pod_of(jobset, "launcher")["spec"]
    assert launcher_pod["volumes"] == [SSH_VOLUME, HOSTFILE_VOLUME]
    launcher = main_container(jobset, "launcher")
    assert {m["mountPath"] for m in launcher["volumeMounts"]} == {"/root/.ssh", "/etc/mpi"}
    assert env_by_name(launcher) == OMPI
    node_pod = pod_of(jobset, "node")["spec"]
    assert SSH_VOLUME in node_pod["volumes"]
    assert HOSTFILE_VOLUME not in node_pod["volumes"]
    node = main_container(jobset, "node")
    assert {"name": "mpi-ssh-auth", "mountPath": "/root/.ssh"} in node["volumeMounts"]
    assert env_by_name(node) == {"TRAIN_JOB": "value"}
    hostfile = next(o for o in result.apply if o["metadata"]["name"] == "alpha-mpi-hostfile")
    assert hostfile["data"] == {
        "hostfile": "alpha-node-0-0.alpha slots=8\nalpha-node-0-1.alpha slots=8\n"
    }
    assert hostfile["metadata"]["ownerReferences"] == [owner()]
    secret = applied(result, "Secret")
    assert secret["metadata"]["name"] == "alpha-mpi-ssh-auth"
    assert secret["type"] == "kubernetes.io/ssh-auth"
    assert secret["immutable"] is True
    assert set(secret["data"]) == {"ssh-privatekey", "ssh-publickey"}
    assert base64.b64decode(secret["data"]["ssh-publickey"]).decode() == PUBLIC


def test_g4_secret_is_applied_only_while_absent_and_the_hostfile_every_pass() -> None:
    existing = {"metadata": {"name": "alpha-mpi-ssh-auth"}, "data": {}}
    result = run(g4_trainjob(), g4_runtime(8), Observed(mpi_secret=existing))
    assert [o["kind"] for o in result.apply if o["kind"] == "Secret"] == []
    assert any(o["metadata"]["name"] == "alpha-mpi-hostfile" for o in result.apply)


def test_g5_run_launcher_as_node() -> None:
    rt = runtime(
        "mpi",
        [
            job("launcher", None, container("node", image="img")),
            job("node", "trainer", container("node", image="img")),
        ],
        ml_policy={
            "mpi": {
                "numProcPerNode": 1,
                "sshAuthMountPath": "/root/.ssh",
                "runLauncherAsNode": True,
            }
        },
    )
    tj = trainjob("trainJob", "mpi", trainer={"numNodes": 10})
    info = build_info(tj, rt)
    launcher, node = info.pod_set("launcher"), info.pod_set("node")
    assert launcher is not None
    assert node is not None
    launcher.fixed_endpoints = ("trainJob-launcher-0-0.trainJob",)
    node.fixed_endpoints = ("trainJob-node-1-0.trainJob",)
    mpi.enforce(info)
    assert (node.count, launcher.count) == (9, 1)
    assert [v["name"] for v in launcher.volumes] == ["mpi-ssh-auth", "mpi-hostfile"]
    assert [m["mountPath"] for m in launcher.containers[0]["volumeMounts"]] == [
        "/root/.ssh",
        "/etc/mpi",
    ]
    assert env_by_name(launcher.containers[0]) == {**OMPI, "OMPI_MCA_orte_set_default_slots": "1"}
    assert [v["name"] for v in node.volumes] == ["mpi-ssh-auth"]
    assert node.containers[0]["volumeMounts"] == [
        {"name": "mpi-ssh-auth", "mountPath": "/root/.ssh"}
    ]
    assert "env" not in node.containers[0]
    context = BuildContext(jobset=None, pod_groups={}, mpi_secret=None, new_ssh_keys=keys)
    objects = mpi.build(info, context)
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("Secret", "trainJob-mpi-ssh-auth"),
        ("ConfigMap", "trainJob-mpi-hostfile"),
    ]
    assert base64.b64decode(objects[0]["data"]["ssh-privatekey"]).decode() == PRIVATE
    assert objects[1]["data"]["hostfile"] == (
        "trainJob-launcher-0-0.trainJob slots=1\ntrainJob-node-1-0.trainJob slots=1\n"
    )


def test_deepspeed_shape_with_four_nodes() -> None:
    """§4: ``deepspeed-distributed`` with ``numNodes: 4`` — ``node`` runs 3 pods, the launcher 1,
    and the hostfile lists the three nodes, then the launcher; only the launcher gets the
    TrainJob's image, both get its env."""
    node = job(
        "node",
        None,
        container("node", image="deepspeed-runtime", command=["/usr/sbin/sshd"]),
        pod={"securityContext": {"fsGroup": 1000}},
    )
    launcher = job(
        "launcher",
        "trainer",
        container("node", image="deepspeed-runtime"),
        job={"dependsOn": [{"name": "node", "status": "Ready"}]},
    )
    policy = {
        "numNodes": 1,
        "mpi": {
            "numProcPerNode": 1,
            "mpiImplementation": "OpenMPI",
            "sshAuthMountPath": "/home/mpiuser/.ssh",
            "runLauncherAsNode": True,
        },
    }
    rt = runtime(
        "deepspeed-distributed", [node, launcher], kind="ClusterTrainingRuntime", ml_policy=policy
    )
    tj = trainjob(
        "ds",
        "deepspeed-distributed",
        kind="ClusterTrainingRuntime",
        trainer={"numNodes": 4, "image": "mine", "env": [{"name": "E", "value": "1"}]},
    )
    result = run(tj, rt)
    jobset = applied(result, "JobSet")
    assert replicated(jobset, "node")["template"]["spec"]["parallelism"] == 3
    assert replicated(jobset, "launcher")["template"]["spec"]["parallelism"] == 1
    hostfile = next(o for o in result.apply if o["metadata"]["name"] == "ds-mpi-hostfile")
    assert hostfile["data"]["hostfile"] == (
        "ds-node-0-0.ds slots=1\nds-node-0-1.ds slots=1\nds-node-0-2.ds slots=1\n"
        "ds-launcher-0-0.ds slots=1\n"
    )
    assert main_container(jobset, "launcher")["image"] == "mine"
    assert main_container(jobset, "node")["image"] == "deepspeed-runtime"
    assert env_by_name(main_container(jobset, "node")) == {"E": "1"}
    assert env_by_name(main_container(jobset, "launcher"))["E"] == "1"
    mounts = main_container(jobset, "node")["volumeMounts"]
    assert {"name": "mpi-ssh-auth", "mountPath": "/home/mpiuser/.ssh"} in mounts
