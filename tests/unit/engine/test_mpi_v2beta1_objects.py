"""Golden tests: every object an MPIJob v2beta1 creates, per MPI implementation, with the
values of the behaviour spec (mpi-v2beta1-spec sections 2 and 3), and the
``WaitForWorkersReady`` gate driven by the simulated kubelet on a fake clock."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import pytest
from tests.unit.cluster.kubelet.sim.harness import Sim, simulated

from trainop.api import mpi_v2beta1
from trainop.cluster.kubelet.sim import PREFIX
from trainop.engine import mpi_v2beta1_objects as owned
from trainop.engine import ssh_auth
from trainop.frameworks import mpi_v2beta1 as plugin
from trainop.frameworks.options import FrameworkOptions
from trainop.kube.fake import FakeClient
from trainop.kube.resources import PODS
from trainop.local.session import container_frameworks, local_frameworks

KEYS = plugin.SshKeys(
    "-----BEGIN EC PRIVATE KEY-----\nx\n-----END EC PRIVATE KEY-----\n",
    "ecdsa-sha2-nistp521 AAAA\n",
)
OWNER = {
    "apiVersion": "kubeflow.org/v2beta1",
    "kind": "MPIJob",
    "name": "pi",
    "uid": "u-1",
    "controller": True,
    "blockOwnerDeletion": True,
}
IMPLEMENTATIONS = ("OpenMPI", "Intel", "MPICH")


def job(
    implementation: str = "OpenMPI", *, runs: dict[str, Any] | None = None, **spec: Any
) -> mpi_v2beta1.MPIJobV2Beta1:
    """The job; ``runs``: the worker container's ``command``/``args`` (none: sshd)."""
    launcher = {"name": "launcher", "image": "mpi-pi", "command": ["mpirun", "-n", "4", "/pi"]}
    worker = {"name": "worker", "image": "mpi-pi", **(runs or {})}
    raw = {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": "pi", "namespace": "ns", "uid": "u-1"},
        "spec": {
            "slotsPerWorker": 2,
            "mpiImplementation": implementation,
            "runPolicy": {"backoffLimit": 3, "ttlSecondsAfterFinished": 60},
            "mpiReplicaSpecs": {
                "Launcher": {"template": {"spec": {"containers": [launcher]}}},
                "Worker": {
                    "replicas": 2,
                    "template": {
                        "metadata": {"labels": {"team": "a"}},
                        "spec": {"containers": [worker]},
                    },
                },
            },
            **spec,
        },
    }
    return mpi_v2beta1.apply_defaults(mpi_v2beta1.parse(raw))


def meta(name: str) -> dict[str, Any]:
    return {"name": name, "namespace": "ns", "labels": {"app": "pi"}, "ownerReferences": [OWNER]}


