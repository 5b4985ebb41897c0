"""Prometheus metrics of the operator, on a registry of its own that ``/metrics`` serves whole.

The five upstream job counters keep their names and labels (``job_namespace``, ``framework``);
unlike upstream (spec Appendix C.8) every one is served, and counts come from status
transitions, so a restarted operator does not count existing jobs again:
- ``training_operator_jobs_created_total`` — a job gets its ``Created`` condition;
- ``training_operator_jobs_successful_total`` / ``..._failed_total`` — ``Succeeded`` / ``Failed``
  becomes true (every failure path, backoff and deadline included);
- ``training_operator_jobs_restarted_total`` — each restart counted toward ``backoffLimit``
  (a pod the operator recreates, plus the in-place container restarts it had);
- ``training_operator_jobs_deleted_total`` — the operator deletes a job after its TTL.
Plus ``trainop_reconcile_duration_seconds`` (histogram by kind and outcome),
``trainop_workqueue_depth`` (gauge by kind) and ``trainop_api_requests_total`` (by verb and
resource).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import generate_latest

from trainop.api.types import FAILED, SUCCEEDED, JobStatus

_JOB_LABELS = ("job_namespace", "framework")


class Metrics:
    """The operator's metrics; one instance per process."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry(auto_describe=True)
        self.jobs_created = self._job_counter("created", "Jobs that got their Created condition.")
        self.jobs_deleted = self._job_counter("deleted", "Jobs deleted after their TTL.")
        self.jobs_successful = self._job_counter("successful", "Jobs that succeeded.")
        self.jobs_failed = self._job_counter("failed", "Jobs that failed.")
        self.jobs_restarted = self._job_counter("restarted", "Pods the operator restarted.")
        self.reconcile_seconds = Histogram(
            "trainop_reconcile_duration_seconds",
            "Time to reconcile one job.",
            ("kind", "outcome"),
            registry=self.registry,
        )
        self.queue_depth = Gauge(
            "trainop_workqueue_depth",
            "Jobs waiting to be reconciled.",
            ("kind",),
            registry=self.registry,
        )
        self.api_requests = Counter(
            "trainop_api_requests",
            "Kubernetes API requests sent.",
            ("verb", "resource"),
            registry=self.registry,
        )

    def _job_counter(self, what: str, text: str) -> Counter:
        name = f"training_operator_jobs_{what}"
        return Counter(name, text, _JOB_LABELS, registry=self.registry)

    def count_transitions(
        self, *, namespace: str, framework: str, old: JobStatus, new: JobStatus
    ) -> None:
        """Count what changed between two statuses of one job."""
        before, after = _true_conditions(old), _true_conditions(new)
        labels = {"job_namespace": namespace, "framework": framework}
        if not (old.conditions or ()) and new.conditions:
            self.jobs_created.labels(**labels).inc()
        if SUCCEEDED in after - before:
            self.jobs_successful.labels(**labels).inc()
        if FAILED in after - before:
            self.jobs_failed.labels(**labels).inc()
        restarts = (new.restarts or 0) - (old.restarts or 0)
        if restarts > 0:
            self.jobs_restarted.labels(**labels).inc(restarts)

    def count_request(self, verb: str, resource: str) -> None:
        self.api_requests.labels(verb=verb, resource=resource).inc()

    def exposition(self) -> bytes:
        """The text exposition of every metric (what ``/metrics`` returns)."""
        return generate_latest(self.registry)


def _true_conditions(status: JobStatus) -> set[str]:
    return {c.type for c in status.conditions or () if c.status == "True"}
