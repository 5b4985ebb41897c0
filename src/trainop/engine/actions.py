"""What a plan asks the controller to do: object actions, events, and the ``Plan`` itself.

Actions are generic over object kinds (pods, services, PodGroups, ConfigMaps, HPAs ...): the
controller maps ``apiVersion``/``kind`` to a resource once. Creates carry complete bodies with
deterministic names, so a create that meets ``AlreadyExists`` is simply a success (this replaces
upstream's expectations, see docs/design/004-engine.md). Each action knows the event upstream
records for its outcome (``outcome_event``); events in ``Plan.events`` are transitions.

Invariants: everything here is frozen; bodies are fresh dicts owned by the plan.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal

from trainop.api.types import JobStatus

Wire = dict[str, Any]
EventType = Literal["Normal", "Warning"]
# How upstream's event messages name an object kind; other kinds keep their Kind spelling.
_NOUNS = {"Pod": "pod", "Service": "service", "Job": "job"}


@dataclass(frozen=True, slots=True)
class Event:
    """A Kubernetes Event to record on the job."""

    type: EventType
    reason: str
    message: str


def _event(verb: str, kind: str, name: str, error: str | None) -> Event:
    if error is not None:
        gerund = f"{verb.lower()[:-1]}ing"
        return Event("Warning", f"Failed{verb}{kind}", f"Error {gerund}: {error}")
    message = f"{verb}d {_NOUNS.get(kind, kind)}: {name}"
    return Event("Normal", f"Successful{verb}{kind}", message)


@dataclass(frozen=True, slots=True)
class Create:
    """Create ``body`` (namespaced in the job's namespace).

    ``reuse_existing``: an object of that name that exists already, even one the job does not
    own, is used as it is (upstream's launcher ServiceAccount), not reported as foreign.
    ``created`` / ``failed`` (reason, message with ``{error}``) replace the usual outcome
    events for kinds that word them their own way (upstream's MPI pods).
    """

    body: Wire
    reuse_existing: bool = False
    created: Event | None = None
    failed: tuple[str, str] | None = None

    @property
    def kind(self) -> str:
        return str(self.body["kind"])

    @property
    def name(self) -> str:
        return str(self.body["metadata"]["name"])

    def outcome_event(self, error: str | None = None) -> Event:
        """The event for this action's result (``error`` is the API error text, if any)."""
        if error is not None and self.failed is not None:
            return Event("Warning", self.failed[0], self.failed[1].format(error=error))
        if error is None and self.created is not None:
            return self.created
        return _event("Create", self.kind, self.name, error)


@dataclass(frozen=True, slots=True)
class Update:
    """Replace the spec/data of an existing object with ``body`` (no event upstream)."""

    body: Wire

    @property
    def kind(self) -> str:
        return str(self.body["kind"])

    @property
    def name(self) -> str:
        return str(self.body["metadata"]["name"])


@dataclass(frozen=True, slots=True)
class Delete:
    """Delete one object; NotFound counts as success."""

    api_version: str
    kind: str
    name: str

    def outcome_event(self, error: str | None = None) -> Event:
        return _event("Delete", self.kind, self.name, error)


@dataclass(frozen=True, slots=True)
class DeleteJob:
    """Delete the job itself (TTL after finishing)."""

    name: str

    def outcome_event(self, error: str | None = None) -> Event:
        return _event("Delete", "Job", self.name, error)


Action = Create | Update | Delete | DeleteJob


@dataclass(frozen=True, slots=True)
class Plan:
    """The outcome of planning one job: ordered actions, the new status, events, requeue time.

    ``skipped`` says the job is not ours (``managedBy``) or not actionable (validation); then
    there are no actions and the status is the job's own.
    """

    actions: tuple[Action, ...]
    status: JobStatus
    events: tuple[Event, ...] = ()
    requeue_after: timedelta | None = None
    skipped: bool = False
