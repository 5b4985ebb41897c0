"""``Sharer``: equal JSON values become one object; different ones stay apart; bounded."""

from __future__ import annotations

import json

from trainop.kube.sharing import Sharer


def decoded(value: object) -> object:
    return json.loads(json.dumps(value))  # a fresh copy, as each watch event decodes anew


def test_equal_values_are_one_object_and_equal_to_what_came_in() -> None:
    sharer = Sharer()
    refs = [{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "uid": "u", "controller": True}]
    first, second = sharer.share(decoded(refs)), sharer.share(decoded(refs))
    assert first == refs
    assert first is second
    assert first[0]["uid"] is second[0]["uid"]


def test_values_that_differ_in_type_or_content_stay_apart() -> None:
    sharer = Sharer()
    shared = [sharer.share(v) for v in ({"a": True}, {"a": 1}, {"a": 1.0}, {"a": "1"}, {"b": 1})]
    assert [type(v["a"] if "a" in v else v["b"]) for v in shared] == [bool, int, float, str, int]
    assert len({id(v) for v in shared}) == 5
    assert sharer.share([{"x": []}]) is not sharer.share([{"x": {}}])


def test_the_table_keeps_only_the_most_recent_entries() -> None:
    sharer = Sharer(capacity=3)
    old = sharer.share({"n": 0})
    for n in range(1, 10):
        sharer.share({"n": n})
    assert len(sharer) == 3
    again = sharer.share({"n": 0})
    assert again == old
    assert again is not old, "dropped from the table: a new copy, still equal"
