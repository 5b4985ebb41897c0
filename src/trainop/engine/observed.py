"""The observed world of one job, as raw dicts, and the slim views the engine reasons on.

``Observed`` holds what a Kubernetes client returned for the job's own objects: pods, services,
its PodGroup and the extra objects plugins ask for (HPA, ConfigMap, RBAC). ``pod_views`` projects
pods onto ``PodView``: replica (type in spec-key casing, index), phase, whether it is terminating
(and when a terminating pod counts as lost), its IP, the default container's exit code, the total
container restart count and the problems its containers or conditions report (spec 4.8: what
``pod_events`` turns into Warning events). ``settle_lost`` turns terminating pods that outlived
their grace period by ``LOST_AFTER`` into Failed ones (a pod on a lost node: docs/design/005).

Invariants: input dicts are only read, never mutated; pods whose labels do not map to a replica
of the job are ignored (as upstream ignores unparsable indexes).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from trainop.api.types import Job
from trainop.engine import naming
from trainop.frameworks.base import Framework, PodOutcome, Replica

Raw = Mapping[str, Any]
# How long past its grace period a terminating pod may stay before it counts as Failed.
LOST_AFTER = timedelta(seconds=60)


@dataclass(frozen=True, slots=True)
class Observed:
    """The job's children as read from the API (or a cache)."""

    pods: tuple[Raw, ...] = ()
    services: tuple[Raw, ...] = ()
    pod_group: Raw | None = None
    objects: tuple[Raw, ...] = ()


@dataclass(frozen=True, slots=True)
class PodProblem:
    """Something abnormal a pod reports: the Kubernetes reason and upstream's message."""

    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class PodView:
    """What the engine needs to know about one observed pod."""

    name: str
    replica: Replica
    phase: str
    terminating: bool
    exit_code: int | None
    restarts: int
    problems: tuple[PodProblem, ...] = ()
    lost_at: datetime | None = None  # terminating: when it counts as Failed if still present
    ip: str = ""  # status.podIP, once the kubelet reported one

    @property
    def outcome(self) -> PodOutcome:
        return PodOutcome(replica=self.replica, phase=self.phase, exit_code=self.exit_code)


def name_of(obj: Raw) -> str:
    """``metadata.name`` of a raw object ("" when absent)."""
    return str((obj.get("metadata") or {}).get("name") or "")


def _replica(pod: Raw, job: Job, framework: Framework) -> Replica | None:
    labels = (pod.get("metadata") or {}).get("labels") or {}
    by_label = {rt.lower(): rt for rt in job.spec.replica_specs}
    replica_type = by_label.get(str(labels.get(naming.REPLICA_TYPE_LABEL, "")))
    if replica_type is None:
        return None
    if replica_type in framework.unindexed_types:
        return Replica(replica_type, None)
    index = str(labels.get(naming.REPLICA_INDEX_LABEL, ""))
    return Replica(replica_type, int(index)) if index.isdigit() else None


def _exit_code(status: Raw, container: str) -> int | None:
    for entry in status.get("containerStatuses") or []:
        terminated = (entry.get("state") or {}).get("terminated")
        if entry.get("name") == container and terminated:
            return int(terminated.get("exitCode", 0))
    return None


def _restarts(status: Raw) -> int:
    entries = [
        *(status.get("containerStatuses") or []),
        *(status.get("initContainerStatuses") or []),
    ]
    return sum(int(entry.get("restartCount") or 0) for entry in entries)


def _container_problems(pod: str, entries: list[Raw]) -> list[PodProblem]:
    found = []
    for entry in entries:
        state, container = entry.get("state") or {}, entry.get("name")
        terminated, waiting = state.get("terminated") or {}, state.get("waiting") or {}
        if terminated and int(terminated.get("exitCode") or 0) != 0:
            text = (
                f"Error pod {pod} container {container} exitCode: {terminated.get('exitCode')}"
                f" terminated message: {terminated.get('message', '')}"
            )
            found.append(PodProblem(str(terminated.get("reason") or ""), text))
        if waiting.get("message"):
            text = f"Error pod {pod} container {container} waiting message: {waiting['message']}"
            found.append(PodProblem(str(waiting.get("reason") or ""), text))
    return found


def _problems(pod: str, status: Raw) -> tuple[PodProblem, ...]:
    """Spec 4.8: container states, else init container states, else the latest condition."""
    for key in ("containerStatuses", "initContainerStatuses"):
        if status.get(key):
            return tuple(_container_problems(pod, status[key]))
    entries = [c for c in status.get("conditions") or [] if isinstance(c, Mapping)]
    if not entries:
        return ()
    latest = max(entries, key=lambda c: str(c.get("lastTransitionTime") or ""))
    if latest.get("status") == "True":
        return ()
    text = f"Error pod {pod} condition message: {latest.get('message', '')}"
    return (PodProblem(str(latest.get("reason") or ""), text),)


def _lost_at(meta: Raw) -> datetime | None:
    """``deletionTimestamp`` + ``deletionGracePeriodSeconds`` + ``LOST_AFTER``; None if unset."""
    stamp = meta.get("deletionTimestamp")
    if not stamp:
        return None
    try:
        deleted = datetime.fromisoformat(str(stamp))
    except ValueError:
        return None
    grace = timedelta(seconds=max(int(meta.get("deletionGracePeriodSeconds") or 0), 0))
    return deleted + grace + LOST_AFTER


def settle_lost(pods: tuple[PodView, ...], now: datetime) -> tuple[PodView, ...]:
    """Terminating pods not yet finished whose ``lost_at`` has come count as Failed from now on.

    Such a pod's kubelet has not confirmed its end long after the grace period: its node is
    lost or its kubelet gone. Upstream counted every terminating Running pod as failed at
    once; trainop waits for the grace period plus ``LOST_AFTER``, then does the same (exit
    code unknown, so ``ExitCode`` treats it as retryable, as an evicted pod).
    """
    return tuple(
        replace(pod, phase="Failed")
        if pod.lost_at is not None
        and pod.phase not in ("Succeeded", "Failed")
        and now >= pod.lost_at
        else pod
        for pod in pods
    )


def next_lost(pods: tuple[PodView, ...], now: datetime) -> timedelta | None:
    """Time until the next terminating, unfinished pod counts as lost; None if none will."""
    waits = [
        pod.lost_at - now
        for pod in pods
        if pod.lost_at is not None
        and pod.phase not in ("Succeeded", "Failed")
        and pod.lost_at > now
    ]
    return min(waits, default=None)


def pod_views(observed: Observed, job: Job, framework: Framework) -> tuple[PodView, ...]:
    """Views of the observed pods that belong to a replica of ``job``, sorted by name."""
    views = []
    for pod in observed.pods:
        replica = _replica(pod, job, framework)
        if replica is None:
            continue
        status, name = pod.get("status") or {}, name_of(pod)
        meta = pod.get("metadata") or {}
        views.append(
            PodView(
                name=name,
                replica=replica,
                phase=str(status.get("phase") or "Pending"),
                terminating=bool(meta.get("deletionTimestamp")),
                exit_code=_exit_code(status, framework.info.default_container),
                restarts=_restarts(status),
                problems=_problems(name, status),
                lost_at=_lost_at(meta),
                ip=str(status.get("podIP") or ""),
            )
        )
    return tuple(sorted(views, key=lambda view: view.name))
