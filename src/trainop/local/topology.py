"""Local mode's topology source: a loopback port per replica, allocated once and recorded.

Every replica of a local job listens on ``127.0.0.1`` and a port of its own. The ports are
allocated the first time the controller plans the job and written to the job's annotation
``local.trainop.dev/ports`` (a JSON map from replica name to port) with a metadata merge patch
— metadata only, so the spec and its generation are untouched. Every later reconcile, and a
restarted controller, reads the same map back, so the env the engine computes never changes for
the life of the job; replicas added by a scale-up get new ports, existing ones keep theirs.

Ports come from the OS (bind to port 0, then release) and are remembered for the process, so
two jobs never get the same port from one controller. No /etc/hosts edits, no string rewriting.
"""

from __future__ import annotations

import json
import socket

from trainop.api.defaults import apply_defaults
from trainop.api.kinds import info_of
from trainop.api.types import Job
from trainop.frameworks.base import replicas_of
from trainop.frameworks.topology import LoopbackTopology, Topology, replica_name
from trainop.kube.client import Client, Obj
from trainop.kube.resources import job_resource

PORTS_ANNOTATION = "local.trainop.dev/ports"
LOOPBACK = "127.0.0.1"


class PortAllocator:
    """Free loopback ports, never the same one twice in this process."""

    def __init__(self) -> None:
        self._taken: set[int] = set()

    def claim(self, port: int) -> None:
        """Mark a port recorded elsewhere (an existing job's annotation) as in use."""
        self._taken.add(port)

    def allocate(self) -> int:
        while True:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
                probe.bind((LOOPBACK, 0))
                port = int(probe.getsockname()[1])
            if port not in self._taken:
                self._taken.add(port)
                return port


def recorded_ports(raw: Obj) -> dict[str, int]:
    """The replica → port map recorded on a job (empty when none or unreadable)."""
    text = (raw.get("metadata", {}).get("annotations") or {}).get(PORTS_ANNOTATION)
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {}
    return {str(k): int(v) for k, v in value.items()} if isinstance(value, dict) else {}


def replica_names(job: Job) -> list[str]:
    """Every indexed replica of the (defaulted) job, by pod name."""
    defaulted = apply_defaults(job)
    name = defaulted.metadata.name or ""
    return [
        replica_name(job_name=name, replica_type=rt, index=i)
        for rt in defaulted.spec.replica_specs
        for i in range(replicas_of(defaulted, rt))
    ]


class LocalTopologySource:
    """``TopologySource`` for local mode (see the module docstring)."""

    def __init__(self, *, client: Client, allocator: PortAllocator | None = None) -> None:
        self._client = client
        self._allocator = allocator or PortAllocator()

    async def for_job(self, *, job: Job, raw: Obj) -> Topology | None:
        ports = recorded_ports(raw)
        for port in ports.values():
            self._allocator.claim(port)
        missing = [n for n in replica_names(job) if n not in ports]
        if not missing:
            return LoopbackTopology(ports=ports, address=LOOPBACK)
        ports |= {name: self._allocator.allocate() for name in missing}
        await self._record(job, ports)
        return None

    async def _record(self, job: Job, ports: dict[str, int]) -> None:
        patch = {"metadata": {"annotations": {PORTS_ANNOTATION: json.dumps(ports, sort_keys=True)}}}
        await self._client.patch(
            job_resource(info_of(job)),
            name=job.metadata.name or "",
            namespace=job.metadata.namespace,
            patch=patch,
        )