SSH_VOLUME = {
    "name": "ssh-auth",
    "secret": {
        "secretName": "pi-ssh",
        "items": [
            {"key": "ssh-privatekey", "path": "id_rsa"},
            {"key": "ssh-publickey", "path": "id_rsa.pub"},
            {"key": "ssh-publickey", "path": "authorized_keys"},
        ],
        "defaultMode": 0o600,
    },
}
SSH_MOUNT = {"name": "ssh-auth", "mountPath": "/root/.ssh"}
FQDN = "pi-worker-{}.pi.ns.svc"
HOSTFILES = {
    "OpenMPI": f"{FQDN.format(0)} slots=2\n{FQDN.format(1)} slots=2\n",
    "Intel": f"{FQDN.format(0)}:2\n{FQDN.format(1)}:2\n",
    "MPICH": f"{FQDN.format(0)}:2\n{FQDN.format(1)}:2\n",
}
ENVS = {
    "OpenMPI": [
        ("OMPI_MCA_orte_keep_fqdn_hostnames", "true"),
        ("OMPI_MCA_orte_default_hostfile", "/etc/mpi/hostfile"),
        ("OMPI_MCA_plm_rsh_args", "-o ConnectionAttempts=10"),
        ("OMPI_MCA_orte_set_default_slots", "2"),
    ],
    "Intel": [
        ("I_MPI_HYDRA_HOST_FILE", "/etc/mpi/hostfile"),
        ("I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS", "-o ConnectionAttempts=10"),
        ("I_MPI_PERHOST", "2"),
    ],
    "MPICH": [
        ("HYDRA_HOST_FILE", "/etc/mpi/hostfile"),
        ("HYDRA_LAUNCH_EXTRA_ARGS", "-o ConnectionAttempts=10"),
    ],
}


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_every_object_of_a_job_in_creation_order(implementation: str) -> None:
    objects = owned.desired_objects(job(implementation), keys=KEYS)
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("Service", "pi"),
        ("ConfigMap", "pi-config"),
        ("Secret", "pi-ssh"),
        ("Pod", "pi-worker-0"),
        ("Pod", "pi-worker-1"),
        ("Job", "pi-launcher"),
    ]
    service, config, secret, worker0, _, launcher = objects
    assert service == {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta("pi"),
        "spec": {
            "clusterIP": "None",
            "selector": {
                "training.kubeflow.org/operator-name": "mpi-operator",
                "training.kubeflow.org/job-name": "pi",
            },
            "publishNotReadyAddresses": False,
        },
    }
    assert config == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": meta("pi-config"),
        "data": {"hostfile": HOSTFILES[implementation], "discover_hosts.sh": "#!/bin/sh\n"},
    }
    assert secret == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": meta("pi-ssh"),
        "type": "kubernetes.io/ssh-auth",
        "data": {
            "ssh-privatekey": base64.b64encode(KEYS.private_pem.encode()).decode(),
            "ssh-publickey": base64.b64encode(KEYS.public_line.encode()).decode(),
        },
    }
    assert worker0 == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "pi-worker-0",
            "namespace": "ns",
            "labels": {
                "team": "a",
                "training.kubeflow.org/operator-name": "mpi-operator",
                "training.kubeflow.org/job-name": "pi",
                "training.kubeflow.org/job-role": "worker",
                "training.kubeflow.org/replica-index": "0",
            },
            "ownerReferences": [OWNER],
        },
        "spec": {
            "containers": [
                {
                    "name": "worker",
                    "image": "mpi-pi",
                    "command": ["/usr/sbin/sshd", "-De"],
                    "env": [{"name": "K_MPI_JOB_ROLE", "value": "worker"}],
                    "volumeMounts": [SSH_MOUNT],
                }
            ],
            "hostname": "pi-worker-0",
            "subdomain": "pi",
            "restartPolicy": "Never",
            "dnsConfig": {"searches": ["pi.ns.svc.cluster.local"]},
            "volumes": [SSH_VOLUME],
        },
    }
    env = [("K_MPI_JOB_ROLE", "launcher"), *ENVS[implementation]]
    env += [("NVIDIA_VISIBLE_DEVICES", ""), ("NVIDIA_DRIVER_CAPABILITIES", "")]
    assert launcher == {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta("pi-launcher"),
        "spec": {
            "backoffLimit": 3,
            "ttlSecondsAfterFinished": 60,
            "podReplacementPolicy": "Failed",
            "template": {
                "metadata": {
                    "labels": {
                        "training.kubeflow.org/operator-name": "mpi-operator",
                        "training.kubeflow.org/job-name": "pi",
                        "training.kubeflow.org/job-role": "launcher",
                    }
                },
                "spec": {
                    "containers": [
                        {
                            "name": "launcher",
                            "image": "mpi-pi",
                            "command": ["mpirun", "-n", "4", "/pi"],
                            "env": [{"name": n, "value": v} for n, v in env],
                            "volumeMounts": [
                                SSH_MOUNT,
                                {"name": "mpi-job-config", "mountPath": "/etc/mpi"},
                            ],
                        }
                    ],
                    "hostname": "pi-launcher",
                    "subdomain": "pi",
                    "restartPolicy": "OnFailure",
                    "volumes": [
                        SSH_VOLUME,
                        {
                            "name": "mpi-job-config",
                            "configMap": {
                                "name": "pi-config",
                                "items": [
                                    {"key": "hostfile", "path": "hostfile", "mode": 0o444},
                                    {
                                        "key": "discover_hosts.sh",
                                        "path": "discover_hosts.sh",
                                        "mode": 0o555,
                                    },
                                ],
                            },
                        },
                    ],
                },
            },
        },
    }


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_launcher_as_worker_is_a_host_keeps_gpus_and_shifts_worker_indices(
    implementation: str,
) -> None:
    j = job(implementation, runLauncherAsWorker=True, sshAuthMountPath="/home/mpiuser/.ssh")
    launcher_line = "pi-launcher.pi.ns.svc" + (
        " slots=2\n" if implementation == "OpenMPI" else ":2\n"
    )
    assert plugin.hostfile(j) == launcher_line + HOSTFILES[implementation]
    assert plugin.discover_hosts(j, ["pi-worker-1", "pi-worker-0"], "example.org") == (
        "#!/bin/sh\necho pi-launcher.pi.ns.svc.example.org\n"
        "echo pi-worker-0.pi.ns.svc.example.org\necho pi-worker-1.pi.ns.svc.example.org\n"
    )
    assert owned.service(j)["spec"]["publishNotReadyAddresses"] is True
    worker = owned.worker_pod(j, 1)
    assert worker["metadata"]["labels"]["training.kubeflow.org/replica-index"] == "2"
    assert worker["spec"]["volumes"][0]["secret"].get("defaultMode") is None  # not /root/.ssh
    assert worker["spec"]["containers"][0]["volumeMounts"] == [
        {"name": "ssh-auth", "mountPath": "/home/mpiuser/.ssh"}
    ]
    launcher = owned.launcher_job(j)["spec"]["template"]
    assert launcher["metadata"]["labels"]["training.kubeflow.org/replica-index"] == "0"
    names = [e["name"] for e in launcher["spec"]["containers"][0]["env"]]
    assert "NVIDIA_VISIBLE_DEVICES" not in names
    assert names == ["K_MPI_JOB_ROLE", *(n for n, _ in ENVS[implementation])]


