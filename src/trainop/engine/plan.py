"""``plan(job, observed, framework, topology, now)``: the one reconcile decision, pure.

Steps, each a function below: default the job → skip if not ours (``managedBy``) or invalid →
ensure ``Created`` → finished? clean up and apply TTL → suspended? delete pods, Services,
PodGroup → resume → start time → backoff/deadline → PodGroup (Volcano may hold here) → extra
objects → pods and Services per replica → counts and conditions → if that finished the job, the
finished step in the same pass. Because the status describes the world *after* the plan's own
actions, applying a plan and planning again yields no actions and the same status.

Neighbours: ``desired`` (bodies), ``status`` (rules), ``policies`` (time/retry), ``gang``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from trainop.api.defaults import apply_defaults
from trainop.api.types import (
    CREATED,
    FAILED,
    MANAGED_BY_TRAINING_OPERATOR,
    RUNNING,
    SUCCEEDED,
    SUSPENDED,
    Job,
    JobStatus,
    ReplicaStatus,
)  # fmt: skip
from trainop.engine import conditions, desired, gang, naming, policies, status
from trainop.engine.actions import Action, Create, Delete, DeleteJob, Event, Plan, Update, Wire
from trainop.engine.observed import Observed, PodView, name_of, pod_views
from trainop.frameworks.base import Framework, FrameworkOptions, Replica, replicas_of
from trainop.frameworks.topology import Topology


@dataclass(frozen=True, slots=True)
class EngineOptions:
    """Operator-wide settings: the gang scheduler (empty: off) and the plugins' options."""

    gang_scheduler_name: str = ""
    frameworks: FrameworkOptions = field(default_factory=FrameworkOptions)


@dataclass(slots=True)
class _Draft:
    """The plan being built; private to one ``plan`` call (so mutable)."""

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

    def set(self, condition_type: str, suffix: str, message: str, status: str = "True") -> None:
        current = tuple(self.status.conditions or ())
        new, events = conditions.set_condition(
            current, type=condition_type, reason=f"{self.framework.kind}{suffix}",
            message=message, now=self.now, status=status,
        )  # fmt: skip
        self.status = self.status.model_copy(update={"conditions": list(new)})
        self.events += events

    def update_status(self, **fields: object) -> None:
        self.status = self.status.model_copy(update=fields)

    def requeue(self, after: timedelta | None) -> None:
        if after is not None and (self.requeue_after is None or after < self.requeue_after):
            self.requeue_after = max(after, timedelta(0))

    def result(self) -> Plan:
        unique = tuple(dict.fromkeys(self.events))
        return Plan(tuple(self.actions), self.status, unique, self.requeue_after)


def plan(
    job: Job,
    observed: Observed,
    framework: Framework,
    topology: Topology,
    now: datetime,
    *,
    options: EngineOptions | None = None,
) -> Plan:
    """Everything to do for ``job`` given what was observed at ``now`` (inputs not mutated)."""
    job = apply_defaults(job)
    current = job.status or JobStatus()
    if job.run_policy.managed_by not in (None, MANAGED_BY_TRAINING_OPERATOR):
        return Plan((), current, skipped=True)
    problems = framework.validate(job=job) if framework.validate is not None else ()
    if problems:
        message = f"{framework.kind} failed validation because {'; '.join(problems)}"
        warning = Event("Warning", f"{framework.kind}FailedValidation", message)
        return Plan((), current, (warning,), skipped=True)
    draft = _Draft(job, framework, observed, pod_views(observed, job, framework), now, current)
    if not any(c.type == CREATED for c in current.conditions or ()):
        draft.set(CREATED, "Created", f"{framework.kind} {job.metadata.name} is created.")
    if conditions.is_finished(tuple(draft.status.conditions or ())):
        _finish(draft)
    elif job.run_policy.suspend:
        _suspend(draft)
    else:
        _run(draft, topology, options or EngineOptions())
    return draft.result()


def _delete_pod(draft: _Draft, pod: PodView, *, with_service: bool = True) -> None:
    if pod.terminating or pod.name in draft.deleted:
        return
    draft.deleted.add(pod.name)
    draft.actions.append(Delete("v1", "Pod", pod.name))
    services = {name_of(s) for s in draft.observed.services}
    if with_service and pod.name in services:
        draft.actions.append(Delete("v1", "Service", pod.name))


def _delete_pod_group(draft: _Draft) -> None:
    group = draft.observed.pod_group
    if group is not None and not (group.get("metadata") or {}).get("deletionTimestamp"):
        draft.events.append(
            Event("Normal", "JobTerminated", "Job has been terminated. Deleting PodGroup")
        )
        draft.actions.append(Delete(str(group.get("apiVersion")), "PodGroup", name_of(group)))


