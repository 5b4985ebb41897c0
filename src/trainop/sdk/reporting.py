"""What ``trainop run`` makes of a followed job: reports, a fatal container, the outcome.

``RunReport`` is fed the job's and its pods' states as ``sdk.follow.run_job`` receives them.
It tells the ``Reporter`` every new condition (once per type, status and reason) and, once per
message, why a replica waits for the scheduler; it notes the first container that failed for
a reason no restart can fix on this machine (``FATAL_REASONS``), which ends the run early.
``outcome_of`` reads how a finished job ended: on failure the earliest container that ended
non-zero, with its exit code and reason. Replicas are named like their pods without the job's
prefix (``worker-1``; ``worker-1/sidecar`` for a container other than the pod's first).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from trainop.api.types import SUCCEEDED
from trainop.engine.naming import JOB_NAME_LABEL
from trainop.kube.client import Obj
from trainop.kube.http import HttpClient
from trainop.kube.resources import PODS

# Container failures that no restart can fix on this machine (no image to pull, no retry
# makes a missing executable or ConfigMap key appear): the run ends at the first one.
FATAL_REASONS = frozenset(
    {
        "ContainerCannotRun",
        "StartError",
        "CreateContainerConfigError",
        "CreateContainerError",
        "RunContainerError",
        "ErrImagePull",  # an image that cannot be pulled now will not be pulled later offline
        "ErrImageNeverPull",
        "ImagePullBackOff",
    }
)


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a job ended; the replica fields name the first failed container, if any."""

    succeeded: bool
    message: str
    replica: str | None = None
    exit_code: int | None = None
    reason: str | None = None


class Reporter(Protocol):
    def condition(self, condition: dict[str, Any]) -> None:
        """A condition the job gained (or whose status changed)."""

    def log(self, replica: str, line: str) -> None:
        """One line of output of ``replica`` (``worker-1``; ``worker-1/sidecar`` for others)."""


def replica_labels(pod: Obj, *, job: str) -> dict[str, str]:
    """Each container of ``pod`` → its label: ``worker-1`` for the first, ``worker-1/x`` else."""
    replica = pod["metadata"]["name"].removeprefix(f"{job}-")
    names = [c.get("name", "") for c in (pod.get("spec") or {}).get("containers") or []]
    return {name: replica if i == 0 else f"{replica}/{name}" for i, name in enumerate(names)}


class RunReport:
    """The reports of one run so far, its last job state, and its fatal failure if any."""

    def __init__(self, job: Obj, reporter: Reporter) -> None:
        self.job = job
        self.fatal: Outcome | None = None
        self._name = job["metadata"]["name"]
        self._reporter = reporter
        self._conditions: set[tuple[str, str, str]] = set()
        self._unschedulable: set[str] = set()

    def job_seen(self, job: Obj) -> None:
        """Report the conditions of ``job`` not reported yet."""
        self.job = job
        for condition in (job.get("status") or {}).get("conditions") or []:
            key = (condition["type"], condition["status"], condition.get("reason", ""))
            if key not in self._conditions:
                self._conditions.add(key)
                self._reporter.condition(condition)

    def pod_seen(self, pod: Obj) -> None:
        """Report why ``pod`` waits for the scheduler; note a fatal failure of its containers."""
        self._report_unschedulable(pod)
        self.fatal = self.fatal or self._fatal(pod)

    def _report_unschedulable(self, pod: Obj) -> None:
        """Say once per message why a replica waits for the local scheduler (a job whose
        replicas never fit would otherwise wait in silence)."""
        for condition in (pod.get("status") or {}).get("conditions") or []:
            if condition.get("type") != "PodScheduled" or condition.get("status") != "False":
                continue
            replica = pod["metadata"]["name"].removeprefix(f"{self._name}-")
            message = f"{replica}: {condition.get('message') or condition.get('reason')}"
            if message not in self._unschedulable:
                self._unschedulable.add(message)
                self._reporter.condition(
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": condition.get("reason", ""),
                        "message": message,
                    }
                )

    def _fatal(self, pod: Obj) -> Outcome | None:
        status = pod.get("status") or {}
        labels = replica_labels(pod, job=self._name)
        replica = pod["metadata"]["name"].removeprefix(f"{self._name}-")
        for container in [
            *status.get("initContainerStatuses", []),
            *status.get("containerStatuses", []),
        ]:
            states = [  # a start failure is lastState while its container backs off
                *(container.get("lastState") or {}).values(),  # the runtime's own reason first
                *(container.get("state") or {}).values(),
            ]
            for state in states:
                if isinstance(state, dict) and state.get("reason") in FATAL_REASONS:
                    label = labels.get(container["name"], f"{replica}/{container['name']}")
                    message = f"{label}: {state.get('message') or state['reason']}"
                    return Outcome(False, message, label, state.get("exitCode"), state["reason"])
        return None


async def outcome_of(client: HttpClient, job: Obj) -> Outcome:
    """How the finished ``job`` ended; on failure, which replica failed first, and how."""
    conditions = (job.get("status") or {}).get("conditions") or []
    last = conditions[-1] if conditions else {}
    if any(c["type"] == SUCCEEDED and c["status"] == "True" for c in conditions):
        return Outcome(True, str(last.get("message", "")))
    meta = job["metadata"]
    selector = f"{JOB_NAME_LABEL}={meta['name']}"
    pods = await client.list(PODS, namespace=meta.get("namespace"), label_selector=selector)
    failed = _first_failure(pods.items)
    message = str(last.get("message", "the job failed"))
    if failed is None:
        return Outcome(False, message)
    replica, code, reason = failed
    return Outcome(False, message, replica.removeprefix(f"{meta['name']}-"), code, reason)


def _first_failure(pods: list[Obj]) -> tuple[str, int, str] | None:
    """The earliest container that ended non-zero (current or previous instance)."""
    found: list[tuple[str, str, int, str]] = []
    for pod in pods:
        for status in (pod.get("status") or {}).get("containerStatuses") or []:
            for state in (status.get("state") or {}, status.get("lastState") or {}):
                ended = state.get("terminated")
                if ended and ended.get("exitCode", 0) != 0:
                    when = str(ended.get("finishedAt") or "")
                    found.append(
                        (
                            when,
                            pod["metadata"]["name"],
                            ended["exitCode"],
                            ended.get("reason", "Error"),
                        )
                    )
    if not found:
        return None
    _, name, code, reason = min(found)
    return name, int(code), str(reason)
