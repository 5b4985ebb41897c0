"""Local mode's topology source: a loopback port per replica, allocated when needed, recorded.

Every replica of a local job listens on ``127.0.0.1`` and a port of its own from the bounded
pool of ``local.ports``. The ports are allocated the first time the controller plans the job
*to run* — a suspended, finished, invalid or foreign-managed job allocates nothing — and
written to the job's annotation ``local.trainop.dev/ports`` (a JSON map from replica name to
port) with a metadata merge patch: metadata only, so the spec and its generation are untouched.
Every later reconcile, and a restarted controller, reads the same map back and claims it in the
pool, so the env the engine computes never changes while the job runs; a scale-up adds ports,
existing replicas keep theirs. The source registers a recorded-ports reader with the pool (the
ports of every running v1 job, all kinds): the pool runs it, with the TrainJobs' reader, before
its first allocation or claim, so a restarted controller never gives a new job of any kind the
port of one it has not reconciled yet.

Ports go back to the pool when the job finishes, is suspended or is deleted (``forget``); a
resumed job claims its recorded ports again, and gets new ones only for those another job took
meanwhile. When the pool cannot supply a job, ``for_job`` answers ``Pending`` with a Warning
event (``PortAllocationFailed``, once per wait) and the reconciler looks again later: the job
stays Created until ports are released. A job that fails validation (which admission normally
refuses) waits the same way, with a ``<Kind>FailedValidation`` event, until it is changed.
No /etc/hosts edits, no string rewriting.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Mapping
from datetime import timedelta

from trainop import errors
from trainop.api import validation
from trainop.api.defaults import apply_defaults
from trainop.api.kinds import KINDS, info_of
from trainop.api.types import FAILED, MANAGED_BY_TRAINING_OPERATOR, SUCCEEDED, Job
from trainop.controller.topologies import Pending
from trainop.engine import conditions
from trainop.engine.actions import Event
from trainop.frameworks.base import replicas_of
from trainop.frameworks.topology import LoopbackTopology, Topology, replica_name
from trainop.kube.client import Client, Obj
from trainop.kube.resources import job_resource
from trainop.local import ports as portpool

PORTS_ANNOTATION = "local.trainop.dev/ports"
LOOPBACK = portpool.LOOPBACK
RETRY_AFTER = timedelta(seconds=2)
NAMES_CHUNK = 1024


def recorded_ports(raw: Obj) -> dict[str, int]:
    """The replica → port map recorded on a job (empty when none or unreadable)."""
    text = (raw.get("metadata", {}).get("annotations") or {}).get(PORTS_ANNOTATION)
    try:
        value = json.loads(text) if text else {}
        return {str(k): int(v) for k, v in value.items()} if isinstance(value, dict) else {}
    except (ValueError, TypeError):
        return {}


async def replica_names(job: Job) -> list[str]:
    """Every indexed replica of the (defaulted) job, by pod name; yields every chunk."""
    defaulted = apply_defaults(job)
    name = defaulted.metadata.name or ""
    names: list[str] = []
    for replica_type in defaulted.spec.replica_specs:
        for index in range(replicas_of(defaulted, replica_type)):
            names.append(replica_name(job_name=name, replica_type=replica_type, index=index))
            if len(names) % NAMES_CHUNK == 0:
                await asyncio.sleep(0)
    return names


def replica_count(job: Job) -> int:
    """How many replicas (ports) the defaulted job asks for, without listing them."""
    defaulted = apply_defaults(job)
    return sum(max(replicas_of(defaulted, rt), 0) for rt in defaulted.spec.replica_specs)


def needs_ports(job: Job) -> bool:
    """Whether the engine may create this job's pods now (else it allocates nothing)."""
    policy = job.run_policy
    if policy.suspend or policy.managed_by not in (None, MANAGED_BY_TRAINING_OPERATOR):
        return False
    return not conditions.is_finished(tuple((job.status and job.status.conditions) or ()))


