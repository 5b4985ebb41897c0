"""Jobs that run in phases: derived replica types, gated creation, announced stages.

A plugin declares its phases as data (``frameworks.base.Framework``), for any kind:

- ``derive_replicas``: replica types built from the job's own (DGL's Partitioner) are added
  before planning, so every later step (pods, tally, ``replicaStatuses``) treats them as any
  other type;
- ``starts_after``: a type's pods and Services are created only once every replica of another
  type Succeeded (the gate is for creation only: a pod that exists is never deleted for it);
  a gate on a type the job lacks is open;
- ``ConfigFiles.waits_for``, where pods see their generated files only as they were when they
  started (``FrameworkOptions.pods_see_file_updates`` off: the local kubelets): a type whose
  files list another type's addresses is created only once every pod of that type started
  with an IP, so its files are complete when it starts (a cluster's kubelet refreshes them);
- ``stages``: Normal events ``<Kind><stage>``, each once when the job's replica counts after
  the plan reach the stage and the counts of its last status had not.

A job that finishes in a pass starts no later phase in it: ``withdraw_later_phases`` drops the
pass's creates of gated types (its cleanup could not delete pods it never saw).

Pure. Neighbours: ``plan`` derives and reports stages, ``children`` asks ``may_create``,
``completion`` withdraws.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from trainop.api.types import Job, ReplicaStatus
from trainop.engine import naming
from trainop.engine.actions import Create, Event
from trainop.engine.draft import Draft
from trainop.engine.observed import PodView
from trainop.frameworks.base import Framework, Stage, replicas_of
from trainop.frameworks.options import FrameworkOptions


def with_derived_replicas(job: Job, framework: Framework) -> Job:
    """``job`` with the plugin's derived replica specs added (the job itself when none)."""
    derived = framework.derive_replicas(job=job) if framework.derive_replicas else {}
    if not derived:
        return job
    specs = {**job.spec.replica_specs, **derived}
    return job.model_copy(update={"spec": job.spec.model_copy(update={"replica_specs": specs})})


def may_create(
    job: Job,
    framework: Framework,
    pods: tuple[PodView, ...],
    replica_type: str,
    *,
    options: FrameworkOptions,
) -> bool:
    """Whether pods and Services of ``replica_type`` may be created now: its gate is open and,
    where pods see their generated files only as they were at start, the pods whose addresses
    those files list all started with an IP (``ConfigFiles.waits_for``)."""
    gate = framework.starts_after.get(replica_type)
    if gate is not None and not _all_in(job, pods, gate, lambda pod: pod.phase == "Succeeded"):
        return False
    files = framework.config_files
    if files is None or options.pods_see_file_updates:
        return True
    listed = files.waits_for.get(replica_type)
    return listed is None or _all_in(job, pods, listed, _has_started_with_an_ip)


def held_back(framework: Framework, options: FrameworkOptions) -> tuple[str, ...]:
    """The replica types whose pods are created only after other pods ran (``may_create``):
    a gang that counted them would wait for pods it holds back itself."""
    held = dict.fromkeys(framework.starts_after)
    files = framework.config_files
    if files is not None and not options.pods_see_file_updates:
        held.update(dict.fromkeys(files.waits_for))
    return tuple(held)


def _has_started_with_an_ip(pod: PodView) -> bool:
    """Running, or done with success (a short worker may finish between two looks), with its
    IP known (``status.podIP``): the files that list it are final."""
    return pod.phase in ("Running", "Succeeded") and bool(pod.ip) and not pod.terminating


def _all_in(
    job: Job, pods: tuple[PodView, ...], replica_type: str, test: Callable[[PodView], object]
) -> bool:
    """Every replica of ``replica_type`` has a pod that passes ``test`` (a type the job
    lacks: true)."""
    if replica_type not in job.spec.replica_specs:
        return True
    wanted = replicas_of(job, replica_type)
    passed = {
        pod.replica
        for pod in pods
        if pod.replica.type == replica_type and pod.replica.position < wanted and test(pod)
    }
    return len(passed) >= wanted


def withdraw_later_phases(draft: Draft) -> None:
    """Drop the draft's creates of pods and Services of gated types (the job finished)."""
    gated = {replica_type.lower() for replica_type in draft.framework.starts_after}
    if not gated:
        return

    def is_later(action: object) -> bool:
        if not isinstance(action, Create) or action.kind not in ("Pod", "Service"):
            return False
        labels = action.body["metadata"].get("labels") or {}
        return labels.get(naming.REPLICA_TYPE_LABEL) in gated

    draft.actions[:] = [action for action in draft.actions if not is_later(action)]


def _at_least(job: Job, counts: Mapping[str, ReplicaStatus], types: tuple[str, ...],
              *, started: bool) -> bool:  # fmt: skip
    for replica_type in (rt for rt in types if rt in job.spec.replica_specs):
        found = counts.get(replica_type) or ReplicaStatus()
        count = (found.succeeded or 0) + ((found.active or 0) if started else 0)
        if count < replicas_of(job, replica_type):
            return False
    return True


def _reached(stage: Stage, job: Job, counts: Mapping[str, ReplicaStatus]) -> bool:
    if not any(rt in job.spec.replica_specs for rt in (*stage.started, *stage.succeeded)):
        return False
    return _at_least(job, counts, stage.started, started=True) and _at_least(
        job, counts, stage.succeeded, started=False
    )


def stage_events(
    job: Job,
    framework: Framework,
    before: Mapping[str, ReplicaStatus],
    after: Mapping[str, ReplicaStatus],
) -> tuple[Event, ...]:
    """The Normal events of the stages reached by ``after`` and not by ``before``, in order."""
    words = {"kind": framework.kind, "name": job.metadata.name}
    return tuple(
        Event("Normal", f"{framework.kind}{stage.name}", stage.message.format(**words))
        for stage in framework.stages
        if _reached(stage, job, after) and not _reached(stage, job, before)
    )
