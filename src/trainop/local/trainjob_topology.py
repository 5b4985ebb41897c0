"""Local process sessions' addresses for TrainJobs: loopback and a recorded port per endpoint.

Under the process runtime every pod shares the host's loopback and no pod DNS name
(``<tj>-node-0-0.<tj>``) resolves, and two TrainJobs would both listen on 29500. As for v1 jobs
(``local.topology``, note 006), the TrainJob planner gets a ``PodNetwork`` with ``127.0.0.1`` and
a port of the session's pool for each endpoint a plugin puts into env
(``engine.trainer.network.endpoints_used``: the rank-0 trainer pod for Torch, JAX, XGBoost);
an MPI launcher gets ``launcher_env`` (the session's remote shell through the kubelet's exec).
The ports are allocated the first time the TrainJob is planned to run (not suspended, not
finished, managed by Trainer) and written to the TrainJob's annotation
``local.trainop.dev/ports`` with a metadata merge patch; ``for_trainjob`` then answers None (the
cached TrainJob is stale; the write's watch event brings it back). Every later pass, and a
restarted controller, reads the same map back, so the JobSet's env never changes. Ports go back
to the pool when the TrainJob finishes, is suspended or is deleted; the pool is the one the v1
jobs use, so no two jobs of any kind share a port. The source registers a recorded-ports reader
with that pool (the ports of every running TrainJob), which the pool runs with the v1 jobs'
before it first hands out or re-claims a port: after a restart no port a running job of either
kind recorded is given again, whichever kind allocates first. No allocation: ``Pending`` with
one ``PortAllocationFailed`` Warning event, and a retry (note 133).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from datetime import timedelta

from trainop import errors
from trainop.api.trainer import constants as c
from trainop.controller.topologies import Pending
from trainop.controller.trainjob_caches import TRAINJOBS
from trainop.engine.actions import Event
from trainop.engine.trainer import network, status
from trainop.engine.trainer.containers import as_map
from trainop.kube.client import Client, Obj
from trainop.local import ports as portpool
from trainop.local.topology import PORTS_ANNOTATION, RETRY_AFTER, recorded_ports

LOOPBACK = portpool.LOOPBACK


def needs_ports(raw: Obj) -> bool:
    """Whether the planner may create this TrainJob's pods now (else nothing is held)."""
    spec = as_map(raw.get("spec"))
    if spec.get("suspend") or spec.get("managedBy") not in (None, c.MANAGED_BY_TRAINER):
        return False
    return not status.is_finished(status.current(raw))


class LocalTrainJobNetworks:
    """``TrainJobNetworks`` for a process session (see the module docstring)."""

    def __init__(
        self,
        *,
        client: Client,
        pool: portpool.PortPool,
        retry_after: timedelta = RETRY_AFTER,
        launcher_env: tuple[tuple[str, str], ...] = (),
    ) -> None:
        self._client = client
        self.pool = pool
        self._launcher_env = launcher_env  # an MPI launcher's remote shell and loopback TCP
        self._retry_after = retry_after
        self._uids: dict[str, str] = {}  # namespace/name -> uid holding ports
        self._waiting: set[str] = set()  # uids told (by an event) that they wait for ports
        self.pool.read_recorded_with(self._read_recorded)

    async def for_trainjob(self, *, raw: Obj, runtime: Obj) -> network.PodNetwork | Pending | None:
        meta = raw["metadata"]
        key = f"{meta.get('namespace') or 'default'}/{meta['name']}"
        uid = str(meta.get("uid") or key)
        self._track(key, uid)
        recorded = recorded_ports(raw)
        if not needs_ports(raw):
            self._release(uid)
            return self._network(recorded)
        wanted = network.endpoints_used(raw, runtime)
        await self.pool.load_recorded()  # every kind's records first: a stale one loses
        kept = {n: p for n, p in recorded.items() if n in wanted and self.pool.claim(uid, n, p)}
        missing = [n for n in wanted if n not in kept]
        if not missing:
            self._waiting.discard(uid)
            return self._network(kept)
        try:
            allocated = await self.pool.allocate(uid, missing)
        except portpool.PortsExhaustedError as exc:
            told = uid in self._waiting
            self._waiting.add(uid)
            text = f"TrainJob {key} waits for local ports: {exc}"
            event = None if told else Event("Warning", "PortAllocationFailed", text)
            return Pending(retry_after=self._retry_after, event=event)
        self._waiting.discard(uid)
        await self._record(raw, recorded | kept | allocated)
        return None

    def _network(self, ports: dict[str, int]) -> network.PodNetwork:
        return network.PodNetwork(address=LOOPBACK, ports=ports, launcher_env=self._launcher_env)

    async def forget_trainjob(self, *, namespace: str, name: str) -> None:
        uid = self._uids.pop(f"{namespace or 'default'}/{name}", None)
        if uid is not None:
            self._release(uid)

    def _release(self, uid: str) -> None:
        self.pool.release(uid)
        self._waiting.discard(uid)

    def _track(self, key: str, uid: str) -> None:
        previous = self._uids.get(key)
        if previous is not None and previous != uid:
            self._release(previous)  # a new TrainJob took the name of one deleted meanwhile
        self._uids[key] = uid

    async def _read_recorded(self) -> dict[str, Mapping[str, int]]:
        """The pool's reader: the ports every running TrainJob recorded, by uid. Each is tracked
        under its name, so one deleted before its first pass here still frees them."""
        found: dict[str, Mapping[str, int]] = {}
        with contextlib.suppress(errors.ApiError):  # the CRD not served: nothing recorded
            for raw in (await self._client.list(TRAINJOBS)).items:
                meta = raw["metadata"]
                if needs_ports(raw) and meta.get("uid"):
                    uid = str(meta["uid"])
                    self._track(f"{meta.get('namespace') or 'default'}/{meta['name']}", uid)
                    found[uid] = recorded_ports(raw)
        return found

    async def _record(self, raw: Obj, ports: dict[str, int]) -> None:
        text = json.dumps(ports, sort_keys=True)
        meta = raw["metadata"]
        await self._client.patch(
            TRAINJOBS,
            name=meta["name"],
            namespace=meta.get("namespace"),
            patch={"metadata": {"annotations": {PORTS_ANNOTATION: text}}},
        )
