"""``plan`` for MPIJob v2beta1 (mpi-operator v0.8's sync, mpi-v2beta1-spec section 4), pure.

The v2beta1 lifecycle differs from the common engine's on purpose: success and failure come
only from the launcher ``batch/v1`` Job, failed workers are never replaced, retries, deadline
and TTL are the launcher Job's. So it has its own planner, built from the same parts
(``actions.Plan``, ``conditions.set_condition``) and the objects ``frameworks.mpi_v2beta1``
renders. Steps: defaults → skip if managed elsewhere or invalid (``ValidationError`` event) →
``Created`` → finished: cleanup per ``cleanPodPolicy`` → startTime → ensure Service, ConfigMap,
Secret, workers, launcher (``launcherCreationPolicy``) → suspend/resume the launcher →
status (launcher result, worker counts, Running).

Reads no clock (``now`` is an argument) and does no I/O; the SSH key pair comes in ``keys``
(used only when the Secret is missing or has the wrong keys).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from trainop.api import mpi_v2beta1 as api
from trainop.api.types import (
    CREATED,
    FAILED,
    RUNNING,
    SUCCEEDED,
    SUSPENDED,
    JobStatus,
    ReplicaStatus,
)
from trainop.engine import conditions
from trainop.engine import mpi_v2beta1_gang as gang_scheduling
from trainop.engine.actions import Action, Create, Delete, Event, Plan, Update
from trainop.engine.gang import GangScheduler
from trainop.frameworks import mpi_v2beta1 as objects
from trainop.frameworks.base import FrameworkOptions

Raw = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Observed:
    """What exists of a v2beta1 job, read from the API: objects by their fixed names (None:
    missing), the pods labelled as its workers, and the launcher Job's pods."""

    service: Raw | None = None
    config_map: Raw | None = None
    secret: Raw | None = None
    launcher: Raw | None = None
    workers: tuple[Raw, ...] = ()
    launcher_pods: tuple[Raw, ...] = ()
    pod_group: Raw | None = None


@dataclass(slots=True)
class _Draft:
    job: api.MPIJobV2Beta1
    now: datetime
    status: JobStatus
    gang: GangScheduler | None
    actions: list[Action] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)

    def set(self, ctype: str, reason: str, message: str, status: str = "True") -> None:
        current = tuple(self.status.conditions or ())
        new, events = conditions.set_condition(
            current, type=ctype, reason=reason, message=message, now=self.now, status=status
        )
        self.status = self.status.model_copy(update={"conditions": list(new)})
        self.events += events

    def has(self, ctype: str) -> bool:
        return any(c.type == ctype for c in self.status.conditions or ())

    def result(self) -> Plan:
        return Plan(tuple(self.actions), self.status, tuple(self.events))


def needs_keys(observed: Observed) -> bool:
    """Whether ``plan`` will create or rekey the SSH Secret (the caller then passes keys)."""
    return observed.secret is None or objects.secret_needs_new_keys(observed.secret)


