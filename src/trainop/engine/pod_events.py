"""Events about the job's pods: abnormal active pods (spec 4.8) and ``ExitedWithCode`` (4.5).

Upstream records both on every reconcile. The plan is pure and remembers nothing, so what it
emits is derived from the observed state and the job's recorded status (docs/design/005):

- ``abnormal``: a Warning per problem an *active* pod reports (a container terminated with a
  non-zero code, a container waiting with a message, else an init container, else a latest pod
  condition that is not True). The reason is Kubernetes' own (``OOMKilled``, ``ImagePullBackOff``,
  ``Unschedulable`` ...). These states persist, so the events repeat while they last, as upstream;
  the controller's recorder aggregates identical events.
- ``exited``: ``Pod: <ns>.<pod> exited with code <n>`` once per transition: for a pod whose
  default container terminated and that this plan deletes (restart, scale-down), or whose phase
  count (succeeded/failed) for its replica type grows compared with the recorded status. A pod
  already terminating has been acted on and is not reported again.
"""

from __future__ import annotations

from trainop.api.types import Job
from trainop.engine.actions import Event
from trainop.engine.observed import PodView
from trainop.engine.status import Tally


def abnormal(pods: tuple[PodView, ...]) -> tuple[Event, ...]:
    """Warnings for the problems active pods (not finished, not terminating) report."""
    return tuple(
        Event("Warning", problem.reason, problem.message)
        for pod in pods
        if pod.phase not in ("Succeeded", "Failed") and not pod.terminating
        for problem in pod.problems
    )


def _grown(job: Job, tallies: dict[str, Tally]) -> set[tuple[str, str]]:
    """(replica type, phase) pairs whose count grows compared with the recorded status."""
    before = (job.status.replica_statuses if job.status else None) or {}
    grown = set()
    for rt, counts in tallies.items():
        recorded = before.get(rt)
        if counts.succeeded > ((recorded.succeeded if recorded else None) or 0):
            grown.add((rt, "Succeeded"))
        if counts.failed > ((recorded.failed if recorded else None) or 0):
            grown.add((rt, "Failed"))
    return grown


def exited(
    job: Job, pods: tuple[PodView, ...], tallies: dict[str, Tally], deleted: frozenset[str]
) -> tuple[Event, ...]:
    """``ExitedWithCode`` for the terminated default containers new to this plan."""
    grown = _grown(job, tallies)
    namespace = job.metadata.namespace or "default"
    return tuple(
        Event("Normal", "ExitedWithCode", f"Pod: {namespace}.{pod.name} exited with code {code}")
        for pod in pods
        if (code := pod.exit_code) is not None and not pod.terminating
        if pod.name in deleted or (pod.replica.type, pod.phase) in grown
    )
