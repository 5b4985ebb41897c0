"""Label selectors and merge patches, as tables."""

from __future__ import annotations

import pytest

from trainop.kube import selectors
from trainop.kube.patches import merge_patch

LABELS = {"app": "train", "tier": "worker", "replica-index": "0"}


@pytest.mark.parametrize(
    ("selector", "matches"),
    [
        ("", True),
        ("app=train", True),
        ("app==train", True),
        ("app=serve", False),
        ("app!=serve", True),
        ("missing!=x", True),
        ("app in (train, serve)", True),
        ("app notin (train)", False),
        ("app,tier", True),
        ("!app", False),
        ("!missing", True),
        ("app=train,tier in (worker),!gpu", True),
        ("app=train,tier=ps", False),
    ],
)
def test_selector_matching(selector: str, matches: bool) -> None:
    assert selectors.parse(selector).matches(LABELS) is matches


@pytest.mark.parametrize("bad", ["app=(x", "!app in (x)", "a b", "=x"])
def test_invalid_selectors_are_rejected_with_the_requirement_named(bad: str) -> None:
    with pytest.raises(selectors.SelectorError, match="invalid label selector"):
        selectors.parse(bad)


def test_from_labels_round_trips_through_parse() -> None:
    text = selectors.from_labels(LABELS)
    assert selectors.parse(text).matches(LABELS)
    assert not selectors.parse(text).matches({**LABELS, "tier": "ps"})


@pytest.mark.parametrize(
    ("target", "patch", "expected"),
    [
        ({"a": 1}, {"b": 2}, {"a": 1, "b": 2}),
        ({"a": 1}, {"a": None}, {}),
        ({"a": {"x": 1, "y": 2}}, {"a": {"y": None, "z": 3}}, {"a": {"x": 1, "z": 3}}),
        ({"a": [1, 2]}, {"a": [3]}, {"a": [3]}),
        ({"a": 1}, {"a": {"b": 1}}, {"a": {"b": 1}}),
    ],
)
def test_merge_patch_follows_rfc_7386(
    target: dict[str, object], patch: dict[str, object], expected: dict[str, object]
) -> None:
    before = dict(target)
    assert merge_patch(target, patch) == expected
    assert target == before
