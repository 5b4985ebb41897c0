"""A container's names on the session's network (``network.network_aliases``): a pod with a
``subdomain`` is also ``<hostname>.<subdomain>.<ns>.svc``, its record in that headless Service,
so an MPIJob v2beta1 launcher's ssh resolves its hostfile's names (note 100)."""

from __future__ import annotations

from pathlib import Path

from trainop.cluster.kubelet.runtimes import containercli, containers
from trainop.cluster.kubelet.runtimes.runtime import Launch, Target


def _aliases(tmp_path: Path, target: Target) -> list[str]:
    runtime = containers.ContainerRuntime(containercli.Podman(tmp_path), session="s")
    runtime.network = "trainop-s"
    launch = Launch(argv=[], env={}, cwd=tmp_path, gpus=0, spec={"name": "c"})
    words = runtime._run_options(target, launch, "n")
    return [words[i + 1] for i, word in enumerate(words) if word == "--network-alias"]


def test_a_pod_in_a_subdomain_is_also_its_record_in_that_service(tmp_path: Path) -> None:
    worker = Target("ns", "pi-worker-0", "u", "mpi", "pi-worker-0", subdomain="pi")
    assert _aliases(tmp_path, worker) == [
        "pi-worker-0",
        "pi-worker-0.ns.svc",
        "pi-worker-0.pi.ns.svc",
    ]
    # a Job's pod: generated name, the template's hostname
    launcher = Target("ns", "pi-launcher-x7k2p", "u", "mpi", "pi-launcher", subdomain="pi")
    assert _aliases(tmp_path, launcher)[-1] == "pi-launcher.pi.ns.svc"


def test_a_pod_without_a_subdomain_keeps_its_two_names(tmp_path: Path) -> None:
    master = Target("default", "job-master-0", "u", "pytorch", "job-master-0")
    assert _aliases(tmp_path, master) == ["job-master-0", "job-master-0.default.svc"]
