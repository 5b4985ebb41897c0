"""kubelet's restartPolicy rule, the one both local kubelets apply to a container that exited."""

from __future__ import annotations

import pytest

from trainop.cluster.kubelet.status import restartpolicy


@pytest.mark.parametrize(
    ("policy", "exit_code", "restarts"),
    [
        ("Always", 0, True),
        ("Always", 1, True),
        ("OnFailure", 0, False),
        ("OnFailure", 137, True),
        ("Never", 0, False),
        ("Never", 1, False),
    ],
)
def test_a_container_restarts_per_policy(policy: str, exit_code: int, restarts: bool) -> None:
    assert restartpolicy.restarts(policy, exit_code) is restarts


@pytest.mark.parametrize(
    ("policy", "exit_code", "restarts"),
    [("Always", 0, False), ("Always", 2, True), ("OnFailure", 2, True), ("Never", 2, False)],
)
def test_an_init_container_restarts_only_after_a_failure_and_never_under_never(
    policy: str, exit_code: int, restarts: bool
) -> None:
    assert restartpolicy.restarts(policy, exit_code, init=True) is restarts


def test_the_policy_defaults_to_always_and_the_pod_succeeds_only_if_all_did() -> None:
    assert restartpolicy.of({}) == restartpolicy.of(None) == "Always"
    assert restartpolicy.of({"restartPolicy": "Never"}) == "Never"
    assert restartpolicy.phase_when_done([True, True]) == "Succeeded"
    assert restartpolicy.phase_when_done([True, False]) == "Failed"
