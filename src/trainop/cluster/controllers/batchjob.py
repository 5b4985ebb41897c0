"""The part of Kubernetes' Job controller that an MPIJob v2beta1 launcher needs, for local mode.

A ``batch/v1`` Job here runs one pod at a time to one success (``completions`` and
``parallelism`` 1, the launcher's shape): a pod from the template (``generateName:
<job>-``, the Job's selector labels, owned by the Job); a Failed pod is replaced while the
failures stay within ``backoffLimit`` (default 6), and a pod with ``restartPolicy: OnFailure``
restarting in place counts its restarts toward it, as Kubernetes does; then ``Failed`` with
``BackoffLimitExceeded``. ``activeDeadlineSeconds`` fails the Job with ``DeadlineExceeded``;
``suspend`` deletes the active pod; ``ttlSecondsAfterFinished`` deletes the finished Job (its
pods go with the garbage collector). Status: ``active``, ``succeeded``, ``failed``,
``startTime``, ``completionTime`` and the ``Complete``/``Failed``/``Suspended`` conditions,
with Kubernetes' reasons and messages.

``step`` is the pure decision for one Job; ``LocalJobController`` applies it to every Job on
each pass (woken by Job and pod watch events, and at least every ``PASS_SECONDS``).
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from trainop import errors
from trainop.kube.client import Client, Obj
from trainop.kube.clock import Clock
from trainop.kube.informer import Handlers, Informer
from trainop.kube.resources import PODS, resource_for

log = logging.getLogger(__name__)
JOBS = resource_for(api_version="batch/v1", kind="Job")
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
DEFAULT_BACKOFF_LIMIT = 6
PASS_SECONDS = 1.0
_TERMINAL = ("Succeeded", "Failed")


@dataclass(slots=True)
class Step:
    """What to do for one Job: pods to create and delete, the status to write, a deletion."""

    create: list[Obj] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)
    status: dict[str, Any] | None = None
    delete_job: bool = False


def _time(text: object) -> datetime | None:
    return datetime.fromisoformat(text.replace("Z", "+00:00")) if isinstance(text, str) else None


def _stamp(now: datetime) -> str:
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


def _condition(status: Mapping[str, Any], ctype: str) -> Mapping[str, Any] | None:
    found = (c for c in status.get("conditions") or [] if c.get("type") == ctype)
    return next((c for c in found if c.get("status") == "True"), None)


def pod_for(job: Mapping[str, Any]) -> Obj:
    """A pod from the Job's template, labelled and owned as the Job controller makes it."""
    template = copy.deepcopy(job["spec"].get("template") or {})
    meta = job["metadata"]
    metadata = template.get("metadata") or {}
    metadata["generateName"] = f"{meta['name']}-"
    metadata["namespace"] = meta.get("namespace")
    metadata.pop("ownerReferences", None)
    labels = dict(metadata.get("labels") or {})
    labels |= {
        JOB_NAME_LABEL: meta["name"],
        "job-name": meta["name"],
        CONTROLLER_UID_LABEL: meta.get("uid", ""),
        "controller-uid": meta.get("uid", ""),
    }
    metadata["labels"] = labels
    metadata["ownerReferences"] = [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": meta["name"],
            "uid": meta.get("uid", ""),
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": template["spec"]}


def _restarts(pod: Mapping[str, Any]) -> int:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return sum(int(s.get("restartCount") or 0) for s in statuses)


def step(job: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], now: datetime) -> Step:
    """The decision for one Job given its pods (pure)."""
    spec, status = job.get("spec") or {}, dict(job.get("status") or {})
    result = Step()
    finished = _condition(status, "Complete") or _condition(status, "Failed")
    if finished is not None:
        ttl = spec.get("ttlSecondsAfterFinished")
        done_at = _time(status.get("completionTime")) or _time(finished.get("lastTransitionTime"))
        if ttl is not None and done_at is not None and now >= done_at + timedelta(seconds=ttl):
            result.delete_job = True
        return result
    live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
    active = [p for p in live if (p.get("status") or {}).get("phase") not in _TERMINAL]
    succeeded = sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Succeeded")
    failed = sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Failed")
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != "Suspended"]
    new: dict[str, Any] = {}
    if spec.get("suspend"):
        result.delete = [str(p["metadata"]["name"]) for p in active]
        suspended = {"type": "Suspended", "status": "True", "reason": "JobSuspended",
                     "message": "Job suspended", "lastTransitionTime": _stamp(now)}  # fmt: skip
        previous = _condition(status, "Suspended")
        conditions.append(dict(previous) if previous else suspended)
        new = {"active": 0, "conditions": conditions}
    else:
        if status.get("startTime") is None or _condition(status, "Suspended"):
            new["startTime"] = _stamp(now)
        started = _time(new.get("startTime") or status.get("startTime")) or now
        limit = spec.get("backoffLimit", DEFAULT_BACKOFF_LIMIT)
        restarts = sum(_restarts(p) for p in active)
        deadline = spec.get("activeDeadlineSeconds")
        failure: tuple[str, str] | None = None
        if succeeded >= 1:
            conditions.append(_true("Complete", "", "", now))
            new["completionTime"] = _stamp(now)
        elif failed + restarts > limit:
            failure = ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
        elif deadline is not None and now >= started + timedelta(seconds=deadline):
            failure = ("DeadlineExceeded", "Job was active longer than specified deadline")
        if failure is not None:
            conditions.append(_true("Failed", *failure, now))
            result.delete = [str(p["metadata"]["name"]) for p in active]
        elif succeeded == 0 and not active and not [p for p in pods if p not in live]:
            result.create.append(pod_for(job))  # podReplacementPolicy Failed: none terminating
        running = 0 if failure or succeeded else len(active) + len(result.create)
        new |= {"active": running, "conditions": conditions}
    new |= {"succeeded": succeeded, "failed": failed}
    merged = {**status, **new}
    merged = {k: v for k, v in merged.items() if v not in (0, [], None) or k == "active"}
    if merged.get("active") == 0:
        merged.pop("active")
    if merged != {k: v for k, v in status.items() if v not in (0, [], None)}:
        result.status = merged
    return result