def _finish(draft: _Draft) -> None:
    """A finished job: cleanPodPolicy, PodGroup deletion, completion time, TTL (spec 4.3.3)."""
    run_policy = draft.job.run_policy
    for pod in policies.cleanup_targets(run_policy.clean_pod_policy, draft.pods):
        _delete_pod(draft, pod)
    _delete_pod_group(draft)
    if draft.status.completion_time is None:
        draft.update_status(completion_time=draft.now)
    if conditions.is_true(tuple(draft.status.conditions or ()), SUCCEEDED):
        draft.update_status(replica_statuses=_moved_active(draft.status, "succeeded"))
    remaining = policies.ttl_remaining(run_policy, draft.status, draft.now)
    if remaining is not None and remaining <= timedelta(0):
        draft.actions.append(DeleteJob(draft.job.metadata.name or ""))
    else:
        draft.requeue(remaining)


def _moved_active(current: JobStatus, into: str | None) -> dict[str, ReplicaStatus]:
    """Replica statuses with ``active`` zeroed (and added to ``into`` when given)."""
    result = {}
    for rt, counts in (current.replica_statuses or {}).items():
        update: dict[str, object] = {"active": None}
        if into is not None and counts.active:
            update[into] = (getattr(counts, into) or 0) + counts.active
        result[rt] = counts.model_copy(update=update)
    return result


def _suspend(draft: _Draft) -> None:
    """Suspended: no pods, Services or PodGroup; Running → False, Suspended=True (spec 5.7)."""
    for pod in draft.pods:
        _delete_pod(draft, pod, with_service=False)
    for service in draft.observed.services:
        draft.actions.append(Delete("v1", "Service", name_of(service)))
    _delete_pod_group(draft)
    if draft.framework.deletes_extras_on_suspend:
        for obj in draft.observed.objects:
            draft.actions.append(
                Delete(str(obj.get("apiVersion")), str(obj.get("kind")), name_of(obj))
            )
    draft.update_status(replica_statuses=_moved_active(draft.status, None))
    message = f"{draft.framework.kind} {draft.job.metadata.name} is suspended."
    if conditions.is_true(tuple(draft.status.conditions or ()), RUNNING):
        draft.set(RUNNING, "Suspended", message, status="False")
    draft.set(SUSPENDED, "Suspended", message)


def _run(draft: _Draft, topology: Topology, options: EngineOptions) -> None:
    """A running job: resume, start time, policies, gang, children, status."""
    if conditions.is_true(tuple(draft.status.conditions or ()), SUSPENDED):
        message = f"{draft.framework.kind} {draft.job.metadata.name} is resumed."
        draft.set(SUSPENDED, "Resumed", message, status="False")
        draft.update_status(start_time=draft.now)
    if draft.status.start_time is None:
        draft.update_status(start_time=draft.now)
    restarts = _pending_restarts(draft)
    if _fail_by_policy(draft, restarts):
        return
    scheduler = gang.scheduler_for(options.gang_scheduler_name)
    if scheduler is not None and not _sync_pod_group(draft, scheduler):
        draft.update_status(last_reconcile_time=draft.now)
        return
    _sync_extra_objects(draft, options.frameworks)
    for pod in restarts:
        _delete_pod(draft, pod, with_service=False)
    _record_restarts(draft, restarts)
    _sync_pods(draft, topology, options, scheduler)
    _sync_services(draft)
    _update_status(draft)


def _pending_restarts(draft: _Draft) -> tuple[PodView, ...]:
    """Live pods in phase Failed that their replica's restart policy restarts."""
    found = []
    for pod in draft.pods:
        spec = draft.job.spec.replica_specs[pod.replica.type]
        in_range = pod.replica.position < replicas_of(draft.job, pod.replica.type)
        policy = spec.restart_policy or "Never"
        failed = pod.phase == "Failed" and not pod.terminating and in_range
        if failed and policies.is_retryable(policy, pod.exit_code):
            found.append(pod)
    return tuple(found)


def _fail_by_policy(draft: _Draft, restarts: tuple[PodView, ...]) -> bool:
    """Backoff limit or active deadline exceeded: fail the job and delete every pod (5.3, 5.4)."""
    run_policy, name = draft.job.run_policy, draft.job.metadata.name
    live = sum(pod.restarts for pod in draft.pods if not pod.terminating)
    total = policies.recorded_restarts(draft.status) + live + len(restarts)
    remaining = policies.deadline_remaining(run_policy, draft.status, draft.now)
    if policies.backoff_exceeded(run_policy, restarts=total):
        reason = f"Job {name} has failed because it has reached the specified backoff limit"
    elif remaining is not None and remaining <= timedelta(0):
        reason = f"Job {name} has failed because it was active longer than specified deadline"
    else:
        draft.requeue(remaining)
        return False
    for pod in draft.pods:
        _delete_pod(draft, pod)
    tallies = status.tally(draft.job, draft.pods, frozenset(draft.deleted))
    draft.update_status(
        replica_statuses=status.replica_statuses(draft.job, draft.framework, tallies)
    )
    draft.set(FAILED, "Failed", reason)
    _finish(draft)
    return True


