"""Leader election on a coordination.k8s.io/v1 Lease, as controller-runtime does it.

One operator replica holds the Lease named ``--leader-election-id`` and reconciles; the others
wait. The holder renews every ``retry_period``; a candidate takes the Lease over once its
``renewTime + leaseDurationSeconds`` has passed. Writes carry the Lease's resourceVersion, so
two candidates can never both win: the loser gets a conflict and keeps waiting. A holder that
cannot renew within ``renew_deadline`` raises ``LostLeadershipError`` and must stop
reconciling at once (the process exits, as upstream's does).
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from trainop import errors
from trainop.kube.client import Client, Obj
from trainop.kube.clock import Clock
from trainop.kube.resources import LEASES

log = logging.getLogger(__name__)


class LostLeadershipError(errors.TrainopError):
    """The leader could not renew its Lease in time."""


def _micro_time(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


class LeaderElector:
    """Acquires and holds one Lease; see the module docstring."""

    def __init__(
        self,
        *,
        client: Client,
        clock: Clock,
        namespace: str,
        name: str,
        identity: str,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
    ) -> None:
        self._client = client
        self._clock = clock
        self._namespace = namespace
        self._name = name
        self.identity = identity
        self._duration = lease_duration
        self._renew_deadline = renew_deadline
        self._retry = retry_period
        self.is_leader = False

    async def acquire(self) -> None:
        """Return once this candidate holds the Lease."""
        while not await self.try_acquire_or_renew():
            await self._clock.sleep(self._retry)
        self.is_leader = True
        log.info("%s became the leader (lease %s/%s)", self.identity, self._namespace, self._name)

    async def hold(self) -> None:
        """Renew forever; raise ``LostLeadershipError`` when a renewal deadline is missed."""
        last_renewal = self._clock.now()
        while True:
            await self._clock.sleep(self._retry)
            if await self.try_acquire_or_renew():
                last_renewal = self._clock.now()
            elif self._clock.now() - last_renewal > timedelta(seconds=self._renew_deadline):
                self.is_leader = False
                raise LostLeadershipError(f"{self.identity} could not renew lease {self._name}")

    async def try_acquire_or_renew(self) -> bool:
        """One attempt; True when this candidate holds the Lease afterwards."""
        try:
            lease = await self._client.get(LEASES, name=self._name, namespace=self._namespace)
        except errors.NotFoundError:
            return await self._create()
        except errors.ApiError as exc:
            log.warning("leader election: cannot read lease %s: %s", self._name, exc)
            return False
        spec = lease.get("spec") or {}
        if spec.get("holderIdentity") != self.identity and not self._expired(spec):
            return False
        return await self._write(lease, spec)

    def _expired(self, spec: Obj) -> bool:
        renewed = _parse_time(spec.get("renewTime")) or _parse_time(spec.get("acquireTime"))
        duration = float(spec.get("leaseDurationSeconds") or self._duration)
        return renewed is None or renewed + timedelta(seconds=duration) <= self._clock.now()

    async def _create(self) -> bool:
        now = _micro_time(self._clock.now())
        lease: Obj = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self._name, "namespace": self._namespace},
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": int(self._duration),
                "acquireTime": now,
                "renewTime": now,
                "leaseTransitions": 0,
            },
        }
        try:
            await self._client.create(LEASES, lease, namespace=self._namespace)
        except errors.ApiError:
            return False
        return True

    async def _write(self, lease: Obj, spec: Obj) -> bool:
        now = _micro_time(self._clock.now())
        new_spec = {**spec, "renewTime": now, "leaseDurationSeconds": int(self._duration)}
        if spec.get("holderIdentity") != self.identity:
            new_spec |= {
                "holderIdentity": self.identity,
                "acquireTime": now,
                "leaseTransitions": int(spec.get("leaseTransitions") or 0) + 1,
            }
        try:
            await self._client.replace(
                LEASES, {**lease, "spec": new_spec}, namespace=self._namespace
            )
        except errors.ApiError:
            return False
        return True

    async def release(self) -> None:
        """Give the Lease up on a clean shutdown so a standby takes over at once."""
        if not self.is_leader:
            return
        self.is_leader = False
        try:
            lease = await self._client.get(LEASES, name=self._name, namespace=self._namespace)
            spec = {**(lease.get("spec") or {}), "holderIdentity": None, "leaseDurationSeconds": 1}
            await self._client.replace(LEASES, {**lease, "spec": spec}, namespace=self._namespace)
        except errors.ApiError as exc:
            log.warning("leader election: could not release lease %s: %s", self._name, exc)
