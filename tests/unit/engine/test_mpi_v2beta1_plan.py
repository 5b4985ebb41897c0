"""The MPIJob v2beta1 planner (mpi-v2beta1-spec section 4): creation order, the launcher gate,
status from the launcher Job, cleanup, suspend/resume, validation and managedBy."""

from __future__ import annotations

import base64
import copy
from datetime import UTC, datetime, timedelta
from typing import Any

from trainop.api import mpi_v2beta1 as api
from trainop.api.types import ReplicaStatus
from trainop.engine import mpi_v2beta1 as v2
from trainop.engine import mpi_v2beta1_objects as objects
from trainop.engine.actions import Create, Delete, Plan, Update
from trainop.frameworks import mpi_v2beta1 as plugin

NOW = datetime(2026, 1, 1, tzinfo=UTC)
KEYS = plugin.SshKeys("PRIVATE\n", "ecdsa-sha2-nistp521 AAAA\n")


def raw_job(**spec: Any) -> dict[str, Any]:
    container = {"name": "mpi", "image": "i"}
    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": "pi", "namespace": "ns", "uid": "u"},
        "spec": {
            "sshAuthMountPath": "/root/.ssh",
            "mpiReplicaSpecs": {
                "Launcher": {"template": {"spec": {"containers": [container]}}},
                "Worker": {"replicas": 2, "template": {"spec": {"containers": [container]}}},
            },
            **spec,
        },
    }


def job_of(raw: dict[str, Any], status: Any = None) -> api.MPIJobV2Beta1:
    parsed = api.parse(raw)
    return parsed if status is None else parsed.model_copy(update={"status": status})


def pod(name: str, phase: str, *, ready: bool = False, **status: Any) -> dict[str, Any]:
    index = name.rsplit("-", 1)[-1]
    conditions = [{"type": "Ready", "status": "True" if ready else "False"}]
    return {
        "metadata": {
            "name": name,
            "labels": {plugin.REPLICA_INDEX_LABEL: index},
            "creationTimestamp": status.pop("created", "2026-01-01T00:00:00Z"),
        },
        "status": {"phase": phase, "conditions": conditions, **status},
    }


def existing(job: api.MPIJobV2Beta1, **fields: Any) -> v2.Observed:
    """Everything the first plan created, as the API would show it."""
    secret = {"data": {"ssh-privatekey": "x", "ssh-publickey": "y"}}
    base: dict[str, Any] = {
        "service": objects.service(job),
        "config_map": objects.config_map(job),
        "secret": secret,
        "launcher": objects.launcher_job(job),
    }
    base |= fields
    return v2.Observed(**base)


def kinds(plan: Plan) -> list[tuple[str, str, str]]:
    out = []
    for action in plan.actions:
        if isinstance(action, Create | Update):
            out.append((type(action).__name__, action.kind, action.name))
        elif isinstance(action, Delete):
            out.append(("Delete", action.kind, action.name))
    return out


def test_first_plan_creates_everything_in_upstream_order_and_the_created_status() -> None:
    plan = v2.plan(job_of(raw_job()), v2.Observed(), NOW, keys=KEYS)
    assert kinds(plan) == [
        ("Create", "Service", "pi"),
        ("Create", "ConfigMap", "pi-config"),
        ("Create", "Secret", "pi-ssh"),
        ("Create", "Pod", "pi-worker-0"),
        ("Create", "Pod", "pi-worker-1"),
        ("Create", "Job", "pi-launcher"),
    ]
    status = plan.status
    assert [(c.type, c.status, c.reason, c.message) for c in status.conditions or ()] == [
        ("Created", "True", "MPIJobCreated", "MPIJob ns/pi is created.")
    ]
    assert status.start_time == NOW
    assert status.replica_statuses == {
        "Launcher": ReplicaStatus(),
        "Worker": ReplicaStatus(),
    }
    assert [(e.type, e.reason) for e in plan.events] == [("Normal", "MPIJobCreated")]
    assert v2.needs_keys(v2.Observed())


