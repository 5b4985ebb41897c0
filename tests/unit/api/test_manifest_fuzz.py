"""Fuzzing the wire boundary: any JSON-like value anywhere in a manifest gives a TrainopError
(or a valid job), never another exception."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.api.builders import manifest
from trainop.api import manifest as wire
from trainop.api.kinds import KINDS
from trainop.errors import TrainopError

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _paths(value, (*prefix, index))
    return found


@st.composite
def mutated_manifests(draw: st.DrawFn) -> Any:
    obj = manifest(draw(st.sampled_from([info.kind for info in KINDS])))
    path = draw(st.sampled_from(_paths(obj)))
    value = draw(json_values)
    if not path:
        return value
    target: Any = obj
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return obj


@settings(max_examples=300, deadline=None)
@given(mutated_manifests())
def test_any_mutation_is_rejected_cleanly_or_accepted(obj: Any) -> None:
    message = ""
    try:
        job = wire.load_job(obj, source="fuzz.yaml")
    except TrainopError as exc:
        message = str(exc)
    else:
        assert wire.dump_job(job)["kind"] == job.kind
        return
    assert message.startswith("fuzz.yaml: ")
