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
TrainJobs are counted too, with ``framework="trainjob"``: created when their JobSet is first
applied, successful/failed when ``Complete``/``Failed`` becomes true (``count_trainjob``).
Beside them, what dashboards for any controller-runtime operator query, with
controller-runtime's and client-go's names, labels and buckets (upstream serves them from the
same registry): ``controller_runtime_reconcile_total{controller,result}`` (result ``success``,
``error``, ``requeue``, ``requeue_after``; every result starts at 0),
``controller_runtime_reconcile_errors_total{controller}``,
``controller_runtime_terminal_reconcile_errors_total{controller}``,
``controller_runtime_reconcile_time_seconds{controller}``,
``controller_runtime_max_concurrent_reconciles{controller}``,
``controller_runtime_active_workers{controller}``, the work queue's ``workqueue_depth``,
``workqueue_adds_total``, ``workqueue_queue_duration_seconds``,
``workqueue_work_duration_seconds``, ``workqueue_retries_total``,
``workqueue_unfinished_work_seconds`` and ``workqueue_longest_running_processor_seconds``
(label ``name``, the controller's name, e.g. ``pytorchjob-controller``; the last two read at
scrape time), ``rest_client_requests_total{code,method,host}``,
``rest_client_request_duration_seconds{verb,host}``, ``leader_election_master_status{name}``
(with ``--leader-elect``), and the ``process_*`` metrics
(CPU, memory, file descriptors, start time). Go runtime metrics (``go_*``) have no equivalent.
trainop's own: ``trainop_reconcile_duration_seconds`` (histogram by kind and outcome),
``trainop_workqueue_depth`` (gauge by kind) and ``trainop_api_requests_total`` (by verb and
resource).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import Collector

from trainop.api.types import FAILED, SUCCEEDED, JobStatus

_JOB_LABELS = ("job_namespace", "framework")
TRAINJOB_FRAMEWORK = "trainjob"  # the ``framework`` label of TrainJobs' counts
# controller-runtime's reconcile time buckets, and client-go's workqueue ones (1e-8 s .. 1e3 s).
_RECONCILE_BUCKETS = (
    *(0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7),
    *(0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10),
    *(15, 20, 25, 30, 40, 50, 60),
)
_QUEUE_BUCKETS = tuple(10.0**exponent for exponent in range(-8, 4))
_REST_BUCKETS = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)
RECONCILE_RESULTS = ("success", "error", "requeue", "requeue_after")


# In-progress work of a queue: (seconds of every key being processed, the longest one's).
Progress = Callable[[], tuple[float, float]]


class _UnfinishedWork(Collector):
    """client-go's two gauges of work in progress, computed from the queues when scraped."""

    def __init__(self) -> None:
        self.queues: dict[str, Progress] = {}

    def collect(self) -> Iterator[Metric]:
        unfinished = GaugeMetricFamily(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has done that is in progress and hasn't been observed by "
            "work_duration. Large values indicate stuck threads. One can deduce the number of "
            "stuck threads by observing the rate at which this increases.",
            labels=("name",),
        )
        longest = GaugeMetricFamily(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            labels=("name",),
        )
        for name, progress in sorted(self.queues.items()):
            total, longest_one = progress()
            unfinished.add_metric((name,), total)
            longest.add_metric((name,), longest_one)
        yield unfinished
        yield longest


@dataclass(frozen=True, slots=True)
class QueueMetrics:
    """client-go's metrics of one named work queue (children of the labelled families)."""

    depth: Gauge
    adds: Counter
    queue_duration: Histogram
    work_duration: Histogram
    retries: Counter


