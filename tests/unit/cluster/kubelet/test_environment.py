"""Kubernetes ``$(VAR)`` expansion and env resolution, as tables (pure)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from trainop.cluster.kubelet import environment, gpus
from trainop.cluster.kubelet.environment import ConfigError, Node, Sources, field_value

NODE = Node("n1", "127.0.0.1", cpus=8, memory_bytes=16 * 2**30)
VARS = {"A": "a", "EMPTY": ""}


@pytest.mark.parametrize(
    ("text", "expanded"),
    [
        ("$(A)", "a"),
        ("x$(A)y$(A)", "xaya"),
        ("$(EMPTY)", ""),
        ("$(MISSING)", "$(MISSING)"),
        ("$$(A)", "$(A)"),
        ("$$$(A)", "$a"),
        ("$A", "$A"),
        ("$(A", "$(A"),
        ("end$", "end$"),
        ("$$", "$"),
        ("", ""),
    ],
)
def test_expansion_follows_kubernetes(text: str, expanded: str) -> None:
    assert environment.expand(text, VARS.get) == expanded


def _pod(*env: dict[str, Any], **container: Any) -> dict[str, Any]:
    main = {"name": "main", "command": ["x"], "env": list(env), **container}
    meta = {"name": "p", "namespace": "ns", "uid": "u1"}
    return {"metadata": meta, "spec": {"containers": [main]}}


NO_SOURCES = Sources()


def _resolve(pod: dict[str, Any], sources: Sources = NO_SOURCES) -> dict[str, str]:
    return environment.resolve(pod, pod["spec"]["containers"][0], sources, NODE)


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ({"configMapKeyRef": {"name": "cm", "key": "k"}}, 'configmap "cm" not found'),
        ({"secretKeyRef": {"name": "s", "key": "k"}}, 'secret "s" not found'),
        (
            {"configMapKeyRef": {"name": "there", "key": "no"}},
            "couldn't find key no in ConfigMap ns/there",
        ),
        (
            {"fieldRef": {"fieldPath": "status.phase"}},
            "unsupported fieldRef fieldPath: status.phase",
        ),
        (
            {"resourceFieldRef": {"resource": "limits.gpu"}},
            "unsupported resourceFieldRef resource: limits.gpu",
        ),
    ],
)
def test_unresolvable_references_name_what_is_missing(ref: dict[str, Any], message: str) -> None:
    pod = _pod({"name": "X", "valueFrom": ref})
    with pytest.raises(
        ConfigError, match="^" + message.replace("(", r"\(").replace(")", r"\)") + "$"
    ):
        _resolve(pod, Sources(config_maps={"there": {"k": "v"}}))


def test_later_env_entries_override_env_from_and_see_earlier_ones() -> None:
    pod = _pod(
        {"name": "K", "value": "own"},
        {"name": "L", "value": "$(K)+$(M)"},
        {"name": "M", "value": "m"},
        envFrom=[{"configMapRef": {"name": "cm"}}],
    )
    found = _resolve(pod, Sources(config_maps={"cm": {"K": "from-cm", "M": "cm-m"}}))
    assert found == {"K": "own", "M": "m", "L": "own+cm-m"}


def test_env_values_see_the_kubelets_own_variables_until_the_pod_redefines_them() -> None:
    pod = _pod(
        {"name": "AGENT", "value": "$(TRAINOP_ROOT)/etc/mpi/kubexec.sh"},
        {"name": "HOSTNAME", "value": "mine"},
        {"name": "SEEN", "value": "$(HOSTNAME)@$(TRAINOP_NAMESPACE)"},
        {"name": "LATER", "value": "$(UNDEFINED)"},
    )
    injected = {"TRAINOP_ROOT": "/sandbox/fs/main", "HOSTNAME": "p", "TRAINOP_NAMESPACE": "ns"}
    container = pod["spec"]["containers"][0]
    found = environment.resolve(pod, container, NO_SOURCES, NODE, injected=injected)
    assert found == {
        "AGENT": "/sandbox/fs/main/etc/mpi/kubexec.sh",
        "HOSTNAME": "mine",
        "SEEN": "mine@ns",
        "LATER": "$(UNDEFINED)",
    }, "injected variables expand but are not returned; the pod's own win once defined"


def test_unset_limits_are_the_node_capacity() -> None:
    pod = _pod(
        {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
        {
            "name": "MEM",
            "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Gi"}},
        },
        {
            "name": "REQ",
            "valueFrom": {"resourceFieldRef": {"resource": "requests.cpu", "divisor": "1m"}},
        },
    )
    assert _resolve(pod) == {"CPU": "8", "MEM": "16", "REQ": "0"}


def test_gpu_variables_are_a_no_op_without_gpus() -> None:
    assert gpus.GpuPool(()).variables(None) == {}
    pool = gpus.GpuPool(("0", "1", "2"))
    assert pool.variables(None) == {"CUDA_VISIBLE_DEVICES": ""}
    taken = pool.take(2)
    assert taken == ["0", "1"]
    assert pool.variables(taken) == {"CUDA_VISIBLE_DEVICES": "0,1"}
    assert pool.take(2) is None
    pool.give_back(taken)
    assert pool.free == 3


def test_gpu_requests_are_read_from_limits_then_requests() -> None:
    assert gpus.wanted({"resources": {"limits": {"nvidia.com/gpu": "2"}}}) == 2
    assert gpus.wanted({"resources": {"requests": {"nvidia.com/gpu": 1}}}) == 1
    assert gpus.wanted({}) == 0


def test_the_downward_apis_pod_ip_is_the_pods_own_address_where_it_has_one() -> None:
    pod = {"metadata": {"name": "p", "namespace": "ns"}, "spec": {}}
    own = dataclasses.replace(NODE, pod_ip="10.89.0.7")  # a container pod's holder's address
    assert field_value(pod, "status.podIP", own) == "10.89.0.7"
    assert field_value(pod, "status.podIPs", own) == "10.89.0.7"
    assert field_value(pod, "status.hostIP", own) == "127.0.0.1"
    assert field_value(pod, "status.podIP", NODE) == "127.0.0.1"  # a process pod: the host's
