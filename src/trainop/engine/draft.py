"""``Draft``: the plan under construction inside one ``plan`` call, and its shared edits.

Every step of ``plan`` (``completion``, ``suspension``, ``restarts``, ``children``) receives the
draft and appends actions and events or replaces its status. The draft is private to one call
(hence mutable); what leaves it is the frozen ``Plan`` of ``result``. ``delete_pod`` records each
pod it deletes so that the status later counts it as gone (docs/design/004).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from trainop.api.types import Job, JobStatus
from trainop.engine import conditions
from trainop.engine.actions import Action, Delete, Event, Plan
from trainop.engine.observed import Observed, PodView, name_of
from trainop.frameworks.base import Framework


@dataclass(slots=True)
class Draft:
    """The plan being built: the inputs it reads and what it has decided so far."""

    job: Job
    framework: Framework
    observed: Observed
    pods: tuple[PodView, ...]
    now: datetime
    status: JobStatus
    actions: list[Action] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    deleted: set[str] = field(default_factory=set)
    requeue_after: timedelta | None = None

    @property
    def conditions(self) -> conditions.Conditions:
        return tuple(self.status.conditions or ())

    def set(self, condition_type: str, suffix: str, message: str, status: str = "True") -> None:
        """Set a condition (reason ``<Kind><suffix>``) by the rules of ``conditions``."""
        new, events = conditions.set_condition(
            self.conditions, type=condition_type, reason=f"{self.framework.kind}{suffix}",
            message=message, now=self.now, status=status,
        )  # fmt: skip
        self.status = self.status.model_copy(update={"conditions": list(new)})
        self.events += events

    def update_status(self, **fields: object) -> None:
        self.status = self.status.model_copy(update=fields)

    def requeue(self, after: timedelta | None) -> None:
        """Ask to be planned again ``after`` from now (the earliest request wins)."""
        if after is not None and (self.requeue_after is None or after < self.requeue_after):
            self.requeue_after = max(after, timedelta(0))

    def result(self) -> Plan:
        unique = tuple(dict.fromkeys(self.events))
        return Plan(tuple(self.actions), self.status, unique, self.requeue_after)


def delete_pod(draft: Draft, pod: PodView, *, with_service: bool = True) -> None:
    """Delete ``pod`` (once; not when already terminating) and its same-named Service."""
    if pod.terminating or pod.name in draft.deleted:
        return
    draft.deleted.add(pod.name)
    draft.actions.append(Delete("v1", "Pod", pod.name))
    services = {name_of(s) for s in draft.observed.services}
    if with_service and pod.name in services:
        draft.actions.append(Delete("v1", "Service", pod.name))


def delete_pod_group(draft: Draft) -> None:
    """Delete the job's PodGroup, if there is one not already being deleted (spec 8.2)."""
    group = draft.observed.pod_group
    if group is not None and not (group.get("metadata") or {}).get("deletionTimestamp"):
        draft.events.append(
            Event("Normal", "JobTerminated", "Job has been terminated. Deleting PodGroup")
        )
        draft.actions.append(Delete(str(group.get("apiVersion")), "PodGroup", name_of(group)))