@dataclass(frozen=True, slots=True)
class ControllerMetrics:
    """controller-runtime's metrics of one controller (children of the labelled families)."""

    results: dict[str, Counter]
    errors: Counter
    terminal_errors: Counter
    time: Histogram
    active_workers: Gauge


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
        # Children of the per-request families, by label values: ``labels()`` validates and
        # joins its arguments under a lock on every call (~20 requests per job, two families
        # each); these label sets are never removed, so a child once made stays the one.
        self._requests: dict[tuple[str, str], Counter] = {}
        self._responses: dict[tuple[str, str, str], tuple[Counter, Histogram]] = {}
        self._controller_runtime()
        self._workqueue()
        self._unfinished = _UnfinishedWork()
        self.registry.register(self._unfinished)
        ProcessCollector(registry=self.registry)
        self.rest_client_requests = Counter(
            "rest_client_requests",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            ("code", "method", "host"),
            registry=self.registry,
        )
        self.rest_client_duration = Histogram(
            "rest_client_request_duration_seconds",
            "Request latency in seconds. Broken down by verb, and host.",
            ("verb", "host"),
            buckets=_REST_BUCKETS,
            registry=self.registry,
        )
        self.leader_election_status = Gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates "
            "backup, 1 indicates master. 'name' is the string used to identify the lease. "
            "Please make sure to group by name.",
            ("name",),
            registry=self.registry,
        )

    def _controller_runtime(self) -> None:
        labels = ("controller",)
        self.reconcile_total = Counter(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            ("controller", "result"),
            registry=self.registry,
        )
        self.reconcile_errors = Counter(
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            labels,
            registry=self.registry,
        )
        self.terminal_reconcile_errors = Counter(
            "controller_runtime_terminal_reconcile_errors",
            "Total number of terminal reconciliation errors per controller",
            labels,
            registry=self.registry,
        )
        self.reconcile_time = Histogram(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            labels,
            buckets=_RECONCILE_BUCKETS,
            registry=self.registry,
        )
        self.max_concurrent_reconciles = Gauge(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            labels,
            registry=self.registry,
        )
        self.active_workers = Gauge(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            labels,
            registry=self.registry,
        )

    def _workqueue(self) -> None:
        def histogram(name: str, text: str) -> Histogram:
            return Histogram(name, text, ("name",), buckets=_QUEUE_BUCKETS, registry=self.registry)

        self.workqueue_depth = Gauge(
            "workqueue_depth", "Current depth of workqueue", ("name",), registry=self.registry
        )
        self.workqueue_adds = Counter(
            "workqueue_adds",
            "Total number of adds handled by workqueue",
            ("name",),
            registry=self.registry,
        )
        self.workqueue_queue_duration = histogram(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
        )
        self.workqueue_work_duration = histogram(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
        )
        self.workqueue_retries = Counter(
            "workqueue_retries",
            "Total number of retries handled by workqueue",
            ("name",),
            registry=self.registry,
        )

    def for_queue(self, name: str) -> QueueMetrics:
        """The metrics of the work queue ``name`` (client-go names it after the controller)."""
        return QueueMetrics(
            depth=self.workqueue_depth.labels(name=name),
            adds=self.workqueue_adds.labels(name=name),
            queue_duration=self.workqueue_queue_duration.labels(name=name),
            work_duration=self.workqueue_work_duration.labels(name=name),
            retries=self.workqueue_retries.labels(name=name),
        )

    def watch_progress(self, name: str, progress: Progress) -> None:
        """Serve the work in progress of queue ``name`` (``WorkQueue.progress``)."""
        self._unfinished.queues[name] = progress

    def for_controller(self, name: str, *, workers: int) -> ControllerMetrics:
        """The metrics of controller ``name``, every reconcile result at 0 (as upstream)."""
        self.max_concurrent_reconciles.labels(controller=name).set(workers)
        return ControllerMetrics(
            results={
                result: self.reconcile_total.labels(controller=name, result=result)
                for result in RECONCILE_RESULTS
            },
            errors=self.reconcile_errors.labels(controller=name),
            terminal_errors=self.terminal_reconcile_errors.labels(controller=name),
            time=self.reconcile_time.labels(controller=name),
            active_workers=self.active_workers.labels(controller=name),
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

    def count_trainjob(
        self, *, namespace: str, old: Mapping[str, Any], new: Mapping[str, Any], created: bool
    ) -> None:
        """Count one TrainJob pass (``framework="trainjob"``): ``created`` when its JobSet was
        first applied (a TrainJob has no Created condition), successful/failed when
        ``Complete``/``Failed`` became true."""
        labels = {"job_namespace": namespace, "framework": TRAINJOB_FRAMEWORK}
        before, after = _true_wire_conditions(old), _true_wire_conditions(new)
        if created:
            self.jobs_created.labels(**labels).inc()
        if "Complete" in after - before:
            self.jobs_successful.labels(**labels).inc()
        if FAILED in after - before:
            self.jobs_failed.labels(**labels).inc()

    def count_request(self, verb: str, resource: str) -> None:
        """One request sent (``trainop_api_requests_total``)."""
        key = (verb, resource)
        child = self._requests.get(key)
        if child is None:
            child = self._requests[key] = self.api_requests.labels(verb=verb, resource=resource)
        child.inc()

    def count_response(self, code: str, method: str, host: str, seconds: float) -> None:
        """One answered (or failed: code ``<error>``) HTTP request, as client-go counts it."""
        key = (code, method, host)
        counted = self._responses.get(key)
        if counted is None:
            counted = self._responses[key] = (
                self.rest_client_requests.labels(code=code, method=method, host=host),
                self.rest_client_duration.labels(verb=method, host=host),
            )
        counted[0].inc()
        counted[1].observe(seconds)

    def exposition(self) -> bytes:
        """The text exposition of every metric (what ``/metrics`` returns)."""
        return generate_latest(self.registry)


def _true_wire_conditions(status: Mapping[str, Any]) -> set[str]:
    conditions = status.get("conditions") or []
    return {str(c.get("type")) for c in conditions if c.get("status") == "True"}


def _true_conditions(status: JobStatus) -> set[str]:
    return {c.type for c in status.conditions or () if c.status == "True"}
