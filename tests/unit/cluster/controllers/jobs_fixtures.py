"""Jobs and pods as the Job controller's pure ``step`` sees them, for the unit tests of
``cluster.controllers.jobs`` (fake time: ``NOW`` and offsets from it)."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from typing import Any

from trainop.cluster.controllers.jobs import model
from trainop.cluster.controllers.jobs.step import Step, step

NOW = datetime(2026, 1, 1, tzinfo=UTC)
_SERIAL = itertools.count()


def at(seconds: float) -> str:
    """The wire time ``seconds`` after ``NOW``."""
    return model.stamp(NOW + timedelta(seconds=seconds))


def job(
    name: str = "job",
    *,
    indexed: bool = True,
    restart: str = "Never",
    status: dict[str, Any] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A defaulted Job (as the API server stores it) with one container ``main``."""
    body: dict[str, Any] = {
        "completionMode": "Indexed" if indexed else "NonIndexed",
        "backoffLimit": 6,
        "template": {
            "metadata": {"labels": {"app": "demo"}},
            "spec": {
                "restartPolicy": restart,
                "containers": [{"name": "main", "image": "img"}],
                "initContainers": [{"name": "setup", "image": "img"}],
            },
        },
        **spec,
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
        "spec": body,
        "status": status or {},
    }


def pod(
    index: int | None,
    phase: str,
    *,
    tracked: bool = True,
    ready: bool = False,
    deleting: bool = False,
    restarts: int = 0,
    exit_code: int | None = None,
    conditions: list[dict[str, Any]] | None = None,
    finished: str | None = None,
) -> dict[str, Any]:
    """A pod of ``job()`` with completion ``index`` (None: no index annotation)."""
    serial = next(_SERIAL)
    meta: dict[str, Any] = {
        "name": f"job-{index}-{serial}",
        "namespace": "ns",
        "uid": f"pod-{serial}",
        "annotations": {} if index is None else {model.INDEX_KEY: str(index)},
        "finalizers": [model.TRACKING_FINALIZER] if tracked else [],
    }
    if deleting:
        meta["deletionTimestamp"] = at(0)
    state: dict[str, Any] = {}
    if exit_code is not None or finished is not None:
        state = {"terminated": {"exitCode": exit_code or 0, "finishedAt": finished}}
    statuses = [{"name": "main", "restartCount": restarts, "state": state}]
    pod_conditions = list(conditions or [])
    if ready:
        pod_conditions.append({"type": "Ready", "status": "True"})
    status = {"phase": phase, "containerStatuses": statuses, "conditions": pod_conditions}
    return {"metadata": meta, "spec": {}, "status": status}


def run(the_job: dict[str, Any], pods: list[dict[str, Any]], seconds: float = 0, **kw: Any) -> Step:
    """``step`` at ``NOW + seconds``."""
    return step(the_job, pods, NOW + timedelta(seconds=seconds), **kw)


def created_indexes(result: Step) -> list[int]:
    return sorted(int(p["metadata"]["annotations"][model.INDEX_KEY]) for p in result.create)


def types(result: Step) -> list[tuple[str, str, str]]:
    """(type, status, reason) of the conditions the step writes."""
    assert result.status is not None
    return [(c["type"], c["status"], c["reason"]) for c in result.status.get("conditions", [])]