def plan(
    job: api.MPIJobV2Beta1,
    observed: Observed,
    now: datetime,
    *,
    keys: objects.SshKeys | None = None,
    cluster_domain: str = "",
    options: FrameworkOptions | None = None,
    gang: GangScheduler | None = None,
) -> Plan:
    """Everything to do for a v2beta1 ``job`` given ``observed`` at ``now``."""
    job = api.apply_defaults(job)
    current = job.status or JobStatus()
    if job.run_policy.managed_by not in (None, api.MANAGED_BY_MPI_OPERATOR):
        return Plan((), current, skipped=True)
    problems = api.validate(job)
    if problems:
        warning = Event("Warning", "ValidationError", api.validation_message(problems))
        return Plan((), current, (warning,), skipped=True)
    draft = _Draft(job, now, current, gang)
    ident = f"{job.metadata.namespace}/{job.metadata.name}"
    if not current.conditions:
        draft.set(CREATED, "MPIJobCreated", f"MPIJob {ident} is created.")
    finished = conditions.is_finished(tuple(draft.status.conditions or ()))
    if finished and draft.status.completion_time is not None:
        _cleanup(draft, observed)
        return draft.result()
    suspended = bool(job.run_policy.suspend)
    if draft.status.start_time is None and not suspended:
        draft.status = draft.status.model_copy(update={"start_time": now})
    done = _job_finished(observed.launcher)
    workers = list(observed.workers)
    if not done:
        _ensure_shared(draft, observed, keys, cluster_domain)
        if not suspended:
            _ensure_pod_group(draft, observed)
            workers = _ensure_workers(draft, observed)
        if observed.launcher is None and objects.launcher_may_start(job, workers):
            launcher = objects.launcher_job(
                job, suspended=suspended, options=options or FrameworkOptions()
            )
            if gang is not None:
                gang_scheduling.decorate(job, launcher["spec"]["template"], gang)
            draft.actions.append(Create(launcher))
            template = job.spec.replica_specs[api.LAUNCHER].template.get("spec") or {}
            if template.get("restartPolicy"):
                message = (
                    "Restart policy in pod template overridden by restart policy in replica spec"
                )
                draft.events.append(Event("Warning", "SetPodTemplateRestartPolicy", message))
    if observed.launcher is not None:
        launcher_suspended = bool((observed.launcher.get("spec") or {}).get("suspend"))
        if launcher_suspended != suspended:
            draft.actions.append(_suspend_launcher(job, suspended))
    if suspended:
        for pod in observed.workers:
            draft.actions.append(Delete("v1", "Pod", str(pod["metadata"]["name"])))
        _delete_pod_group(draft, observed)
        workers = []
    _status(draft, observed, workers, suspended)
    return draft.result()


def _job_condition(job: Raw | None, ctype: str) -> Raw | None:
    for condition in ((job or {}).get("status") or {}).get("conditions") or []:
        if condition.get("type") == ctype and condition.get("status") == "True":
            return dict(condition)
    return None


def _job_finished(job: Raw | None) -> bool:
    return _job_condition(job, "Complete") is not None or _job_condition(job, "Failed") is not None


def _ensure_shared(
    draft: _Draft, observed: Observed, keys: objects.SshKeys | None, domain: str
) -> None:
    job = draft.job
    service = objects.service(job)
    if observed.service is None:
        draft.actions.append(Create(service))
    else:
        spec = observed.service.get("spec") or {}
        wanted = service["spec"]
        if (spec.get("selector"), bool(spec.get("publishNotReadyAddresses"))) != (
            wanted["selector"],
            wanted["publishNotReadyAddresses"],
        ):
            patch = {k: wanted[k] for k in ("selector", "publishNotReadyAddresses")}
            draft.actions.append(Update(_partial(service, spec=patch)))
    running = [
        str(p["metadata"]["name"])
        for p in observed.workers
        if (p.get("status") or {}).get("phase") == "Running"
    ]
    config = objects.config_map(job, running, domain)
    if observed.config_map is None:
        draft.actions.append(Create(config))
    elif observed.config_map.get("data") != config["data"]:
        draft.actions.append(Update(_partial(config, data=config["data"])))
    if needs_keys(observed):
        if keys is None:
            raise ValueError("the SSH Secret must be (re)created: pass keys")
        secret = objects.ssh_secret(job, keys)
        if observed.secret is None:
            draft.actions.append(Create(secret))
        else:
            # A merge patch: keys besides the pair are removed (null), the pair replaced.
            stale = dict.fromkeys(observed.secret.get("data") or {})
            data = {**stale, **secret["data"]}
            draft.actions.append(Update(_partial(secret, data=data)))


def _partial(body: Raw, **fields: Any) -> dict[str, Any]:
    """An ``Update`` body: identity plus the fields to merge."""
    meta = {"name": body["metadata"]["name"]}
    return {"apiVersion": body["apiVersion"], "kind": body["kind"], "metadata": meta, **fields}