SHELL = "/run/trainop/ssh"  # containers.ssh_command()
OVERRIDES = {
    "OpenMPI": [("OMPI_MCA_plm_rsh_agent", SHELL)],
    "Intel": [("I_MPI_HYDRA_BOOTSTRAP", "ssh"), ("I_MPI_HYDRA_BOOTSTRAP_EXEC", SHELL)],
    "MPICH": [("HYDRA_LAUNCHER", "ssh"), ("HYDRA_LAUNCHER_EXEC", SHELL)],
}
ON_NETWORK = container_frameworks(FrameworkOptions())
HOST_NETWORK = container_frameworks(FrameworkOptions(), by_name=False)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize(
    ("runs", "options", "exec_wrapper"),
    [
        ({}, ON_NETWORK, False),  # worker_pod gives it sshd
        ({"command": ["/usr/sbin/sshd", "-De", "-f", "/etc/x"]}, ON_NETWORK, False),
        ({"command": ["sshd"], "args": ["-De"]}, ON_NETWORK, False),
        ({"command": ["sleep", "365d"]}, ON_NETWORK, True),  # accepts no ssh
        ({"command": ["sh", "-c", "/usr/sbin/sshd -De"]}, ON_NETWORK, True),
        ({"args": ["-De"]}, ON_NETWORK, True),  # the image's entrypoint: unknown
        ({}, HOST_NETWORK, True),
    ],
)
def test_a_container_launcher_keeps_its_ssh_only_for_workers_that_run_sshd(
    implementation: str, runs: dict[str, Any], options: FrameworkOptions, exec_wrapper: bool
) -> None:
    assert options.mpi_ssh_command == SHELL
    assert ON_NETWORK.mpi_real_ssh_to_sshd_workers
    assert not HOST_NETWORK.mpi_real_ssh_to_sshd_workers
    j = job(implementation, runs=runs)
    env = [("K_MPI_JOB_ROLE", "launcher"), *ENVS[implementation]]
    env += [("NVIDIA_VISIBLE_DEVICES", ""), ("NVIDIA_DRIVER_CAPABILITIES", "")]
    env += OVERRIDES[implementation] if exec_wrapper else []
    assert plugin.launcher_env(j, options) == [{"name": n, "value": v} for n, v in env]


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_the_flag_needs_every_host_to_run_sshd_and_the_process_cluster_never_sets_it(
    implementation: str,
) -> None:
    """A launcher that is also a host runs the user's mpirun, not sshd: the exec wrapper;
    the process kubelet has no sshd to reach at all."""
    as_worker = job(implementation, runLauncherAsWorker=True)
    names = {e["name"] for e in plugin.launcher_env(as_worker, ON_NETWORK)}
    assert {n for n, _ in OVERRIDES[implementation]} <= names
    assert not plugin.workers_run_sshd(as_worker)
    assert plugin.workers_run_sshd(job(implementation))
    process = local_frameworks(FrameworkOptions())
    assert not process.mpi_real_ssh_to_sshd_workers
    names = {e["name"] for e in plugin.launcher_env(job(implementation), process)}
    assert {n for n, _ in OVERRIDES[implementation]} <= names
    assert plugin.launcher_env(job(implementation)) == plugin.launcher_env(
        job(implementation), FrameworkOptions(mpi_real_ssh_to_sshd_workers=True)
    )  # a cluster: no remote shell set, whatever the flag