def _record_restarts(draft: _Draft, restarts: tuple[PodView, ...]) -> None:
    if restarts:
        done = policies.recorded_restarts(draft.status) + sum(1 + pod.restarts for pod in restarts)
        draft.update_status(restarts=done)


def _sync_pod_group(draft: _Draft, scheduler: gang.GangScheduler) -> bool:
    """Create or update the PodGroup; False while Volcano has not admitted it."""
    current = draft.observed.pod_group
    wanted = gang.pod_group(draft.job, scheduler, current)
    if current is None:
        draft.actions.append(Create(wanted))
    elif current.get("spec") != wanted["spec"]:
        draft.actions.append(Update(wanted))
    return gang.is_admitted(scheduler, current)


def _differs(current: object, wanted: Wire) -> bool:
    if not isinstance(current, dict):
        return True
    skip = ("metadata", "status", "apiVersion", "kind")
    return any(current.get(key) != value for key, value in wanted.items() if key not in skip)


def _sync_extra_objects(draft: _Draft, options: FrameworkOptions) -> None:
    """Create the plugin's extra objects that are missing, update those that differ."""
    rule = draft.framework.extra_objects
    if rule is None:
        return
    running = frozenset(p.name for p in draft.pods if p.phase == "Running" and not p.terminating)
    current = {(str(o.get("kind")), name_of(o)): o for o in draft.observed.objects}
    for obj in rule(job=draft.job, running_pods=running, options=options):
        meta = obj.get("metadata") or {}
        extra = {key: value for key, value in meta.items() if key != "name"}
        body = {**obj, "metadata": naming.owned_metadata(draft.job, meta["name"], **extra)}
        found = current.get((str(obj["kind"]), meta["name"]))
        if found is None:
            draft.actions.append(Create(body))
        elif _differs(found, body):
            draft.actions.append(Update(body))


def _replicas(draft: _Draft) -> list[Replica]:
    """Every replica the job should have, in the plugin's creation order."""
    specs, framework = draft.job.spec.replica_specs, draft.framework
    order = [rt for rt in framework.creation_order or framework.info.replica_types if rt in specs]
    order += [rt for rt in specs if rt not in order]
    return [
        Replica(rt, None) if rt in framework.unindexed_types else Replica(rt, index)
        for rt in order
        for index in range(replicas_of(draft.job, rt) if rt not in framework.unindexed_types else 1)
    ]


def _sync_pods(
    draft: _Draft, topology: Topology, options: EngineOptions, scheduler: gang.GangScheduler | None
) -> None:
    """Create the pods of replicas without any pod; delete pods beyond ``replicas``."""
    wanted = _replicas(draft)
    present = {pod.replica for pod in draft.pods}
    for pod in draft.pods:
        if pod.replica not in wanted:
            _delete_pod(draft, pod)
    for replica in wanted:
        if replica in present:
            continue
        body, warnings = desired.pod(
            job=draft.job, framework=draft.framework, replica=replica,
            topology=topology, options=options.frameworks,
        )  # fmt: skip
        if scheduler is not None:
            body, more = gang.decorate(draft.job, replica, body, scheduler)
            warnings += more
        draft.actions.append(Create(body))
        draft.events += warnings


def _sync_services(draft: _Draft) -> None:
    """One headless Service per replica; Services of replicas beyond ``replicas`` deleted."""
    if not draft.framework.creates_services:
        return
    wanted = {naming.pod_name(draft.job, replica): replica for replica in _replicas(draft)}
    present = {name_of(service) for service in draft.observed.services}
    for name in sorted(present - set(wanted)):
        if not draft.actions.count(Delete("v1", "Service", name)):
            draft.actions.append(Delete("v1", "Service", name))
    for name, replica in wanted.items():
        if name not in present:
            body = desired.service(job=draft.job, framework=draft.framework, replica=replica)
            draft.actions.append(Create(body))


def _update_status(draft: _Draft) -> None:
    """Counts and conditions from the world as this plan leaves it; finish if that finished."""
    job, framework = draft.job, draft.framework
    tallies = status.tally(job, draft.pods, frozenset(draft.deleted))
    draft.update_status(replica_statuses=status.replica_statuses(job, framework, tallies))
    current = tuple(draft.status.conditions or ())
    new, events = status.conditions_for(job, framework, tallies, draft.pods, current, draft.now)
    draft.update_status(conditions=list(new))
    draft.events += events
    if conditions.is_finished(new):
        _finish(draft)
