"""``plan`` for MPIJob v2beta1 (mpi-operator v0.8's sync, mpi-v2beta1-spec section 4), pure.

The v2beta1 lifecycle differs from the common engine's on purpose: success and failure come
only from the launcher ``batch/v1`` Job, failed workers are never replaced, retries, deadline
and TTL are the launcher Job's. So it has its own planner, built from the same parts
(``actions.Plan``, ``conditions.set_condition``) and the objects ``mpi_v2beta1_objects``
renders. Steps: defaults → skip if managed elsewhere or invalid (``ValidationError`` event) →
``Created`` → finished: cleanup per ``cleanPodPolicy`` → startTime → ensure Service, ConfigMap,
Secret, workers, launcher (``launcherCreationPolicy``) → suspend/resume the launcher →
status (``mpi_v2beta1_status``: launcher result, worker counts, Running).

Reads no clock (``now`` is an argument) and does no I/O; the SSH key pair comes in ``keys``
(used only when the Secret is missing or has the wrong keys).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from trainop.api import mpi_v2beta1 as api
from trainop.api.types import CREATED, JobStatus, ReplicaStatus
from trainop.engine import batch_jobs, conditions, ssh_auth
from trainop.engine import mpi_v2beta1_gang as gang_scheduling
from trainop.engine import mpi_v2beta1_objects as objects
from trainop.engine.actions import Create, Delete, Event, Plan, Update
from trainop.engine.gang import GangScheduler
from trainop.engine.mpi_v2beta1_status import Draft, report
from trainop.frameworks import mpi_v2beta1 as plugin
from trainop.frameworks.base import SshKeys
from trainop.frameworks.options import FrameworkOptions

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


def needs_keys(observed: Observed) -> bool:
    """Whether ``plan`` will create or rekey the SSH Secret (the caller then passes keys)."""
    return observed.secret is None or ssh_auth.secret_needs_new_keys(observed.secret)


def plan(
    job: api.MPIJobV2Beta1,
    observed: Observed,
    now: datetime,
    *,
    keys: SshKeys | None = None,
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
    draft = Draft(job, now, current, gang)
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
    done = batch_jobs.is_finished(observed.launcher)
    workers = list(observed.workers)
    if not done:
        _ensure_shared(draft, observed, keys, cluster_domain)
        if not suspended:
            _ensure_pod_group(draft, observed)
            workers = _ensure_workers(draft, observed)
        if observed.launcher is None and objects.launcher_may_start(job, workers):
            _create_launcher(draft, options or FrameworkOptions())
    if observed.launcher is not None:
        launcher_suspended = bool((observed.launcher.get("spec") or {}).get("suspend"))
        if launcher_suspended != suspended:
            draft.actions.append(_suspend_launcher(job, suspended))
    if suspended:
        for pod in observed.workers:
            draft.actions.append(Delete("v1", "Pod", str(pod["metadata"]["name"])))
        _delete_pod_group(draft, observed)
        workers = []
    report(
        draft,
        launcher=observed.launcher,
        launcher_pods=observed.launcher_pods,
        workers=workers,
        suspended=suspended,
    )
    return draft.result()


def _ensure_shared(draft: Draft, observed: Observed, keys: SshKeys | None, domain: str) -> None:
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
    config = objects.config_map(job, objects.running_names(observed.workers), domain)
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
    text = ((pod.get("metadata") or {}).get("labels") or {}).get(plugin.REPLICA_INDEX_LABEL)
    return int(text) if isinstance(text, str) and text.isdigit() else None


def _ensure_workers(draft: Draft, observed: Observed) -> list[Raw]:
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
        if plugin.worker_name(job, i) not in names:
            pod = objects.worker_pod(job, i)
            if draft.gang is not None:
                gang_scheduling.decorate(job, pod, draft.gang)
            failed = ("MPIJobFailed", "worker pod created failed: {error}")
            draft.actions.append(Create(pod, failed=failed))
    return kept


def _create_launcher(draft: Draft, options: FrameworkOptions) -> None:
    """The launcher Job (in the gang, if any), warning when its template's restart policy
    is overridden."""
    job = draft.job
    launcher = objects.launcher_job(job, suspended=bool(job.run_policy.suspend), options=options)
    if draft.gang is not None:
        gang_scheduling.decorate(job, launcher["spec"]["template"], draft.gang)
    draft.actions.append(Create(launcher))
    template = job.spec.replica_specs[api.LAUNCHER].template.get("spec") or {}
    if template.get("restartPolicy"):
        message = "Restart policy in pod template overridden by restart policy in replica spec"
        draft.events.append(Event("Warning", "SetPodTemplateRestartPolicy", message))


def _suspend_launcher(job: api.MPIJobV2Beta1, suspended: bool) -> Update:
    body = objects.launcher_job(job, suspended=suspended)
    return Update(_partial(body, spec=batch_jobs.suspension_spec(body, suspended)))


def _cleanup(draft: Draft, observed: Observed) -> None:
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


def _ensure_pod_group(draft: Draft, observed: Observed) -> None:
    """Create the gang's PodGroup, or update its spec when it differs (gang scheduling on)."""
    if draft.gang is None:
        return
    wanted = gang_scheduling.pod_group(draft.job, draft.gang)
    if observed.pod_group is None:
        draft.actions.append(Create(wanted))
    elif observed.pod_group.get("spec") != wanted["spec"]:
        draft.actions.append(Update(_partial(wanted, spec=wanted["spec"])))


def _delete_pod_group(draft: Draft, observed: Observed) -> None:
    if draft.gang is not None and observed.pod_group is not None:
        name = str(draft.job.metadata.name)
        draft.actions.append(Delete(draft.gang.api_version, "PodGroup", name))
