"""The complete write history of pods, Services and jobs, and what it must show after crashes.

``History.listen`` is a ``Store`` listener of the embedded API server: it is called on the
server's loop for every committed write, so nothing is missed, however long the run and however
short the server's own event log. ``check_history`` states the crash-safety claims
(``docs/design/050-crash-safety.md``) over the recorded writes.
"""

from __future__ import annotations

import threading
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from trainop.cluster.apiserver import store
from trainop.engine.naming import JOB_NAME_LABEL, REPLICA_INDEX_LABEL, REPLICA_TYPE_LABEL

PODS = "core/pods"
SERVICES = "core/services"

Slot = tuple[str, str, str]  # (job, replica type, replica index)


@dataclass(frozen=True)
class Write:
    """One committed write as the store saw it (conditions only for jobs)."""

    rv: int
    type: str
    resource: str
    name: str
    uid: str
    labels: dict[str, str]
    owner_uids: tuple[str, ...]
    true_conditions: frozenset[str] = frozenset()

    def slot(self) -> Slot:
        return (
            self.labels.get(JOB_NAME_LABEL, ""),
            self.labels.get(REPLICA_TYPE_LABEL, ""),
            self.labels.get(REPLICA_INDEX_LABEL, ""),
        )


@dataclass
class History:
    """Every committed write of pods, Services and the ``job_resources`` (store keys)."""

    job_resources: frozenset[str]
    writes: list[Write] = field(default_factory=list)
    succeeded: set[str] = field(default_factory=set)
    pods_created: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def listen(self, event: store.Event) -> None:
        resource = event.stored.key.resource
        is_job = resource in self.job_resources
        if resource not in (PODS, SERVICES) and not is_job:
            return
        meta = event.stored.obj.get("metadata") or {}
        write = Write(
            rv=event.stored.rv,
            type=event.type,
            resource=resource,
            name=event.stored.key.name,
            uid=str(meta.get("uid", "")),
            labels=dict(meta.get("labels") or {}),
            owner_uids=tuple(o.get("uid", "") for o in meta.get("ownerReferences") or ()),
            true_conditions=true_conditions(event.stored.obj) if is_job else frozenset(),
        )
        with self.lock:
            self.writes.append(write)
            self.pods_created += resource == PODS and event.type == store.ADDED
            if "Succeeded" in write.true_conditions:
                self.succeeded.add(write.name)

    def progress(self) -> tuple[int, int]:
        """(pods created so far, jobs succeeded so far)."""
        with self.lock:
            return self.pods_created, len(self.succeeded)

    def snapshot(self) -> list[Write]:
        with self.lock:
            return list(self.writes)


def true_conditions(job: dict[str, Any]) -> frozenset[str]:
    conditions = (job.get("status") or {}).get("conditions") or []
    return frozenset(c.get("type", "") for c in conditions if c.get("status") == "True")


def duplicates(writes: Iterable[Write], resource: str) -> list[str]:
    """Every moment two objects of ``resource`` were live for one name or one slot."""
    live_names: dict[str, str] = {}
    live_slots: dict[Slot, set[str]] = defaultdict(set)
    found = []
    for w in (w for w in writes if w.resource == resource):
        slot = w.slot()
        if w.type == store.ADDED:
            if w.name in live_names:
                found.append(f"rv {w.rv}: {w.name} added while {live_names[w.name]} is live")
            if live_slots[slot]:
                found.append(f"rv {w.rv}: {w.name} added while {live_slots[slot]} hold {slot}")
            live_names[w.name] = w.uid
            live_slots[slot].add(w.name)
        elif w.type == store.DELETED:
            live_names.pop(w.name, None)
            live_slots[slot].discard(w.name)
    return found


def check_history(writes: list[Write], *, jobs: set[str], slots: set[Slot]) -> None:
    """Assert the claims of 050-crash-safety over ``writes`` for jobs that all succeed."""
    check_jobs(writes, jobs)
    for resource in (PODS, SERVICES):
        found = duplicates(writes, resource)
        assert not found, f"{len(found)} duplicate {resource}: {found[:10]}"
    pods = [w for w in writes if w.resource == PODS]
    created = Counter(w.slot() for w in pods if w.type == store.ADDED)
    assert set(created) == slots, "the pods created are not the jobs' replica slots"
    again = {slot: n for slot, n in created.items() if n > 1}
    assert not again, f"replica slots whose pod was created more than once: {again}"
    deleted = [w.name for w in pods if w.type == store.DELETED]
    assert not deleted, f"pods deleted although every job succeeds: {deleted[:10]}"
    services = Counter(w.name for w in writes if w.resource == SERVICES and w.type == "ADDED")
    again_services = {name: n for name, n in services.items() if n > 1}
    assert not again_services, f"Services created more than once: {again_services}"
    job_uids = {w.name: w.uid for w in writes if w.resource not in (PODS, SERVICES)}
    for w in writes:
        if w.resource in (PODS, SERVICES):
            owner = job_uids[w.slot()[0]]
            assert w.owner_uids == (owner,), f"{w.name} is not owned by its job ({owner})"


def check_jobs(writes: list[Write], jobs: set[str]) -> None:
    """Each job stored once, never replaced or deleted; Succeeded never taken back, no Failed."""
    job_writes = [w for w in writes if w.resource not in (PODS, SERVICES)]
    added = {w.name: w.uid for w in job_writes if w.type == store.ADDED}
    assert set(added) == jobs, f"jobs never stored: {sorted(jobs - set(added))[:10]}"
    assert len(added) == sum(w.type == store.ADDED for w in job_writes), "a job added twice"
    assert {w.name: w.uid for w in job_writes} == added, "a job was replaced"
    deleted = [w.name for w in job_writes if w.type == store.DELETED]
    assert not deleted, f"jobs deleted: {deleted}"
    finished: set[str] = set()
    for w in job_writes:
        assert "Failed" not in w.true_conditions, f"rv {w.rv}: {w.name} Failed"
        if w.name in finished:
            assert "Succeeded" in w.true_conditions, f"rv {w.rv}: {w.name} Succeeded taken back"
        if "Succeeded" in w.true_conditions:
            finished.add(w.name)
