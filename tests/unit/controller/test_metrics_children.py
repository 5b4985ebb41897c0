"""``Metrics.count_request`` and ``count_response`` reuse label children, counted per label set."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from trainop.controller.metrics import Metrics


def _value(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    return registry.get_sample_value(name, labels)


def test_requests_are_counted_per_label_set() -> None:
    metrics = Metrics(CollectorRegistry())
    for _ in range(3):
        metrics.count_request("create", "pods")
    metrics.count_request("patch", "pods")
    metrics.count_request("create", "events")
    reg = metrics.registry
    assert _value(reg, "trainop_api_requests_total", verb="create", resource="pods") == 3
    assert _value(reg, "trainop_api_requests_total", verb="patch", resource="pods") == 1
    assert _value(reg, "trainop_api_requests_total", verb="create", resource="events") == 1


def test_responses_are_counted_and_timed_per_label_set() -> None:
    metrics = Metrics(CollectorRegistry())
    metrics.count_response("201", "POST", "h:1", 0.001)
    metrics.count_response("201", "POST", "h:1", 0.2)
    metrics.count_response("409", "POST", "h:1", 0.003)
    metrics.count_response("200", "GET", "h:2", 0.004)
    reg = metrics.registry
    requests = "rest_client_requests_total"
    assert _value(reg, requests, code="201", method="POST", host="h:1") == 2
    assert _value(reg, requests, code="409", method="POST", host="h:1") == 1
    assert _value(reg, requests, code="200", method="GET", host="h:2") == 1
    duration = "rest_client_request_duration_seconds"
    # The histogram is by verb and host only: the 201s and the 409 share one child.
    assert _value(reg, f"{duration}_count", verb="POST", host="h:1") == 3
    assert _value(reg, f"{duration}_bucket", verb="POST", host="h:1", le="0.005") == 2
    assert _value(reg, f"{duration}_count", verb="GET", host="h:2") == 1
