"""Annotations override the kubelet's default rules; bad values are named, not guessed."""

from __future__ import annotations

import pytest

from trainop.cluster.kubelet.sim.rules import PREFIX, InvalidRule, Rules, rules_for


def annotated(**values: str) -> dict[str, str]:
    return {PREFIX + k.replace("_", "-"): v for k, v in values.items()}


def test_annotations_override_defaults_field_by_field() -> None:
    defaults = Rules(run_seconds=3, exit_code=2)
    rules = rules_for(annotated(run_seconds="1.5", pending_seconds="4"), defaults)
    assert rules == Rules(pending_seconds=4, run_seconds=1.5, exit_code=2)
    assert rules_for({"other/annotation": "x"}, defaults) == defaults


@pytest.mark.parametrize(
    ("rules", "codes"),
    [
        (Rules(), [0, 0, 0]),
        (Rules(exit_code=3), [3, 3, 3]),
        (Rules(fail_times=2), [1, 1, 0]),
        (Rules(exit_code=7, fail_times=1), [7, 0, 0]),
    ],
)
def test_exit_codes_per_run(rules: Rules, codes: list[int]) -> None:
    assert [rules.exit_code_of(run) for run in range(3)] == codes


def test_oom_killed_defaults_the_exit_code_to_137() -> None:
    rules = rules_for(annotated(oom_killed="true"), Rules())
    assert isinstance(rules, Rules)
    assert (rules.exit_code_of(0), rules.reason_for(137)) == (137, "OOMKilled")
    assert Rules().reason_for(137) == "Error"


@pytest.mark.parametrize(
    ("values", "named"),
    [
        ({"run_seconds": "-1"}, "run-seconds"),
        ({"run_seconds": "nan"}, "run-seconds"),
        ({"exit_code": "256"}, "exit-code"),
        ({"fail_times": "two"}, "fail-times"),
        ({"oom_killed": "yes"}, "oom-killed"),
        ({"run_secs": "1"}, "run-secs"),
    ],
)
def test_invalid_annotations_are_named(values: dict[str, str], named: str) -> None:
    result = rules_for(annotated(**values), Rules())
    assert isinstance(result, InvalidRule)
    assert PREFIX + named in result.message


def test_a_restart_cycle_never_takes_zero_time() -> None:
    assert Rules(run_seconds=0, restart_delay_seconds=0).restart_delay() == 1.0
    assert Rules(run_seconds=5, restart_delay_seconds=0).restart_delay() == 0.0
