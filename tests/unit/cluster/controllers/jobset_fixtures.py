"""Builders for the JobSet controller's unit tests: JobSets and child Jobs as plain dicts,
the way the API server stores them, and Job status helpers as JobSet's own integration tests
write them (``completeJob``, ``failJob``, ``readyJob``; spec section 4)."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

from trainop.cluster.controllers.jobset import children, spec

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def replicated(name: str, replicas: int = 1, **extra: Any) -> dict[str, Any]:
    job_spec = {
        "parallelism": 1,
        "completions": 1,
        "completionMode": "Indexed",
        "template": {
            "spec": {"containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "Never"}
        },
    }
    return {
        "name": name,
        "groupName": "default",
        "replicas": replicas,
        "template": {"spec": job_spec},
        **extra,
    }


def jobset(name: str = "test-js", *rjs: dict[str, Any], **spec_fields: Any) -> dict[str, Any]:
    """A JobSet as admission leaves it (webhook defaults applied)."""
    body: dict[str, Any] = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": "default", "uid": "js-uid"},
        "spec": {
            "replicatedJobs": list(rjs),
            "network": {"enableDNSHostnames": True, "publishNotReadyAddresses": True},
            "successPolicy": {"operator": "All"},
            "startupPolicy": {"startupPolicyOrder": "AnyOrder"},
            **spec_fields,
        },
    }
    return body


def fixture_jobset(**spec_fields: Any) -> dict[str, Any]:
    """Upstream's integration fixture: replicated-job-a (1) + replicated-job-b (3)."""
    return jobset(
        "test-js",
        replicated("replicated-job-a", 1),
        replicated("replicated-job-b", 3),
        **spec_fields,
    )


def all_jobs(js: dict[str, Any]) -> list[dict[str, Any]]:
    """Every child Job the JobSet would create now, as stored (with a uid)."""
    jobs = []
    for position in range(len(spec.replicated_jobs(js))):
        for job in children.missing_jobs(js, position, ()):
            job["metadata"]["uid"] = f"uid-{job['metadata']['name']}"
            jobs.append(job)
    return jobs


def with_status(job: dict[str, Any], **status: Any) -> dict[str, Any]:
    out = copy.deepcopy(job)
    out["status"] = {**out.get("status", {}), **status}
    return out


def condition(
    ctype: str, reason: str = "", message: str = "", at: str = "2026-01-01T11:00:00Z"
) -> dict[str, Any]:
    return {
        "type": ctype,
        "status": "True",
        "reason": reason,
        "message": message,
        "lastTransitionTime": at,
    }


def complete(job: dict[str, Any]) -> dict[str, Any]:
    n = job["spec"].get("parallelism", 1)
    return with_status(
        job, succeeded=n, conditions=[condition("SuccessCriteriaMet"), condition("Complete")]
    )


def fail(
    job: dict[str, Any],
    reason: str = "BackoffLimitExceeded",
    message: str = "Job has reached the specified backoff limit",
    at: str = "2026-01-01T11:00:00Z",
) -> dict[str, Any]:
    conds = [
        condition("FailureTarget", reason, message, at),
        condition("Failed", reason, message, at),
    ]
    return with_status(job, conditions=conds)


def ready(job: dict[str, Any]) -> dict[str, Any]:
    n = job["spec"].get("parallelism", 1)
    return with_status(job, active=n, ready=n)


def by_name(jobs: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(j for j in jobs if j["metadata"]["name"] == name)


def cond(status: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    return next((c for c in status.get("conditions") or [] if c["type"] == ctype), None)