def test_running_needs_a_running_launcher_pod_and_every_worker_running() -> None:
    first = v2.plan(job_of(raw_job()), v2.Observed(), NOW, keys=KEYS)
    job = job_of(raw_job(), first.status)
    workers = (pod("pi-worker-0", "Running"), pod("pi-worker-1", "Pending"))
    running_launcher = (pod("pi-launcher-abcde", "Running"),)
    observed = existing(job, workers=workers, launcher_pods=running_launcher)
    waiting = v2.plan(job, observed, NOW)
    assert kinds(waiting) == [("Update", "ConfigMap", "pi-config")]  # discover_hosts: worker 0
    assert not any(c.type == "Running" for c in waiting.status.conditions or ())
    workers = (pod("pi-worker-0", "Running"), pod("pi-worker-1", "Running"))
    job = job_of(raw_job(), waiting.status)
    observed = existing(
        job,
        config_map=objects.config_map(job, ["pi-worker-0", "pi-worker-1"]),
        workers=workers,
        launcher_pods=running_launcher,
    )
    running = v2.plan(job, observed, NOW)
    assert running.actions == ()
    last = (running.status.conditions or [])[-1]
    assert (last.type, last.status, last.reason, last.message) == (
        "Running",
        "True",
        "MPIJobRunning",
        "MPIJob ns/pi is running.",
    )
    assert running.status.replica_statuses == {
        "Launcher": ReplicaStatus(active=1),
        "Worker": ReplicaStatus(active=2),
    }


def test_the_launcher_jobs_completion_decides_success_and_cleanup_follows() -> None:
    job = job_of(raw_job(runPolicy={"cleanPodPolicy": "All"}))
    started = v2.plan(job, v2.Observed(), NOW, keys=KEYS).status
    launcher = copy.deepcopy(objects.launcher_job(job))
    launcher["status"] = {
        "conditions": [{"type": "Complete", "status": "True"}],
        "completionTime": "2026-01-01T00:05:00Z",
    }
    workers = (pod("pi-worker-0", "Running"), pod("pi-worker-1", "Failed"))
    job = job_of(raw_job(runPolicy={"cleanPodPolicy": "All"}), started)
    done = v2.plan(job, existing(job, launcher=launcher, workers=workers), NOW)
    assert done.actions == ()  # a finished launcher: nothing is (re)created
    by_type = {c.type: c for c in done.status.conditions or ()}
    assert (by_type["Succeeded"].reason, by_type["Succeeded"].message) == (
        "MPIJobSucceeded",
        "MPIJob ns/pi successfully completed.",
    )
    assert by_type["Running"].status == "False"  # finished without ever Running
    assert done.status.completion_time == NOW + timedelta(minutes=5)
    assert done.status.replica_statuses["Launcher"] == ReplicaStatus(succeeded=1)
    assert done.status.replica_statuses["Worker"] == ReplicaStatus(active=1, failed=1)
    job = job_of(raw_job(runPolicy={"cleanPodPolicy": "All"}), done.status)
    cleaned = v2.plan(job, existing(job, launcher=launcher, workers=workers), NOW)
    assert kinds(cleaned) == [("Delete", "Pod", "pi-worker-0"), ("Delete", "Pod", "pi-worker-1")]
    assert cleaned.status.replica_statuses["Worker"] == ReplicaStatus()
    default = job_of(raw_job(), done.status)  # cleanPodPolicy None: sshd workers stay
    assert (
        v2.plan(default, existing(default, launcher=launcher, workers=workers), NOW).actions == ()
    )


def test_backoff_limit_exceeded_names_the_newest_failed_launcher_pod() -> None:
    job = job_of(raw_job())
    launcher = copy.deepcopy(objects.launcher_job(job))
    launcher["status"] = {
        "failed": 2,
        "conditions": [
            {
                "type": "Failed",
                "status": "True",
                "reason": "BackoffLimitExceeded",
                "message": "Job has reached the specified backoff limit",
            }
        ],
    }
    pods = (
        pod(
            "pi-launcher-a",
            "Failed",
            reason="OOMKilled",
            message="old",
            created="2026-01-01T00:00:00Z",
        ),
        pod(
            "pi-launcher-b",
            "Failed",
            reason="Evicted",
            message="node gone",
            created="2026-01-01T00:01:00Z",
        ),
    )
    plan = v2.plan(job, existing(job, launcher=launcher, launcher_pods=pods), NOW)
    failed = next(c for c in plan.status.conditions or () if c.type == "Failed")
    assert (failed.reason, failed.message) == (
        "BackoffLimitExceeded/Evicted",
        "Job has reached the specified backoff limit: node gone",
    )
    assert plan.status.replica_statuses["Launcher"] == ReplicaStatus(failed=2)
    assert plan.status.completion_time == NOW
    assert ("Normal", "BackoffLimitExceeded/Evicted") in [(e.type, e.reason) for e in plan.events]


