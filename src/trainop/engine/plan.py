"""``plan(job, observed, framework, topology, now)``: the one reconcile decision, pure.

Steps: default the job → skip if not ours (``managedBy``) or invalid → add the plugin's derived
replica types (``phases``) → ensure ``Created`` → finished? the finished step (``completion``) |
suspended? (``suspension``) | running: resume, start time, abnormal-pod events, backoff/deadline
(``restarts``), PodGroup (Volcano may hold here), extra objects, restarts, pods and Services
(``children``, gated by ``phases``), counts, conditions and ``ExitedWithCode`` events
(``status``, ``pod_events``), stage events (``phases``), then the finished step in the same pass
if that finished the job. Because the status describes the world *after* the plan's own actions,
applying a plan and planning again yields no actions and the same status.

Neighbours: ``draft`` (the plan under construction) and the step modules named above.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from trainop.api.defaults import apply_defaults
from trainop.api.types import CREATED, MANAGED_BY_TRAINING_OPERATOR, Job, JobStatus
from trainop.engine import children, conditions, gang, phases, pod_events, restarts, status
from trainop.engine.actions import Event, Plan
from trainop.engine.completion import finish
from trainop.engine.draft import Draft
from trainop.engine.observed import Observed, next_lost, pod_views, settle_lost
from trainop.engine.suspension import resume_if_suspended, suspend
from trainop.frameworks.base import Framework
from trainop.frameworks.options import FrameworkOptions
from trainop.frameworks.topology import Topology


@dataclass(frozen=True, slots=True)
class EngineOptions:
    """Operator-wide settings: the gang scheduler (empty: off) and the plugins' options."""

    gang_scheduler_name: str = ""
    frameworks: FrameworkOptions = field(default_factory=FrameworkOptions)


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
    if framework.handles is not None and not framework.handles(job=job):
        return Plan((), current, skipped=True)  # another version's semantics (design 100)
    problems = framework.validate(job=job) if framework.validate is not None else ()
    if problems:
        message = f"{framework.kind} failed validation because {'; '.join(problems)}"
        warning = Event("Warning", f"{framework.kind}FailedValidation", message)
        return Plan((), current, (warning,), skipped=True)
    job = phases.with_derived_replicas(job, framework)
    views = settle_lost(pod_views(observed, job, framework), now)
    draft = Draft(job, framework, observed, views, now, current)
    if not any(c.type == CREATED for c in draft.conditions):
        draft.set(CREATED, "Created", f"{framework.kind} {job.metadata.name} is created.")
    if conditions.is_finished(draft.conditions):
        finish(draft)
    elif job.run_policy.suspend:
        suspend(draft)
    else:
        _run(draft, topology, options or EngineOptions())
    return draft.result()


def _run(draft: Draft, topology: Topology, options: EngineOptions) -> None:
    """A running job: resume, start time, policies, gang, children, status."""
    resume_if_suspended(draft)
    if draft.status.start_time is None:
        draft.update_status(start_time=draft.now)
    draft.events += pod_events.abnormal(draft.pods)
    draft.requeue(next_lost(draft.pods, draft.now))  # a terminating pod may count as lost then
    pending = restarts.pending(draft)
    if restarts.fail_by_policy(draft, pending):
        return
    scheduler = gang.scheduler_for(options.gang_scheduler_name)
    if scheduler is not None and not children.sync_pod_group(draft, scheduler, options.frameworks):
        draft.update_status(last_reconcile_time=draft.now)
        return
    children.sync_extra_objects(draft, topology, options.frameworks)
    restarts.restart(draft, pending)
    children.sync_pods(draft, topology, options.frameworks, scheduler)
    children.sync_services(draft, options.frameworks)
    _update_status(draft)


def _update_status(draft: Draft) -> None:
    """Counts and conditions from the world as this plan leaves it; finish if that finished."""
    job, framework = draft.job, draft.framework
    tallies = status.tally(job, draft.pods, frozenset(draft.deleted))
    draft.events += pod_events.exited(job, draft.pods, tallies, frozenset(draft.deleted))
    counts = status.replica_statuses(job, framework, tallies)
    draft.update_status(replica_statuses=counts)
    new, events = status.conditions_for(
        job, framework, tallies, draft.pods, draft.conditions, draft.now
    )
    draft.update_status(conditions=list(new))
    draft.events += events
    before = (job.status.replica_statuses if job.status else None) or {}
    draft.events += phases.stage_events(job, framework, before, counts)
    if conditions.is_finished(new):
        finish(draft)
