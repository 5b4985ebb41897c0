"""How a TrainJob's pods address each other: the Topology seam for Trainer v2 (note 133).

Every env value a plugin computes that names another pod (``PET_MASTER_ADDR``/``PORT``,
``JAX_COORDINATOR_ADDRESS``, ``DMLC_TRACKER_URI``/``PORT``, torchtune's ``--rdzv_endpoint``)
goes through a ``PodNetwork`` handed to the planner as data, as v1 jobs' plugins go through
``frameworks.topology``. ``CLUSTER`` (the default) is upstream's addressing, unchanged: the
pod's DNS name ``<tj>-<rj>-<replica>-<pod>.<subdomain>`` (§3.3 IdentifyPodNetwork) and the
plugin's fixed port (29500). A local process session, where every pod shares one loopback and
no pod name resolves, passes ``address="127.0.0.1"`` and a port per endpoint it allocated
and recorded (``local/trainjob_topology.py``), so two TrainJobs never collide.

MPI's hostfile keeps the pods' names (its launcher reaches them by a remote shell, not by
address); ``launcher_env`` is what that launcher needs in a session (the process session's
remote shell through the kubelet's exec, the hostfile's path under the pod's root, Open MPI's
TCP on loopback), written after the plugin's own ``OMPI_MCA_*`` (empty on a cluster).

``endpoints_used`` says which endpoints the active plugins address (the rank-0 trainer pod for
Torch, JAX and XGBoost), so a local source allocates a port for those only. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from trainop.api.trainer import constants as c
from trainop.engine.trainer.containers import Raw, as_map

ADDRESSED_POLICIES = ("torch", "jax", "xgboost")  # plugins whose env names the rank-0 pod


@dataclass(frozen=True, slots=True)
class PodNetwork:
    """Where a pod listens, as seen from another pod of the same TrainJob.

    ``address`` None: by its DNS name (a cluster, or a container session network that resolves
    ``<hostname>.<subdomain>``); else every pod at that address. ``ports`` maps an endpoint's
    pod hostname (``<tj>-<rj>-<replica>-<pod>``) to the port it was given; an endpoint without
    one keeps the plugin's port. ``launcher_env``: extra env of the MPI launcher (above).
    """

    address: str | None = None
    ports: Mapping[str, int] = field(default_factory=dict)
    launcher_env: tuple[tuple[str, str], ...] = ()

    def host(self, endpoint: str) -> str:
        """The host to reach ``endpoint`` (a pod DNS name) by."""
        return endpoint if self.address is None else self.address

    def port(self, endpoint: str, default: int) -> int:
        """The port ``endpoint`` listens on for a plugin whose fixed port is ``default``."""
        return self.ports.get(hostname(endpoint), default)


CLUSTER = PodNetwork()


def hostname(endpoint: str) -> str:
    """The pod hostname of a DNS name (the part before the subdomain)."""
    return endpoint.partition(".")[0]


def master_endpoint(trainjob_name: str) -> str:
    """Upstream's fixed rank-0 trainer pod, ``<tj>-node-0-0.<tj>`` (note 111 keeps it)."""
    return f"{trainjob_name}-{c.NODE}-0-0.{trainjob_name}"


def endpoints_used(trainjob: Raw, runtime: Raw) -> list[str]:
    """The pod hostnames whose ports the runtime's plugins put into env (may be empty)."""
    policy = as_map(as_map(runtime.get("spec")).get("mlPolicy"))
    if not any(isinstance(policy.get(name), Mapping) for name in ADDRESSED_POLICIES):
        return []
    name = str(as_map(trainjob.get("metadata")).get("name", ""))
    return [hostname(master_endpoint(name))]