def test_wait_for_workers_ready_holds_the_launcher() -> None:
    raw = raw_job(launcherCreationPolicy="WaitForWorkersReady")
    first = v2.plan(job_of(raw), v2.Observed(), NOW, keys=KEYS)
    assert ("Create", "Job", "pi-launcher") not in kinds(first)
    job = job_of(raw, first.status)
    base = {
        "service": objects.service(job),
        "secret": {"data": {"ssh-privatekey": "", "ssh-publickey": ""}},
    }
    one = (pod("pi-worker-0", "Running", ready=True), pod("pi-worker-1", "Running"))
    assert ("Create", "Job", "pi-launcher") not in kinds(
        v2.plan(job, v2.Observed(**base, workers=one), NOW)
    )
    both = (pod("pi-worker-0", "Running", ready=True), pod("pi-worker-1", "Running", ready=True))
    assert ("Create", "Job", "pi-launcher") in kinds(
        v2.plan(job, v2.Observed(**base, workers=both), NOW)
    )


def test_suspend_keeps_the_launcher_suspended_and_deletes_workers_then_resumes() -> None:
    raw = raw_job(runPolicy={"suspend": True})
    first = v2.plan(job_of(raw), v2.Observed(), NOW, keys=KEYS)
    assert kinds(first)[-1] == ("Create", "Job", "pi-launcher")
    assert not any(k[1] == "Pod" for k in kinds(first))
    launcher_action = first.actions[-1]
    assert isinstance(launcher_action, Create)
    assert launcher_action.body["spec"]["suspend"] is True
    assert first.status.start_time is None
    types = [(c.type, c.status, c.reason) for c in first.status.conditions or ()]
    assert types == [
        ("Created", "True", "MPIJobCreated"),
        ("Suspended", "True", "MPIJobSuspended"),
        ("Running", "False", "MPIJobSuspended"),
    ]
    running = job_of(raw_job())
    workers = (pod("pi-worker-0", "Running"), pod("pi-worker-1", "Running"))
    suspending = job_of(raw, running.status)
    plan = v2.plan(suspending, existing(suspending, workers=workers), NOW)
    assert ("Update", "Job", "pi-launcher") in kinds(plan)
    assert [k for k in kinds(plan) if k[0] == "Delete"] == [
        ("Delete", "Pod", "pi-worker-0"),
        ("Delete", "Pod", "pi-worker-1"),
    ]
    later = NOW + timedelta(hours=1)
    resumed_job = job_of(raw_job(), first.status)
    suspended_launcher = copy.deepcopy(objects.launcher_job(resumed_job, suspended=True))
    resumed = v2.plan(resumed_job, existing(resumed_job, launcher=suspended_launcher), later)
    update = next(a for a in resumed.actions if isinstance(a, Update) and a.kind == "Job")
    assert update.body["spec"]["suspend"] is False
    assert ("Create", "Pod", "pi-worker-0") in kinds(resumed)
    assert resumed.status.start_time == later
    suspended_condition = next(c for c in resumed.status.conditions or () if c.type == "Suspended")
    assert (suspended_condition.status, suspended_condition.reason) == ("False", "MPIJobResumed")


def test_invalid_or_foreign_jobs_are_left_alone() -> None:
    bad = v2.plan(job_of(raw_job(slotsPerWorker=-1)), v2.Observed(), NOW, keys=KEYS)
    assert bad.skipped
    assert bad.actions == ()
    assert [(e.type, e.reason, e.message) for e in bad.events] == [
        (
            "Warning",
            "ValidationError",
            "Found validation errors: spec.slotsPerWorker: Invalid value: -1: must be greater "
            "than or equal to 0",
        )
    ]
    kueue = raw_job(runPolicy={"managedBy": "kueue.x-k8s.io/multikueue"})
    foreign = v2.plan(job_of(kueue), v2.Observed(), NOW, keys=KEYS)
    assert foreign.skipped
    assert (foreign.actions, foreign.events) == ((), ())


def test_evicted_workers_fail_the_job_and_extra_workers_are_deleted() -> None:
    job = job_of(raw_job())
    workers = (
        pod("pi-worker-0", "Failed", reason="Evicted"),
        pod("pi-worker-1", "Running"),
        pod("pi-worker-2", "Running"),
    )
    plan = v2.plan(job, existing(job, workers=workers), NOW)
    assert ("Delete", "Pod", "pi-worker-2") in kinds(plan)
    assert not any(k == ("Create", "Pod", "pi-worker-0") for k in kinds(plan))  # never replaced
    failed = next(c for c in plan.status.conditions or () if c.type == "Failed")
    assert (failed.reason, failed.message) == ("MPIJobEvicted", "1/2 workers are evicted")


