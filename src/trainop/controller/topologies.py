"""Where the reconciler gets a job's Topology: the one mode-specific input of the engine.

``TopologySource.for_job`` is awaited before planning. On a cluster it is a constant
(``ClusterTopologySource``: upstream's per-replica DNS names and template ports); the local
mode's source (``local.topology``) allocates a loopback port per replica and records it in the
API first, so every controller — restarted or not — computes the same addresses. A source that
cannot address a job yet (no free ports) answers ``Pending``: the reconciler records its event,
leaves the job Created and looks again after ``retry_after``. ``forget`` is called once a job is
gone, so a source can free what it held for it.

TrainJobs get the same seam as data for their planner (``TrainJobNetworks.for_trainjob`` →
``engine.trainer.network.PodNetwork``, note 133): on a cluster the pods' DNS names and the
plugins' ports, in a local process session loopback and a recorded port per endpoint.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Protocol

from trainop.api.types import Job
from trainop.engine.actions import Event
from trainop.engine.trainer.network import CLUSTER, PodNetwork
from trainop.frameworks.topology import ClusterTopology, Topology
from trainop.kube.client import Obj


@dataclass(frozen=True, slots=True)
class Pending:
    """The job cannot be addressed yet: plan nothing, look again after ``retry_after``.

    ``retry_after`` None: only a change of the job can help (it comes back by its watch event).
    ``event`` (when set) says why, on the job; a source sets it once per wait, not per retry.
    """

    retry_after: timedelta | None
    event: Event | None = None


class TopologySource(Protocol):
    async def for_job(self, *, job: Job, raw: Obj) -> Topology | Pending | None:
        """The topology to plan ``job`` with (``raw`` is the cached object it was parsed from).

        None when the source first had to write to the job (recording addresses): the cached
        object is stale then, and the write's own watch event brings the job back. ``Pending``
        when it cannot address the job yet.
        """
        ...

    async def forget(self, *, kind: str, namespace: str, name: str) -> None:
        """The job is gone (deleted, not in the cache any more): drop what was held for it."""
        ...


class ClusterTopologySource:
    """Upstream's addressing on a real cluster, the same for every job."""

    def __init__(self, topology: ClusterTopology | None = None) -> None:
        self._topology = topology or ClusterTopology()

    async def for_job(self, *, job: Job, raw: Obj) -> Topology | Pending | None:
        del job, raw
        return self._topology

    async def forget(self, *, kind: str, namespace: str, name: str) -> None:
        del kind, namespace, name  # nothing is held per job on a cluster


class TrainJobNetworks(Protocol):
    async def for_trainjob(self, *, raw: Obj, runtime: Obj) -> PodNetwork | Pending | None:
        """How the pods of TrainJob ``raw`` (run by ``runtime``) address each other; None and
        ``Pending`` as ``TopologySource.for_job``."""
        ...

    async def forget_trainjob(self, *, namespace: str, name: str) -> None:
        """The TrainJob is gone: drop what was held for it."""
        ...


class ClusterTrainJobNetworks:
    """Upstream's addressing: pod DNS names and the plugins' fixed ports, for every TrainJob."""

    async def for_trainjob(self, *, raw: Obj, runtime: Obj) -> PodNetwork | Pending | None:
        del raw, runtime
        return CLUSTER

    async def forget_trainjob(self, *, namespace: str, name: str) -> None:
        del namespace, name  # nothing is held per TrainJob on a cluster
