"""The Topology seam: how one replica addresses another (DESIGN.md section 4).

Every environment value that names another replica (``MASTER_ADDR``, ``TF_CONFIG`` ...) is
built from ``Topology.host`` and ``Topology.port``; plugins never spell a DNS name themselves.
``ClusterTopology`` gives upstream's names: the per-replica headless Service ``<job>-<rt>-<i>``
(short, resolvable inside the namespace) or, when a framework asks for a qualified name,
``<job>-<rt>-<i>.<ns>.svc[.<domain>]``; ports come from the replica's pod template. A local
topology (in ``local/``) answers ``127.0.0.1`` and the port it allocated for that replica, so the
same plugin code runs on one machine.

Some programs need numeric IPs (DGL's ip_config): ``ip_address`` takes the topology's answer
when it is one (loopback) and otherwise the replica's pod IP as observed (``status.podIP``,
which the engine passes in), so no mode is special-cased in a plugin.

Invariants: a topology is a pure value object; the same job and replica always give the same
answer (a restarted controller recomputes identical env). Pod and Service names are not a
topology question: they are fixed by ``replica_name`` for every mode.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from trainop.api.kinds import KindInfo, info_of
from trainop.api.types import Job


def replica_name(*, job_name: str, replica_type: str, index: int | None) -> str:
    """The pod and Service name of a replica: ``<job>-<rt>-<i>`` (``<job>-<rt>`` without index)."""
    base = f"{job_name}-{replica_type.lower()}"
    name = base if index is None else f"{base}-{index}"
    return name.replace("/", "-")


class Topology(Protocol):
    """Addresses of replicas, as seen from another replica of the same job."""

    def host(self, *, job: Job, replica_type: str, index: int, qualified: bool = False) -> str:
        """Host name (or address) of replica ``index`` of ``replica_type``.

        ``qualified`` asks for a name that resolves outside the job's namespace search path
        (TFJob's ``.<ns>.svc`` form); topologies where that makes no difference ignore it.
        """
        ...

    def port(self, *, job: Job, replica_type: str, index: int) -> int:
        """The port replica ``index`` of ``replica_type`` listens on (the kind's default port)."""
        ...


def ip_address(
    topology: Topology,
    *,
    job: Job,
    replica_type: str,
    index: int | None,
    pod_ips: Mapping[str, str],
) -> str | None:
    """The IP address of a replica (``index`` None: unindexed): the topology's host when that
    is an IP, else its pod's observed IP; None while neither is known."""
    host = topology.host(job=job, replica_type=replica_type, index=index or 0)
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        name = replica_name(
            job_name=job.metadata.name or "", replica_type=replica_type, index=index
        )
        return pod_ips.get(name) or None


def template_port(*, job: Job, replica_type: str, info: KindInfo | None = None) -> int:
    """The kind's named default port on the default container of ``replica_type``'s template.

    Falls back to the kind's default number when the template does not declare it (defaulting
    normally adds it).
    """
    kind = info or info_of(job)
    spec = job.spec.replica_specs.get(replica_type)
    containers = (spec.template.get("spec") or {}).get("containers") or [] if spec else []
    for container in containers:
        if not isinstance(container, dict) or container.get("name") != kind.default_container:
            continue
        for port in container.get("ports") or []:
            if isinstance(port, dict) and port.get("name") == kind.default_port_name:
                return int(port.get("containerPort", kind.default_port))
    return kind.default_port


@dataclass(frozen=True, slots=True)
class ClusterTopology:
    """Upstream's addressing on a real cluster: per-replica headless Services and template ports.

    ``cluster_domain`` is the optional suffix upstream reads from ``CUSTOM_CLUSTER_DOMAIN``; it
    is only appended to qualified names.
    """

    cluster_domain: str = ""

    def host(self, *, job: Job, replica_type: str, index: int, qualified: bool = False) -> str:
        name = replica_name(
            job_name=job.metadata.name or "", replica_type=replica_type, index=index
        )
        if not qualified:
            return name
        qualified_name = f"{name}.{job.metadata.namespace or 'default'}.svc"
        return f"{qualified_name}.{self.cluster_domain}" if self.cluster_domain else qualified_name

    def port(self, *, job: Job, replica_type: str, index: int) -> int:
        del index  # every replica of a type shares its template's port on a cluster
        return template_port(job=job, replica_type=replica_type)


@dataclass(frozen=True, slots=True)
class LoopbackTopology:
    """Local addressing: every replica on one host (``127.0.0.1``) with a port of its own.

    ``ports`` maps replica names (``replica_name``) to the port the local side allocated and
    recorded for the job's lifetime. Asking for a replica without a port is a programming
    error (the local topology source allocates every replica's port before planning).
    """

    ports: Mapping[str, int]
    address: str = "127.0.0.1"

    def host(self, *, job: Job, replica_type: str, index: int, qualified: bool = False) -> str:
        del job, replica_type, index, qualified
        return self.address

    def port(self, *, job: Job, replica_type: str, index: int) -> int:
        name = replica_name(
            job_name=job.metadata.name or "", replica_type=replica_type, index=index
        )
        return self.ports[name]