class LocalTopologySource:
    """``TopologySource`` for local mode (see the module docstring)."""

    def __init__(
        self,
        *,
        client: Client,
        pool: portpool.PortPool | None = None,
        retry_after: timedelta = RETRY_AFTER,
    ) -> None:
        self._client = client
        self.pool = pool or portpool.PortPool()
        self._retry_after = retry_after
        self._uids: dict[str, str] = {}  # kind/namespace/name -> uid holding ports
        self._waiting: dict[str, str] = {}  # uid -> reason of the event it was told it waits for
        self.pool.read_recorded_with(self._read_recorded)

    async def for_job(self, *, job: Job, raw: Obj) -> Topology | Pending | None:
        uid = str(raw["metadata"].get("uid") or _key(job))
        self._track(_key(job), uid)
        recorded = recorded_ports(raw)
        if not needs_ports(job):
            self._release(uid)
            return LoopbackTopology(ports=recorded, address=LOOPBACK)
        if (total := replica_count(job)) > len(self.pool.ports):  # before any per-replica work
            self._release(uid)
            too_many = f"{total} ports needed, the local port range has {len(self.pool.ports)}"
            exc = portpool.PortsExhaustedError(f"{too_many} ({self.pool.describe})")
            return self._pending(uid, None, self._no_ports_event(job, exc))
        names = await replica_names(job)
        wanted = set(names)
        await self.pool.load_recorded()  # every kind's records first: a stale one loses
        kept = {n: p for n, p in recorded.items() if n in wanted and self.pool.claim(uid, n, p)}
        missing = [n for n in names if n not in kept]
        if not missing and recorded:
            self._waiting.pop(uid, None)
            return LoopbackTopology(ports=kept, address=LOOPBACK)
        problems = validation.validate(job).errors
        if problems:  # the webhook would refuse it: never spend ports on it
            self._release(uid)
            detail = "; ".join(str(p) for p in problems)
            reason, why = f"{job.kind}FailedValidation", f"{job.kind} failed validation because"
            return self._pending(uid, None, Event("Warning", reason, f"{why} {detail}"))
        try:
            allocated = await self.pool.allocate(uid, missing)
        except portpool.PortsExhaustedError as exc:
            return self._pending(uid, self._retry_after, self._no_ports_event(job, exc))
        self._waiting.pop(uid, None)
        if not allocated:
            return LoopbackTopology(ports=kept, address=LOOPBACK)  # a job without replicas
        await self._record(job, recorded | kept | allocated)
        return None

    async def forget(self, *, kind: str, namespace: str, name: str) -> None:
        """The job is gone: its ports go back to the pool."""
        uid = self._uids.pop(f"{kind}/{namespace}/{name}", None)
        if uid is not None:
            self._release(uid)

    async def _read_recorded(self) -> dict[str, Mapping[str, int]]:
        """The pool's reader: the ports every running v1 job recorded, by uid. Each is tracked
        under its name, so one deleted before its first reconcile here still frees them."""
        found: dict[str, Mapping[str, int]] = {}
        for info in KINDS:
            with contextlib.suppress(errors.ApiError):  # a kind whose CRD is not served
                for raw in (await self._client.list(job_resource(info))).items:
                    meta = raw["metadata"]
                    if _runs(raw) and meta.get("uid") is not None:
                        namespace = meta.get("namespace") or "default"
                        self._track(f"{info.kind}/{namespace}/{meta['name']}", str(meta["uid"]))
                        found[str(meta["uid"])] = recorded_ports(raw)
        return found

    def _track(self, key: str, uid: str) -> None:
        previous = self._uids.get(key)
        if previous is not None and previous != uid:
            self._release(previous)  # a new job took the name of one deleted meanwhile
        self._uids[key] = uid

    def _release(self, uid: str) -> None:
        self.pool.release(uid)
        self._waiting.pop(uid, None)

    def _no_ports_event(self, job: Job, exc: portpool.PortsExhaustedError) -> Event:
        name = f"{job.kind} {job.metadata.namespace or 'default'}/{job.metadata.name}"
        return Event("Warning", "PortAllocationFailed", f"{name} waits for local ports: {exc}")

    def _pending(self, uid: str, retry_after: timedelta | None, event: Event) -> Pending:
        """Wait; the event only when this job was not already waiting for the same reason."""
        told = self._waiting.get(uid) == event.reason
        self._waiting[uid] = event.reason
        return Pending(retry_after=retry_after, event=None if told else event)

    async def _record(self, job: Job, ports: dict[str, int]) -> None:
        patch = {"metadata": {"annotations": {PORTS_ANNOTATION: json.dumps(ports, sort_keys=True)}}}
        await self._client.patch(
            job_resource(info_of(job)),
            name=job.metadata.name or "",
            namespace=job.metadata.namespace,
            patch=patch,
        )


def _runs(raw: Obj) -> bool:
    """Whether a listed job may hold ports: not suspended, not finished (read from the wire)."""
    spec, status = raw.get("spec") or {}, raw.get("status") or {}
    if (spec.get("runPolicy") or {}).get("suspend"):
        return False
    finished = {SUCCEEDED, FAILED}
    return not any(
        c.get("type") in finished and c.get("status") == "True"
        for c in status.get("conditions") or []
    )


def _key(job: Job) -> str:
    return f"{job.kind}/{job.metadata.namespace or 'default'}/{job.metadata.name}"