def test_a_secret_with_other_keys_is_rekeyed() -> None:
    job = job_of(raw_job())
    observed = existing(job, secret={"data": {"id_rsa": "x"}})
    assert v2.needs_keys(observed)
    plan = v2.plan(job, observed, NOW, keys=KEYS)
    update = next(a for a in plan.actions if isinstance(a, Update) and a.kind == "Secret")
    assert update.body["data"] == {
        "id_rsa": None,  # removed by the merge patch
        "ssh-privatekey": base64.b64encode(b"PRIVATE\n").decode(),
        "ssh-publickey": base64.b64encode(KEYS.public_line.encode()).decode(),
    }


def test_a_template_restart_policy_is_overridden_with_a_warning() -> None:
    raw = raw_job()
    raw["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["restartPolicy"] = "Always"
    plan = v2.plan(job_of(raw), v2.Observed(), NOW, keys=KEYS)
    launcher = next(a for a in plan.actions if isinstance(a, Create) and a.kind == "Job")
    assert launcher.body["spec"]["template"]["spec"]["restartPolicy"] == "OnFailure"
    assert ("Warning", "SetPodTemplateRestartPolicy") in [(e.type, e.reason) for e in plan.events]
    quiet = v2.plan(job_of(raw_job()), v2.Observed(), NOW, keys=KEYS)
    assert "SetPodTemplateRestartPolicy" not in [e.reason for e in quiet.events]


def test_gang_scheduling_with_volcano_and_the_coscheduler() -> None:
    from trainop.engine.gang import scheduler_for

    raw = raw_job()
    raw["metadata"]["annotations"] = {"scheduling.volcano.sh/queue-name": "team-q"}
    specs = raw["spec"]["mpiReplicaSpecs"]
    specs["Launcher"]["template"]["spec"]["priorityClassName"] = "high"
    for rtype, cpu in (("Launcher", "1"), ("Worker", "2")):
        container = copy.deepcopy(specs[rtype]["template"]["spec"]["containers"][0])
        container["resources"] = {"requests": {"cpu": cpu}}
        specs[rtype]["template"]["spec"]["containers"] = [container]
    volcano = scheduler_for("volcano")
    plan = v2.plan(job_of(raw), v2.Observed(), NOW, keys=KEYS, gang=volcano)
    assert kinds(plan)[3] == ("Create", "PodGroup", "pi")  # after the Secret, before workers
    group = plan.actions[3]
    assert isinstance(group, Create)
    assert group.body["apiVersion"] == "scheduling.volcano.sh/v1beta1"
    assert group.body["spec"] == {
        "minMember": 3,
        "queue": "team-q",
        "priorityClassName": "high",
        "minResources": {"cpu": "5"},
    }
    creates = [a for a in plan.actions if isinstance(a, Create)]
    worker = next(a for a in creates if a.name == "pi-worker-0").body
    assert worker["spec"]["schedulerName"] == "volcano"
    assert worker["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "pi"
    launcher = next(a for a in creates if a.kind == "Job").body["spec"]["template"]
    assert launcher["spec"]["schedulerName"] == "volcano"
    assert launcher["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "pi"

    raw["spec"]["runPolicy"] = {"schedulingPolicy": {"minAvailable": 2}}
    cosched = scheduler_for("scheduler-plugins-scheduler")
    job = job_of(raw, plan.status)
    observed = existing(job, pod_group={"spec": {"minMember": 3}})
    update = v2.plan(job, observed, NOW, gang=cosched)
    changed = next(a for a in update.actions if isinstance(a, Update) and a.kind == "PodGroup")
    assert changed.body["spec"] == {
        "minMember": 2,
        "scheduleTimeoutSeconds": 0,
        "minResources": {"cpu": "3"},  # the launcher and one worker fit minMember 2
    }
    worker = objects.worker_pod(job, 0)
    assert "scheduling.x-k8s.io/pod-group" not in worker["metadata"]["labels"]
    created = v2.plan(job, existing(job, pod_group={"spec": {}}), NOW, gang=cosched)
    pod = next(a for a in created.actions if isinstance(a, Create) and a.kind == "Pod").body
    assert pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "pi"

    raw["spec"]["runPolicy"] = {"suspend": True}
    suspended = job_of(raw, plan.status)
    gone = v2.plan(suspended, existing(suspended, pod_group={"spec": {}}), NOW, gang=volcano)
    assert ("Delete", "PodGroup", "pi") in kinds(gone)