def _true(ctype: str, reason: str, message: str, now: datetime) -> dict[str, Any]:
    condition = {"type": ctype, "status": "True", "lastProbeTime": _stamp(now),
                 "lastTransitionTime": _stamp(now)}  # fmt: skip
    if reason:
        condition |= {"reason": reason, "message": message}
    return condition


class LocalJobController:
    """Runs ``step`` over every Job whenever a Job or pod changes (module docstring)."""

    def __init__(self, *, client: Client, clock: Clock, namespace: str | None = None) -> None:
        self._client, self._clock = client, clock
        self._jobs = Informer(client, JOBS, namespace=namespace, sleep=clock.sleep)
        self._pods = Informer(
            client, PODS, namespace=namespace, label_selector=JOB_NAME_LABEL, sleep=clock.sleep
        )
        self._wake = asyncio.Event()
        # Pods created but not in the cache yet, per Job uid: no second pod meanwhile (the
        # Job controller's "expectations").
        self._unseen: dict[str, set[str]] = {}
        for informer in (self._jobs, self._pods):
            informer.add_handlers(Handlers(lambda old, new: self._wake.set()))

    async def run(self) -> None:
        tasks = [asyncio.create_task(i.run()) for i in (self._jobs, self._pods)]
        try:
            await self._jobs.synced.wait()
            await self._pods.synced.wait()
            while True:
                self._wake.clear()
                await self.sync_once()
                ticker = asyncio.create_task(self._clock.sleep(PASS_SECONDS))
                waker = asyncio.create_task(self._wake.wait())
                await asyncio.wait({ticker, waker}, return_when=asyncio.FIRST_COMPLETED)
                for task in (ticker, waker):
                    task.cancel()
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def sync_once(self) -> None:
        """One pass over every cached Job (errors are logged; the next pass retries)."""
        for job in self._jobs.items():
            uid = job["metadata"].get("uid")
            pods = [
                p
                for p in self._pods.items()
                if any(r.get("uid") == uid for r in p["metadata"].get("ownerReferences") or [])
            ]
            unseen = self._unseen.get(uid or "", set()) - {p["metadata"]["name"] for p in pods}
            self._unseen[uid or ""] = unseen
            decision = step(job, pods, self._clock.now())
            if unseen:
                decision.create = []
            try:
                await self._apply(job, decision)
            except errors.ApiError as exc:
                log.warning("job %s: %s; retrying", job["metadata"]["name"], exc)

    async def _apply(self, job: Obj, decision: Step) -> None:
        namespace = job["metadata"].get("namespace")
        name = job["metadata"]["name"]
        if decision.delete_job:
            await _ignore_missing(self._client.delete(JOBS, name=name, namespace=namespace))
            return
        for victim in decision.delete:
            await _ignore_missing(self._client.delete(PODS, name=victim, namespace=namespace))
        for pod in decision.create:
            created = await self._client.create(PODS, pod, namespace=namespace)
            uid = str(job["metadata"].get("uid") or "")
            self._unseen.setdefault(uid, set()).add(created["metadata"]["name"])
        if decision.status is not None:
            body = {**job, "status": decision.status}
            await self._client.replace(JOBS, body, namespace=namespace, subresource="status")


async def _ignore_missing(call: Any) -> None:
    try:
        await call
    except errors.NotFoundError:
        return
