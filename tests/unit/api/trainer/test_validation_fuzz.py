"""Fuzzing the Trainer validation: any JSON-like value anywhere in a TrainJob or a runtime (new
or old object) gives FieldErrors with paths, never an exception."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.api.trainer.builders import patch, trainjob
from trainop.api.trainer.validation import runtime_errors, trainjob_errors

ROOT = Path(__file__).resolve().parents[4]
DEEPSPEED = yaml.safe_load(
    (ROOT / "manifests/trainer/overlays/runtimes/deepspeed-distributed.yaml").read_text()
)
TORCHTUNE = yaml.safe_load(
    (ROOT / "manifests/trainer/overlays/runtimes/torchtune-llama3.2-1b.yaml").read_text()
)
TRAINJOB = trainjob(
    trainer={"image": "x", "numNodes": 2, "env": [{"name": "A", "value": "1"}]},
    initializer={"dataset": {"storageUri": "hf://a"}},
    runtimePatches=[patch("a.io/m", {"serviceAccountName": "s", "containers": [{"name": "c"}]})],
)

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
def mutated(draw: st.DrawFn, base: Any) -> Any:
    obj = copy.deepcopy(base)
    path = draw(st.sampled_from(_paths(obj)))
    value = draw(json_values)
    if not path:
        return value
    parent = obj
    for part in path[:-1]:
        parent = parent[part]
    parent[path[-1]] = value
    return obj


@settings(max_examples=300, deadline=None)
@given(new=mutated(TRAINJOB), old=mutated(TRAINJOB))
def test_trainjob_errors_never_raise(new: Any, old: Any) -> None:
    for errors in (trainjob_errors(new), trainjob_errors(new, old)):
        assert all(e.path and e.detail for e in errors)


@settings(max_examples=300, deadline=None)
@given(
    new=st.sampled_from([DEEPSPEED, TORCHTUNE]).flatmap(mutated),
    old=mutated(TORCHTUNE),
)
def test_runtime_errors_never_raise(new: Any, old: Any) -> None:
    for kind in ("TrainingRuntime", "ClusterTrainingRuntime"):
        errors, warnings = runtime_errors(kind, new, old)
        assert all(e.path and e.detail for e in errors)
        assert all(isinstance(w, str) for w in warnings)
        errors, _ = runtime_errors(kind, new)
        assert all(e.path and e.detail for e in errors)
