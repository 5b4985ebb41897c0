"""PodGroup ``minResources`` (spec 8.2): per replica, the regular containers' requests (limits
when a container sets no requests) times the replicas counted towards ``minMember``, replica types
in the kind's order; quantities summed exactly and rendered canonically."""

from __future__ import annotations

from typing import Any

import pytest
from support import make_job

from trainop.api.types import SchedulingPolicy
from trainop.engine import gang, quantities


@pytest.mark.parametrize(("text", "times", "expected"), [
    ("500m", 3, "1500m"),
    ("1Gi", 2, "2Gi"),
    ("1.5Gi", 1, "1536Mi"),
    ("512Mi", 3, "1536Mi"),
    ("2", 4, "8"),
    ("2000", 1, "2k"),
    ("1e3", 2, "2k"),
    ("0.1", 3, "300m"),
    ("100k", 1, "100k"),
    ("0", 5, "0"),
    ("nonsense", 2, "0"),
])  # fmt: skip
def test_quantities_multiply_and_render_canonically(text: str, times: int, expected: str) -> None:
    assert quantities.render(quantities.parse(text) * times) == expected


def test_sum_keeps_the_first_format() -> None:
    total = quantities.parse("1Gi") + quantities.parse("512Mi")
    assert quantities.render(total) == "1536Mi"


def _resources(requests: dict[str, str] | None, limits: dict[str, str] | None) -> dict[str, Any]:
    found: dict[str, Any] = {}
    if requests is not None:
        found["requests"] = requests
    if limits is not None:
        found["limits"] = limits
    return found


def _job(containers: dict[str, list[dict[str, Any]]], specs: dict[str, int]) -> Any:
    job = make_job("PyTorchJob", specs)
    replica_specs = {
        rt: spec.model_copy(update={"template": {"spec": {"containers": containers[rt]}}})
        for rt, spec in job.spec.replica_specs.items()
    }
    return job.model_copy(
        update={"spec": job.spec.model_copy(update={"replica_specs": replica_specs})}
    )


MASTER = [
    {"name": "pytorch", "resources": _resources({"cpu": "500m", "memory": "1Gi"}, None)},
    {"name": "sidecar", "resources": _resources(None, {"cpu": "250m", "memory": "256Mi"})},
]
WORKER = [
    {"name": "pytorch", "resources": _resources(
        {"cpu": "1", "nvidia.com/gpu": "1"}, {"cpu": "4", "memory": "8Gi"})},
    {"name": "empty-requests", "resources": _resources({}, {"cpu": "8"})},
]  # fmt: skip


@pytest.mark.parametrize(("min_member", "expected"), [
    # master: cpu 750m, memory 1280Mi; each worker: cpu 1, gpu 1 (limits ignored: requests set)
    (4, {"cpu": "3750m", "memory": "1280Mi", "nvidia.com/gpu": "3"}),
    (2, {"cpu": "1750m", "memory": "1280Mi", "nvidia.com/gpu": "1"}),
    (1, {"cpu": "750m", "memory": "1280Mi"}),
    (0, {}),
])  # fmt: skip
def test_min_resources_sums_requests_times_replicas(
    min_member: int, expected: dict[str, str]
) -> None:
    job = _job({"Master": MASTER, "Worker": WORKER}, {"Worker": 3, "Master": 1})
    assert gang.min_resources(job, min_member) == expected


@pytest.mark.parametrize(("policy", "min_member", "cpu"), [
    (None, 4, "3750m"),
    ({"minAvailable": 2}, 2, "1750m"),
    ({"minAvailable": 2, "minResources": {"cpu": "3"}}, 2, "3"),
])  # fmt: skip
def test_pod_group_min_member_and_min_resources(
    policy: dict[str, Any] | None, min_member: int, cpu: str
) -> None:
    job = _job({"Master": MASTER, "Worker": WORKER}, {"Master": 1, "Worker": 3})
    scheduling = SchedulingPolicy.model_validate(policy) if policy is not None else None
    run_policy = job.run_policy.model_copy(update={"scheduling_policy": scheduling})
    job = job.model_copy(update={"spec": job.spec.model_copy(update={"run_policy": run_policy})})
    group = gang.pod_group(job, gang.GangScheduler("volcano"), None)
    assert group["spec"]["minMember"] == min_member
    assert group["spec"]["minResources"]["cpu"] == cpu