def _index(pod: Raw) -> int | None:
    text = ((pod.get("metadata") or {}).get("labels") or {}).get(objects.REPLICA_INDEX_LABEL)
    return int(text) if isinstance(text, str) and text.isdigit() else None


def _ensure_workers(draft: _Draft, observed: Observed) -> list[Raw]:
    """Delete workers beyond N, create missing indices; failed workers are never replaced."""
    job, count = draft.job, api.workers(draft.job)
    offset = 1 if job.spec.run_launcher_as_worker else 0
    kept: list[Raw] = []
    for pod in observed.workers:
        index = _index(pod)
        if index is not None and index - offset >= count:
            draft.actions.append(Delete("v1", "Pod", str(pod["metadata"]["name"])))
        else:
            kept.append(pod)
    names = {str(p["metadata"]["name"]) for p in kept}
    for i in range(count):
        if objects.worker_name(job, i) not in names:
            pod = objects.worker_pod(job, i)
            if draft.gang is not None:
                gang_scheduling.decorate(job, pod, draft.gang)
            failed = ("MPIJobFailed", "worker pod created failed: {error}")
            draft.actions.append(Create(pod, failed=failed))
    return kept


def _suspend_launcher(job: api.MPIJobV2Beta1, suspended: bool) -> Update:
    body = objects.launcher_job(job, suspended=suspended)
    spec: dict[str, Any] = {"suspend": suspended}
    if not suspended:  # resume: scheduling directives from the freshly rendered template
        template = body["spec"]["template"]
        directives = {
            k: template["spec"].get(k)
            for k in ("nodeSelector", "tolerations", "schedulingGates")
            if template["spec"].get(k) is not None
        }
        spec["template"] = {"metadata": template["metadata"], "spec": directives}
    return Update(_partial(body, spec=spec))


def _status(draft: _Draft, observed: Observed, workers: list[Raw], suspended: bool) -> None:
    job, now = draft.job, draft.now
    ident = f"{job.metadata.namespace}/{job.metadata.name}"
    if suspended:
        draft.set(SUSPENDED, "MPIJobSuspended", "MPIJob suspended")
    elif draft.has(SUSPENDED):
        before = draft.status.conditions
        draft.set(SUSPENDED, "MPIJobResumed", "MPIJob resumed", status="False")
        if draft.status.conditions != before:
            draft.status = draft.status.model_copy(update={"start_time": now})
    statuses: dict[str, ReplicaStatus] = {}
    launcher = observed.launcher
    if launcher is not None:
        statuses[api.LAUNCHER] = _launcher_status(draft, observed, ident)
    statuses[api.WORKER] = _count(workers)
    evicted = sum(
        1
        for p in workers
        if (p.get("status") or {}).get("phase") == "Failed"
        and (p.get("status") or {}).get("reason") == "Evicted"
    )
    if evicted:
        message = f"{evicted}/{len(workers)} workers are evicted"
        draft.set(FAILED, "MPIJobEvicted", message)
    old = draft.status.replica_statuses or {}
    merged = {api.LAUNCHER: ReplicaStatus(), api.WORKER: ReplicaStatus(), **old, **statuses}
    draft.status = draft.status.model_copy(update={"replica_statuses": merged})
    finished = conditions.is_finished(tuple(draft.status.conditions or ()))
    if suspended:
        draft.set(RUNNING, "MPIJobSuspended", f"MPIJob {ident} is suspended.", status="False")
    elif finished:
        if not draft.has(RUNNING):
            draft.set(
                RUNNING,
                "MPIJobRunning",
                f"MPIJob {ident} is finished but Running condition was never set.",
                status="False",
            )
    elif launcher is not None:
        launcher_running = any(
            (p.get("status") or {}).get("phase") == "Running" for p in observed.launcher_pods
        )
        all_workers = all((p.get("status") or {}).get("phase") == "Running" for p in workers)
        if launcher_running and all_workers:
            draft.set(RUNNING, "MPIJobRunning", f"MPIJob {ident} is running.")


