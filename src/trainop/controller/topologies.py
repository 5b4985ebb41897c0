"""Where the reconciler gets a job's Topology: the one mode-specific input of the engine.

``TopologySource.for_job`` is awaited before planning. On a cluster it is a constant
(``ClusterTopologySource``: upstream's per-replica DNS names and template ports); the local
mode's source (``local.topology``) allocates a loopback port per replica and records it in the
API first, so every controller — restarted or not — computes the same addresses.
"""

from __future__ import annotations

from typing import Protocol

from trainop.api.types import Job
from trainop.frameworks.topology import ClusterTopology, Topology
from trainop.kube.client import Obj


class TopologySource(Protocol):
    async def for_job(self, *, job: Job, raw: Obj) -> Topology | None:
        """The topology to plan ``job`` with (``raw`` is the cached object it was parsed from).

        None when the source first had to write to the job (recording addresses): the cached
        object is stale then, and the write's own watch event brings the job back.
        """
        ...


class ClusterTopologySource:
    """Upstream's addressing on a real cluster, the same for every job."""

    def __init__(self, topology: ClusterTopology | None = None) -> None:
        self._topology = topology or ClusterTopology()

    async def for_job(self, *, job: Job, raw: Obj) -> Topology | None:
        del job, raw
        return self._topology
