"""A pod's securityContext and DNS settings as ``run`` words (``podoptions``, note 095):
the container's fields over the pod's, kubelet's runAsNonRoot decisions, the cluster's DNS
search path in the session network's names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from trainop.cluster.kubelet.runtimes import containercli, containers, podoptions
from trainop.cluster.kubelet.runtimes.runtime import Launch, Target

POD = "ns/p"


def _pair(words: list[str], flag: str) -> list[str]:
    return [words[i + 1] for i, word in enumerate(words) if word == flag]


def test_run_as_user_and_groups_become_user_and_group_add() -> None:
    pod = {"securityContext": {"runAsUser": 1000, "runAsGroup": 3000, "supplementalGroups": [4000]}}
    assert podoptions.security_options(pod, {"name": "c"}) == [
        "--user",
        "1000:3000",
        "--group-add",
        "4000",
    ]


def test_the_containers_fields_override_the_pods() -> None:
    pod = {"securityContext": {"runAsUser": 1000, "runAsGroup": 3000, "runAsNonRoot": True}}
    container = {"name": "c", "securityContext": {"runAsUser": 2000, "runAsNonRoot": False}}
    assert podoptions.security_options(pod, container) == ["--user", "2000:3000"]
    assert podoptions.refusal({"securityContext": {"runAsNonRoot": True}}, container, "", POD) == ""


def test_a_group_alone_keeps_the_images_user() -> None:
    pod = {"securityContext": {"runAsGroup": 3000}}
    assert podoptions.security_options(pod, {}, "mpiuser") == ["--user", "mpiuser:3000"]
    assert podoptions.security_options(pod, {}, "") == ["--user", "0:3000"]
    assert podoptions.image_user({"User": "mpiuser:mpiuser"}) == "mpiuser"


def test_fs_group_is_a_supplementary_group_once() -> None:
    pod = {"securityContext": {"supplementalGroups": [4000, 5000], "fsGroup": 5000}}
    assert _pair(podoptions.security_options(pod, {}), "--group-add") == ["4000", "5000"]
    pod = {"securityContext": {"fsGroup": 2000}}
    assert podoptions.security_options(pod, {}) == ["--group-add", "2000"]


def test_the_container_only_fields() -> None:
    context = {
        "readOnlyRootFilesystem": True,
        "capabilities": {"add": ["NET_ADMIN", "CAP_SYS_PTRACE"], "drop": ["ALL"]},
        "allowPrivilegeEscalation": False,
    }
    assert podoptions.security_options({}, {"securityContext": context}) == [
        "--read-only",
        "--cap-drop",
        "ALL",
        "--cap-add",
        "NET_ADMIN",
        "--cap-add",
        "CAP_SYS_PTRACE",
        "--security-opt",
        "no-new-privileges",
    ]
    allowed = {"readOnlyRootFilesystem": False, "allowPrivilegeEscalation": True}
    assert podoptions.security_options({}, {"securityContext": allowed}) == []
    assert podoptions.security_options({}, {}) == []


ROOT = 'container has runAsNonRoot and image will run as root (pod: "ns/p", container: c)'


@pytest.mark.parametrize(
    ("user", "refused"),
    [
        ("", ROOT),  # kubelet takes an image without a user as root
        ("0", ROOT),
        ("1000", ""),
        (
            "root",  # a name kubelet cannot verify (it does not read the image's passwd)
            "container has runAsNonRoot and image has non-numeric user (root), cannot verify "
            'user is non-root (pod: "ns/p", container: c)',
        ),
        (
            "mpiuser",
            "container has runAsNonRoot and image has non-numeric user (mpiuser), cannot "
            'verify user is non-root (pod: "ns/p", container: c)',
        ),
    ],
)
def test_run_as_non_root_against_the_images_user(user: str, refused: str) -> None:
    pod = {"securityContext": {"runAsNonRoot": True}}
    assert podoptions.refusal(pod, {"name": "c"}, user, POD) == refused
    assert podoptions.refusal({}, {"name": "c"}, user, POD) == ""  # not asked for


def test_run_as_non_root_with_a_run_as_user() -> None:
    pod = {"securityContext": {"runAsNonRoot": True, "runAsUser": 1000}}
    assert podoptions.refusal(pod, {"name": "c"}, "", POD) == ""
    zero = {"name": "c", "securityContext": {"runAsUser": 0}}
    assert podoptions.refusal(pod, zero, "1000", POD) == (
        """container's runAsUser breaks non-root policy (pod: "ns/p", container: c)"""
    )


