"""``wire_copy``: equal to the original, sharing no mutable object with it, whatever the leaves."""

from __future__ import annotations

import datetime

from trainop.frameworks.wirecopy import wire_copy


def test_a_copy_is_equal_and_shares_nothing_mutable() -> None:
    env = {"name": "X", "value": "1"}
    when = datetime.date(2026, 1, 2)  # what a YAML manifest's timestamp decodes to
    original = {"spec": {"containers": [{"env": [env, env], "n": 1.5, "on": True}]}, "at": when,
                "pair": (["a"], 1), "none": None}  # fmt: skip
    copied = wire_copy(original)
    assert copied == original
    container = copied["spec"]["containers"][0]
    assert container["env"][0] is not env
    assert container["env"][1] is not env
    assert container["env"][0] is not container["env"][1]  # present twice: copied twice
    assert copied["pair"][0] is not original["pair"][0]  # a tuple's list: deep-copied
    container["env"][0]["value"] = "2"
    copied["spec"]["containers"].append({})
    assert env["value"] == "1"
    assert len(original["spec"]["containers"]) == 1
