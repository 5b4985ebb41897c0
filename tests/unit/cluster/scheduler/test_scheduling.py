"""The local scheduler's decisions: per-pod fitting, kube-scheduler's message, gangs."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from trainop.cluster.scheduler import scheduling
from trainop.cluster.scheduler.scheduling import COSCHEDULING, VOLCANO, Allocatable

NODE = Allocatable(cpu=Decimal(4), memory=Decimal(8 * 2**30), gpus=1)


def pod(
    name: str,
    *,
    cpu: str = "1",
    bound: bool = False,
    phase: str = "Pending",
    group: tuple[str, str] | None = None,
    created: str = "2026-01-01T00:00:00Z",
    **requests: str,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "creationTimestamp": created}
    if group and group[0] == VOLCANO:
        meta["annotations"] = {scheduling.VOLCANO_GROUP_ANNOTATION: group[1]}
    elif group:
        meta["labels"] = {scheduling.COSCHEDULING_GROUP_LABEL: group[1]}
    names = {"nvidia_com_gpu": "nvidia.com/gpu"}
    wanted = {"cpu": cpu, **{names.get(k, k): v for k, v in requests.items()}}
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": wanted}}]}
    if bound:
        spec["nodeName"] = "trainop-local"
    return {"metadata": meta, "spec": spec, "status": {"phase": phase}}


def group(name: str, min_member: int, phase: str | None = None, **min_resources: str) -> Any:
    obj: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"minMember": min_member, "minResources": min_resources},
    }
    if phase:
        obj["status"] = {"phase": phase}
    return obj


def test_a_pod_binds_only_when_its_requests_fit_beside_the_running_ones() -> None:
    pods = [pod("running", cpu="3", bound=True, phase="Running"), pod("next", cpu="2")]
    decision = scheduling.decide(NODE, pods, {})
    assert decision.bind == []
    assert decision.unschedulable == {
        ("default", "next"): "0/1 nodes are available: 1 Insufficient cpu."
    }
    finished = [pod("done", cpu="3", bound=True, phase="Succeeded"), pod("next", cpu="2")]
    assert scheduling.decide(NODE, finished, {}).bind == [("default", "next")]


def test_the_message_lists_every_short_resource_and_limits_count_as_requests() -> None:
    greedy = pod("greedy", cpu="8", memory="16Gi", nvidia_com_gpu="2")
    decision = scheduling.decide(NODE, [greedy], {})
    assert decision.unschedulable[("default", "greedy")] == (
        "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, "
        "1 Insufficient nvidia.com/gpu."
    )
    limited = {
        "metadata": {"name": "l", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": "5"}}}]},
    }
    assert scheduling.pod_requests(limited)["cpu"] == Decimal(5)


def test_gpu_requests_are_not_fitted_on_a_machine_without_gpus() -> None:
    cpu_only = Allocatable(cpu=Decimal(4), memory=Decimal(2**30), gpus=None)
    assert scheduling.decide(cpu_only, [pod("g", nvidia_com_gpu="1")], {}).bind == [
        ("default", "g")
    ]


def test_pods_bound_in_one_pass_share_the_room() -> None:
    decision = scheduling.decide(NODE, [pod(f"p{i}", cpu="2") for i in range(3)], {})
    assert decision.bind == [("default", "p0"), ("default", "p1")]
    assert list(decision.unschedulable) == [("default", "p2")]


def test_a_coscheduled_gang_binds_only_all_together() -> None:
    busy = pod("busy", cpu="2", bound=True, phase="Running")
    members = [pod(f"g-{i}", cpu="1", group=(COSCHEDULING, "g")) for i in range(3)]
    groups = {(COSCHEDULING, "default", "g"): group("g", 3)}
    waiting = scheduling.decide(NODE, [busy, *members], groups)
    assert waiting.bind == []  # two of three would fit: none is bound
    assert waiting.unschedulable[("default", "g-0")].endswith("3 Pending, 3 minAvailable")
    assert waiting.groups[(COSCHEDULING, "default", "g")]["phase"] == "PreScheduling"
    freed = scheduling.decide(NODE, members, groups)
    assert sorted(freed.bind) == [("default", f"g-{i}") for i in range(3)]
    assert freed.groups[(COSCHEDULING, "default", "g")] == {"phase": "Scheduled", "scheduled": 3}


def test_a_volcano_group_is_enqueued_when_its_min_resources_fit_then_runs() -> None:
    key = (VOLCANO, "default", "v")
    busy = pod("busy", cpu="3", bound=True, phase="Running")
    pending = {key: group("v", 2, cpu="2")}
    assert scheduling.decide(NODE, [busy], pending).groups[key] == {"phase": "Pending"}
    assert scheduling.decide(NODE, [], pending).groups[key] == {"phase": "Inqueue"}
    inqueue = {key: group("v", 2, "Inqueue", cpu="2")}
    members = [pod(f"v-{i}", cpu="1", group=(VOLCANO, "v")) for i in range(2)]
    bound = scheduling.decide(NODE, members, inqueue)
    assert sorted(bound.bind) == [("default", "v-0"), ("default", "v-1")]
    assert bound.groups[key] == {"phase": "Running"}
    done = [
        pod(f"v-{i}", cpu="1", bound=True, phase="Succeeded", group=(VOLCANO, "v"))
        for i in range(2)
    ]
    running = {key: group("v", 2, "Running", cpu="2")}
    assert scheduling.decide(NODE, done, running).groups[key] == {
        "phase": "Completed",
        "succeeded": 2,
    }


def test_an_enqueued_group_reserves_its_resources_from_the_next_group() -> None:
    first, second = (VOLCANO, "default", "a"), (VOLCANO, "default", "b")
    groups = {
        first: group("a", 2, "Inqueue", cpu="3"),
        second: group("b", 2, cpu="2"),
    }
    assert scheduling.decide(NODE, [], groups).groups.get(second, {}).get("phase") in (
        None,
        "Pending",
    )


def test_a_finished_group_stays_finished_when_its_pods_are_cleaned_up() -> None:
    for flavour, done in ((VOLCANO, "Completed"), (COSCHEDULING, "Finished")):
        key = (flavour, "default", "g")
        finished = {key: group("g", 2, done)}
        assert key not in scheduling.decide(NODE, [], finished).groups