def test_discover_hosts_sorts_running_workers_as_strings_and_user_commands_win() -> None:
    j = job(
        mpiReplicaSpecs={
            "Launcher": {"template": {"spec": {"containers": [{"name": "l", "image": "i"}]}}},
            "Worker": {
                "replicas": 11,
                "template": {
                    "spec": {
                        "hostNetwork": True,
                        "containers": [{"name": "w", "image": "i", "args": ["serve"]}],
                    }
                },
            },
        }
    )
    script = plugin.discover_hosts(j, ["pi-worker-2", "pi-worker-10"])
    assert script == "#!/bin/sh\necho pi-worker-10.pi.ns.svc\necho pi-worker-2.pi.ns.svc\n"
    pod = owned.worker_pod(j, 10)
    assert "command" not in pod["spec"]["containers"][0]
    assert pod["spec"]["dnsPolicy"] == "ClusterFirstWithHostNet"
    assert plugin.hostfile(j).count("\n") == 11
    suspended = job(runPolicy={"suspend": True})
    assert owned.launcher_job(suspended, suspended=True)["spec"]["suspend"] is True
    assert ssh_auth.secret_needs_new_keys({"data": {"ssh-privatekey": "a"}})
    assert not ssh_auth.secret_needs_new_keys(
        {"data": {"ssh-privatekey": "a", "ssh-publickey": "b"}}
    )


def test_wait_for_workers_ready_creates_no_launcher_until_every_worker_is_ready() -> None:
    """Workers start at 5 s and 30 s (simulated kubelet, fake clock): no launcher Job in the
    desired objects before both report Ready; AtStartup has it from the first plan."""
    waiting = job(launcherCreationPolicy="WaitForWorkersReady")
    client = FakeClient()

    def launcher_in(objects: list[dict[str, Any]]) -> bool:
        return any(o["kind"] == "Job" for o in objects)

    async def body(sim: Sim) -> None:
        assert not launcher_in(owned.desired_objects(waiting, keys=KEYS))  # no pods yet
        assert launcher_in(owned.desired_objects(job(), keys=KEYS))
        for index, pending in ((0, 5), (1, 30)):
            pod = owned.worker_pod(waiting, index)
            pod["metadata"]["annotations"] = {  # sshd: starts after ``pending``, runs on
                PREFIX + "pending-seconds": str(pending),
                PREFIX + "run-seconds": "3600",
            }
            pod["metadata"].pop("ownerReferences")
            await sim.create(pod)

        async def objects() -> list[dict[str, Any]]:
            pods = (await client.list(PODS, namespace="ns")).items
            return owned.desired_objects(waiting, keys=KEYS, worker_pods=pods)

        assert not launcher_in(await objects())
        await sim.advance(5)
        first = await objects()
        assert not launcher_in(first)
        assert owned.launcher_may_start(waiting, []) is False
        await sim.advance(24)
        assert not launcher_in(await objects())
        await sim.advance(1)
        ready = await objects()
        assert launcher_in(ready)
        config = next(o for o in ready if o["kind"] == "ConfigMap")
        assert config["data"]["discover_hosts.sh"].count("echo") == 2  # both Running now

    async def main() -> None:
        async with simulated(client, namespace="ns") as sim:
            await body(sim)

    asyncio.run(main())
