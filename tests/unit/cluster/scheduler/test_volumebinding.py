"""A pod waits for its claims (``scheduler.volumebinding`` through ``scheduling.decide``)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from trainop.cluster.scheduler import scheduling, volumebinding

Obj = dict[str, Any]
NODE = scheduling.Allocatable(cpu=Decimal(4), memory=Decimal(8 << 30), gpus=None)


def pod(name: str, *claims: str, node: str = "", phase: str = "Pending", **meta: Any) -> Obj:
    volumes = [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}}
               for i, c in enumerate(claims)]  # fmt: skip
    spec: Obj = {"containers": [{"name": "c"}], "volumes": volumes}
    if node:
        spec["nodeName"] = node
    metadata = {
        "name": name,
        "namespace": "ns",
        "creationTimestamp": f"2026-01-01T00:00:0{len(name) % 10}Z",
        **meta,
    }
    return {"metadata": metadata, "spec": spec, "status": {"phase": phase}}


def claim(
    name: str, *, bound: bool = True, modes: tuple[str, ...] = ("ReadWriteOnce",), **meta: Any
) -> Obj:
    spec: Obj = {"accessModes": list(modes)}
    if bound:
        spec["volumeName"] = f"pvc-{name}"
    status = {"phase": "Bound" if bound else "Pending"}
    return {"metadata": {"name": name, "namespace": "ns", **meta}, "spec": spec, "status": status}


def decide(pods: list[Obj], *claims: Obj) -> scheduling.Decision:
    by_key = {("ns", c["metadata"]["name"]): c for c in claims}
    return scheduling.decide(NODE, pods, {}, by_key)


def test_a_pod_whose_claims_are_bound_is_bound() -> None:
    decision = decide([pod("a", "data")], claim("data"))
    assert decision.bind == [("ns", "a")]
    assert decision.unschedulable == {}


def test_missing_unbound_and_deleted_claims_hold_the_pod_with_kubes_messages() -> None:
    pods = [pod("a", "nope"), pod("b", "later"), pod("c", "going")]
    going = claim("going", deletionTimestamp="2026-01-01T00:00:00Z")
    decision = decide(pods, claim("later", bound=False), going)
    assert decision.bind == []
    assert decision.unschedulable == {
        ("ns", "a"): '0/1 nodes are available: persistentvolumeclaim "nope" not found.',
        ("ns", "b"): "0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims.",
        ("ns", "c"): '0/1 nodes are available: persistentvolumeclaim "going" is being deleted.',
    }


def test_read_write_once_pod_admits_one_pod_only() -> None:
    only = claim("solo", modes=("ReadWriteOncePod",))
    message = (
        "0/1 nodes are available: 1 node has pod using PersistentVolumeClaim with the same "
        "name and ReadWriteOncePod access mode."
    )
    decision = decide([pod("a", "solo"), pod("bb", "solo")], only)
    assert decision.bind == [("ns", "a")]  # the first in scheduling order
    assert decision.unschedulable == {("ns", "bb"): message}
    holder = pod("a", "solo", node="n", phase="Running")
    assert decide([holder, pod("bb", "solo")], only).unschedulable == {("ns", "bb"): message}
    finished = pod("a", "solo", node="n", phase="Succeeded")
    assert decide([finished, pod("bb", "solo")], only).bind == [("ns", "bb")]


def test_other_modes_share_the_node() -> None:
    for mode in ("ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany"):
        decision = decide([pod("a", "d"), pod("bb", "d")], claim("d", modes=(mode,)))
        assert sorted(decision.bind) == [("ns", "a"), ("ns", "bb")]


def test_a_gang_member_held_by_its_claim_keeps_its_message() -> None:
    label = {"labels": {scheduling.COSCHEDULING_GROUP_LABEL: "g"}}
    group = {"spec": {"minMember": 2}, "status": {}}
    pods = [pod("a", "d", **label), pod("bb", "nope", **label)]
    by_key = {("ns", "d"): claim("d")}
    decision = scheduling.decide(NODE, pods, {(scheduling.COSCHEDULING, "ns", "g"): group}, by_key)
    assert decision.bind == []  # the gang cannot reach minMember without it
    assert decision.unschedulable[("ns", "bb")] == (
        '0/1 nodes are available: persistentvolumeclaim "nope" not found.'
    )


def test_without_claims_nothing_is_checked() -> None:
    assert scheduling.decide(NODE, [pod("a", "nope")], {}).bind == [("ns", "a")]
    assert volumebinding.claim_names(pod("a", "x", "y")) == ["x", "y"]