def test_privileged_is_refused() -> None:
    container = {"name": "c", "securityContext": {"privileged": True}}
    assert podoptions.refusal({}, container, "", POD) == (
        'privileged containers are not run in local mode (pod: "ns/p", container: c)'
    )
    assert podoptions.security_options({}, container) == []  # never --privileged


def test_a_cluster_pods_search_path_in_the_networks_names() -> None:
    assert podoptions.dns_options({}, "ns") == ["--dns-search", "ns.svc", "--dns-search", "svc"]


def test_dns_config_adds_searches_nameservers_and_options() -> None:
    pod: dict[str, Any] = {
        "dnsPolicy": "ClusterFirst",
        "dnsConfig": {
            "searches": ["pi.ns.svc.cluster.local", "example.org"],
            "nameservers": ["1.2.3.4"],
            "options": [{"name": "ndots", "value": "2"}, {"name": "edns0"}, {"value": "1"}],
        },
    }
    words = podoptions.dns_options(pod, "ns", "10.89.0.1")
    assert _pair(words, "--dns-search") == ["ns.svc", "svc", "pi.ns.svc", "example.org"]
    assert _pair(words, "--dns") == ["10.89.0.1", "1.2.3.4"]  # the network's server first
    assert _pair(words, "--dns-option") == ["ndots:2", "edns0"]  # a nameless option: none
    assert _pair(podoptions.dns_options(pod, "ns"), "--dns") == ["1.2.3.4"]  # docker's


def test_dns_policy_none_is_dns_config_alone() -> None:
    pod = {"dnsPolicy": "None", "dnsConfig": {"nameservers": ["1.2.3.4"], "searches": ["a.b"]}}
    assert podoptions.dns_options(pod, "ns", "10.89.0.1") == [
        "--dns-search",
        "a.b",
        "--dns",
        "1.2.3.4",
    ]
    assert podoptions.dns_options({"dnsPolicy": "Default"}, "ns") == []


def _words(
    tmp_path: Path, network: str, pod_spec: dict[str, Any], spec: dict[str, Any]
) -> list[str]:
    runtime = containers.ContainerRuntime(containercli.Podman(tmp_path), session="s")
    runtime.network = network
    launch = Launch(argv=[], env={}, cwd=tmp_path, gpus=0, spec=spec, pod_spec=pod_spec)
    return runtime._run_options(Target("ns", "p", "u", "c", "p"), launch, "n", user="")


def test_the_runtime_uses_them_and_skips_dns_on_the_host_network(tmp_path: Path) -> None:
    pod = {"securityContext": {"runAsUser": 1000}, "dnsConfig": {"searches": ["x.y"]}}
    read_only = {"name": "c", "securityContext": {"readOnlyRootFilesystem": True}}
    words = _words(tmp_path, "trainop-s", pod, read_only)
    assert _pair(words, "--user") == ["1000"]
    assert _pair(words, "--dns-search") == ["ns.svc", "svc", "x.y"]
    assert "--read-only" in words
    assert "--read-only-tmpfs=false" in words  # podman's /tmp, /run, /var/tmp too
    host = _words(tmp_path, "", pod, {"name": "c"})
    assert _pair(host, "--user") == ["1000"]
    assert "--dns-search" not in host
