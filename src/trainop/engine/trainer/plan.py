"""``plan`` for a TrainJob (spec §2.2 steps 2-8), pure: the objects to apply and the status.

Steps: skip a TrainJob managed by another controller (touch nothing) → an unsupported or
missing runtime is ``Failed``/``TrainingRuntimeNotSupported`` (upstream crashes instead) → while
unfinished: the runtime snapshot (when absent), then every plugin's objects in the registry's
fixed order, each carrying the controller ownerReference (create-vs-update rules of §2.4 are
decided by the plugins from ``Observed``); a plugin error becomes upstream's
``TrainJobResourcesCreationFailed`` event and ``error`` (the controller retries) → ``Suspended``
→ status from the JobSet → the deadline (which may fail the TrainJob and delete the JobSet).

Departures from v2.3.0 (docs/design/111): ``Complete`` and ``Failed`` are terminal (§7.1) — no
step removes ``Failed``, a finished TrainJob gets no objects and its conditions never change; a
JobSet that is missing before it was ever seen is not an error (the create's watch event brings
the next pass); a failed deadline JobSet delete is retried while the JobSet is seen. Reads no
clock (``now``), does no I/O; the MPI key pair comes from ``new_ssh_keys`` (called only when
the Secret must be created).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from trainop.api.trainer import constants as c
from trainop.engine.actions import Event
from trainop.engine.trainer import snapshot, status
from trainop.engine.trainer.containers import Raw, Wire, as_map, maps
from trainop.engine.trainer.info import build_info
from trainop.engine.trainer.network import CLUSTER, PodNetwork
from trainop.engine.trainer.plugins import registry
from trainop.engine.trainer.plugins.base import BuildContext, PlanError

EVENT_NOTE_LIMIT = 950


@dataclass(frozen=True, slots=True)
class Observed:
    """The TrainJob's live children (None: missing). ``pod_groups`` by apiVersion
    (``scheduling.x-k8s.io/v1alpha1``, ``scheduling.volcano.sh/v1beta1``)."""

    jobset: Raw | None = None
    pod_groups: Mapping[str, Raw] = field(default_factory=dict)
    mpi_secret: Raw | None = None
    mpi_hostfile: Raw | None = None
    snapshot: Raw | None = None


@dataclass(frozen=True, slots=True)
class Plan:
    """What to do now: server-side apply ``apply`` in order (field manager ``trainer``,
    force), delete JobSet ``<tj>`` if ``delete_jobset``, write ``status`` if it differs from
    the TrainJob's, record ``events``, requeue after ``requeue_after`` seconds; ``error`` is a
    failure to report (retry with backoff). ``skipped``: managed elsewhere, do nothing."""

    apply: list[Wire]
    status: Wire
    delete_jobset: bool = False
    requeue_after: float | None = None
    events: tuple[Event, ...] = ()
    error: str | None = None
    skipped: bool = False


def runtime_key(trainjob: Raw) -> str:
    """``<kind>.<apiGroup>`` of the runtimeRef (CRD defaults when absent)."""
    ref = as_map(as_map(trainjob.get("spec")).get("runtimeRef"))
    return f"{ref.get('kind', c.CLUSTER_TRAINING_RUNTIME)}.{ref.get('apiGroup', c.GROUP)}"


def is_supported(trainjob: Raw) -> bool:
    return runtime_key(trainjob) in c.RUNTIME_KEYS


def missing_runtime_message(trainjob: Raw) -> str:
    """Upstream's error text for a runtime that does not exist."""
    ref = as_map(as_map(trainjob.get("spec")).get("runtimeRef"))
    kind, name = ref.get("kind", c.CLUSTER_TRAINING_RUNTIME), ref.get("name", "")
    not_found = f'{c.PLURALS.get(str(kind), "")}.{c.GROUP} "{name}" not found'
    if kind == c.TRAINING_RUNTIME:
        return f"TrainingRuntime specified in TrainJob is not found: {not_found}"
    return f"not found ClusterTrainingRuntime specified in TrainJob: {not_found}"


def is_managed(trainjob: Raw) -> bool:
    managed_by = as_map(trainjob.get("spec")).get("managedBy")
    return managed_by in (None, c.MANAGED_BY_TRAINER)