def _count(pods: list[Raw]) -> ReplicaStatus:
    phases = [(p.get("status") or {}).get("phase") for p in pods]
    counts = {
        "active": phases.count("Running"),
        "succeeded": phases.count("Succeeded"),
        "failed": phases.count("Failed"),
    }
    return ReplicaStatus(**{k: v for k, v in counts.items() if v})


def _launcher_status(draft: _Draft, observed: Observed, ident: str) -> ReplicaStatus:
    launcher = observed.launcher or {}
    failed = int((launcher.get("status") or {}).get("failed") or 0)
    result: dict[str, int] = {"failed": failed} if failed else {}
    complete = _job_condition(launcher, "Complete")
    failure = _job_condition(launcher, "Failed")
    if complete is not None:
        result["succeeded"] = 1
        if draft.status.completion_time is None:
            text = (launcher.get("status") or {}).get("completionTime")
            when = _time(text) if isinstance(text, str) else draft.now
            draft.status = draft.status.model_copy(update={"completion_time": when})
        draft.set(SUCCEEDED, "MPIJobSucceeded", f"MPIJob {ident} successfully completed.")
    elif failure is not None:
        reason = str(failure.get("reason") or "MPIJobFailed")
        message = str(failure.get("message") or f"MPIJob {ident} has failed")
        if reason == "BackoffLimitExceeded":
            reason, message = _with_last_pod(reason, message, observed.launcher_pods)
        if draft.status.completion_time is None:
            draft.status = draft.status.model_copy(update={"completion_time": draft.now})
        draft.set(FAILED, reason, message)
    else:
        running = sum(
            1 for p in observed.launcher_pods if (p.get("status") or {}).get("phase") == "Running"
        )
        if running:
            result["active"] = running
    return ReplicaStatus(**result)


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _with_last_pod(reason: str, message: str, pods: tuple[Raw, ...]) -> tuple[str, str]:
    """``BackoffLimitExceeded/<pod reason>`` and ``<message>: <pod message>`` from the newest
    Failed launcher pod (upstream's wording, trailing separators included)."""
    failed = [p for p in pods if (p.get("status") or {}).get("phase") == "Failed"]
    if not failed:
        return reason, message
    newest = max(failed, key=lambda p: str(p["metadata"].get("creationTimestamp") or ""))
    status = newest.get("status") or {}
    text = f"{message}: {status.get('message') or ''}"
    return f"{reason}/{status.get('reason') or ''}", text[:1024]


def _cleanup(draft: _Draft, observed: Observed) -> None:
    """A finished job: ``cleanPodPolicy`` All deletes every worker, Running the Running and
    Pending ones; None keeps them (sshd) until the job is deleted."""
    policy = draft.job.run_policy.clean_pod_policy
    if policy not in ("All", "Running"):
        return
    for pod in observed.workers:
        phase = (pod.get("status") or {}).get("phase")
        if policy == "All" or phase in ("Running", "Pending", None):
            draft.actions.append(Delete("v1", "Pod", str(pod["metadata"]["name"])))
    _delete_pod_group(draft, observed)
    statuses = dict(draft.status.replica_statuses or {})
    statuses[api.WORKER] = ReplicaStatus()
    draft.status = draft.status.model_copy(update={"replica_statuses": statuses})


def _ensure_pod_group(draft: _Draft, observed: Observed) -> None:
    """Create the gang's PodGroup, or update its spec when it differs (gang scheduling on)."""
    if draft.gang is None:
        return
    wanted = gang_scheduling.pod_group(draft.job, draft.gang)
    if observed.pod_group is None:
        draft.actions.append(Create(wanted))
    elif observed.pod_group.get("spec") != wanted["spec"]:
        draft.actions.append(Update(_partial(wanted, spec=wanted["spec"])))


def _delete_pod_group(draft: _Draft, observed: Observed) -> None:
    if draft.gang is not None and observed.pod_group is not None:
        name = str(draft.job.metadata.name)
        draft.actions.append(Delete(draft.gang.api_version, "PodGroup", name))
