"""A pod's securityContext and DNS settings under the Podman and the Docker runtime, driven
directly (the integration harness, as ``test_containers_kubelet``): the ids a container runs
as, a read-only root, kubelet's ``runAsNonRoot`` refusal read back through the API, and the
search path that makes a cluster pod's short names resolve on the session's network (note
095, ``podoptions``).

Uses ``localhost/trainop-debian-py:12`` (no image user: root) from ``make container-images``;
skipped, with the reason, where the runtime does not work or lacks that image.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_containers_kubelet import (  # noqa: F401  (cli: the fixture)
    _containers,
    _log,
    _pods_containers,
    _sh,
    cli,
)
from tests.integration.cluster.kubelet.conftest import Site, site  # noqa: F401  (the fixture)
from tests.integration.cluster.kubelet.harness import Local, pod, run_local
from trainop.cluster.kubelet.runtimes.containercli import Cli
from trainop.cluster.kubelet.runtimes.containers import ContainerRuntime

pytestmark = [pytest.mark.e2e, pytest.mark.containers]

# ``id -u -g -G`` is not one coreutils call: three
IDS = "id -u; id -g; id -G; touch /x 2>/dev/null && echo writable || echo read-only"
SCRATCH = "touch /scratch/x && echo scratch-writable"  # an emptyDir, as that user


def _host_nameservers() -> list[str]:
    """The host's resolvers (a ``dnsConfig`` nameserver that answers: Docker's embedded
    server forwards every name it does not know to the pod's nameservers)."""
    lines = Path("/etc/resolv.conf").read_text(encoding="utf-8").splitlines()
    return [line.split()[1] for line in lines if line.startswith("nameserver ")]


@pytest.fixture
def networked(cli: Cli) -> Iterator[ContainerRuntime]:  # noqa: F811
    session = f"t{uuid.uuid4().hex[:10]}"
    yield ContainerRuntime(cli, session=session)
    assert asyncio.run(_containers(cli, session)) == [], "the kubelet's close removes them"


def test_security_context_and_dns_settings_reach_the_container(
    site: Site,  # noqa: F811
    networked: ContainerRuntime,
) -> None:
    """runAsUser/runAsGroup/supplementalGroups are the ids, readOnlyRootFilesystem makes /
    read-only (an emptyDir stays writable for that user), dnsConfig's searches follow the
    cluster's path in resolv.conf, and a peer's ``<hostname>.<subdomain>`` and ``<pod>.<ns>``
    resolve as from a cluster pod, also with a ``dnsConfig`` nameserver of its own."""
    lookups = "getent hosts h0.grp >/dev/null && echo found-h0.grp; "
    script = f"{IDS}; grep ^search /etc/resolv.conf; {lookups}"

    async def body(env: Local) -> None:
        assert networked.network, "the session network exists"
        ns = env.namespace
        await env.create(pod("peer", _sh("sleep 600"), hostname="h0", subdomain="grp"))
        await env.wait("peer", lambda p: "running" in str(p.get("status")))
        context = {"runAsUser": 1000, "runAsGroup": 3000, "supplementalGroups": [4000]}
        checks = _sh(
            script + f"getent hosts peer.{ns} >/dev/null && echo found-peer.ns; {SCRATCH}",
            securityContext={"readOnlyRootFilesystem": True},
            volumeMounts=[{"name": "scratch", "mountPath": "/scratch"}],
        )
        dns = {
            "searches": ["example.org"],
            "nameservers": _host_nameservers()[:1],  # after the network's own server
            "options": [{"name": "ndots", "value": "2"}],
        }
        scratch = [{"name": "scratch", "emptyDir": {}}]
        await env.create(
            pod("checks", checks, securityContext=context, dnsConfig=dns, volumes=scratch)
        )
        ended = await env.phase("checks", "Succeeded", "Failed")
        lines = await _log(env, "checks")
        assert ended["status"]["phase"] == "Succeeded", lines
        assert lines[:4] == ["1000", "3000", "3000 4000", "read-only"]
        assert lines[4].split() == ["search", f"{ns}.svc", "svc", "example.org"]
        assert lines[5:] == ["found-h0.grp", "found-peer.ns", "scratch-writable"]

    run_local(site.server, site.logs, site.root, body, container_runtime=networked)


def test_run_as_non_root_with_a_root_image_waits_with_kubelets_reason(
    site: Site,  # noqa: F811
    networked: ContainerRuntime,
    cli: Cli,  # noqa: F811
) -> None:
    """The image has no user (root): never created, ``waiting: CreateContainerConfigError``
    with kubelet's message, the pod ``Pending``; with ``runAsUser: 1000`` it runs, with the
    capabilities it asked for and no privilege escalation."""
    error = "CreateContainerConfigError"

    async def body(env: Local) -> None:
        context = {"runAsNonRoot": True}
        await env.create(pod("nonroot", _sh("id -u"), securityContext=context))
        found = await env.wait("nonroot", lambda p: error in str(p.get("status")))
        entry = found["status"]["containerStatuses"][0]
        message = (
            "container has runAsNonRoot and image will run as root "
            f'(pod: "{env.namespace}/nonroot", container: main)'
        )
        assert entry["state"] == {"waiting": {"reason": error, "message": message}}
        assert (entry["restartCount"], found["status"]["phase"]) == (0, "Pending")
        assert await _pods_containers(cli, networked.session) == []  # never created (its holder is)
        allowed = {**context, "runAsUser": 1000}
        capabilities = {"drop": ["ALL"], "add": ["CAP_NET_RAW", "SYS_PTRACE"]}
        own = {"capabilities": capabilities, "allowPrivilegeEscalation": False}
        caps = "id -u; grep -E '^(CapBnd|NoNewPrivs)' /proc/self/status"
        await env.create(pod("user", _sh(caps, securityContext=own), securityContext=allowed))
        ran = await env.phase("user", "Succeeded", "Failed")
        lines = [" ".join(line.split()) for line in await _log(env, "user")]
        assert ran["status"]["phase"] == "Succeeded", lines
        # bits 13 (NET_RAW) and 19 (SYS_PTRACE), with or without CAP_, as both CLIs take them
        assert lines == ["1000", "CapBnd: 0000000000082000", "NoNewPrivs: 1"]

    run_local(site.server, site.logs, site.root, body, container_runtime=networked)