def creation_failed(error: str) -> Event:
    """Upstream's one event (§2.8), its error cut at 950 characters."""
    shown = error if len(error) <= EVENT_NOTE_LIMIT else error[:EVENT_NOTE_LIMIT] + " ..."
    return Event(
        "Warning",
        c.EVENT_REASON_CREATION_FAILED,
        f"TrainJob resources reconciliation failed: {shown}",
    )


def plan_unsupported(trainjob: Raw, message: str, now: datetime) -> Plan:
    """``Failed``/``TrainingRuntimeNotSupported`` with ``message`` (unless managed elsewhere or
    already finished); no objects."""
    current = status.current(trainjob)
    if not is_managed(trainjob):
        return Plan([], current, skipped=True)
    if not status.is_finished(current):
        conditions = maps(current.get("conditions"))
        new = status.condition(c.CONDITION_FAILED, "True", c.REASON_RUNTIME_NOT_SUPPORTED, message)
        status.set_condition(conditions, new, now)
        current["conditions"] = conditions
    return Plan([], current)


def desired_objects(
    trainjob: Raw,
    runtime: Raw,
    observed: Observed,
    new_ssh_keys: Callable[[], tuple[str, str]],
    network: PodNetwork = CLUSTER,
) -> list[Wire]:
    """Every plugin's objects for this pass, in registry order (raises ``PlanError``)."""
    info = build_info(trainjob, runtime, network)
    if info.ml_policy.get("flux") is not None:
        raise PlanError("mlPolicy.flux is not supported by trainop")
    registry.enforce(info)
    context = BuildContext(
        jobset=observed.jobset,
        pod_groups=observed.pod_groups,
        mpi_secret=observed.mpi_secret,
        new_ssh_keys=new_ssh_keys,
    )
    return registry.build(info, context)


def plan(
    trainjob: Raw,
    runtime: Raw | None,
    *,
    observed: Observed,
    now: datetime,
    new_ssh_keys: Callable[[], tuple[str, str]],
    network: PodNetwork = CLUSTER,
) -> Plan:
    """One reconcile decision for ``trainjob`` run by ``runtime`` (the snapshot's or the live
    one; None when it does not exist), its pods addressed through ``network`` (note 133)."""
    if not is_managed(trainjob):
        return Plan([], status.current(trainjob), skipped=True)
    if not is_supported(trainjob):
        return plan_unsupported(trainjob, c.UNSUPPORTED_RUNTIME_PREFIX + runtime_key(trainjob), now)
    if runtime is None:
        return plan_unsupported(trainjob, missing_runtime_message(trainjob), now)
    current = status.current(trainjob)
    apply: list[Wire] = []
    events: list[Event] = []
    error = None
    if not status.is_finished(current):
        if observed.snapshot is None:
            apply.append(snapshot.config_map(trainjob, runtime))
        try:
            apply += desired_objects(trainjob, runtime, observed, new_ssh_keys, network)
        except PlanError as exc:
            error = str(exc)
            events.append(creation_failed(error))
        conditions = maps(current.get("conditions"))
        status.set_suspended(conditions, bool(as_map(trainjob.get("spec")).get("suspend")), now)
        if conditions:
            current["conditions"] = conditions
    if observed.jobset is not None:
        status.from_jobset(current, observed.jobset, now)
    return _deadline(
        trainjob, observed, now, Plan(apply, current, events=tuple(events), error=error)
    )


def _deadline(trainjob: Raw, observed: Observed, now: datetime, draft: Plan) -> Plan:
    exceeded, remaining = status.deadline(trainjob, draft.status, now)
    apply, delete = draft.apply, False
    if exceeded:
        status.fail_deadline(draft.status, now)
        apply = [o for o in apply if o.get("kind") != c.JOBSET]
        delete = True
    elif observed.jobset is not None:
        failed = status.find(maps(draft.status.get("conditions")), c.CONDITION_FAILED)
        delete = failed is not None and failed.get("reason") == c.REASON_DEADLINE_EXCEEDED
    return Plan(
        apply,
        draft.status,
        delete_jobset=delete,
        requeue_after=remaining,
        events=draft.events,
        error=draft.error,
    )


__all__ = ["Observed", "Plan", "plan", "plan_unsupported"]
