"""Malformed input never makes the planner or the validator raise: every node of a valid
runtime and TrainJob is replaced in turn by values of the wrong shape (the webhook sees
objects nothing has validated; a runtime is read back from a snapshot)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from tests.unit.engine.trainer.builders import g1_runtime, g1_trainjob, run
from tests.unit.engine.trainer.test_golden_g4_g5_mpi import g4_runtime, g4_trainjob

from trainop.engine.trainer.validate import validate_trainjob

BAD = (None, "x", -3, [1])


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield (*prefix, key)
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield (*prefix, index)
            yield from _paths(item, (*prefix, index))


def _replaced(obj: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    parent: Any = obj
    for step in path[:-1]:
        parent = parent[step]
    parent[path[-1]] = value
    return obj


def _check(tj: dict[str, Any], rt: dict[str, Any]) -> int:
    runs = 0
    for target, other, is_runtime in ((rt, tj, True), (tj, rt, False)):
        for path in _paths(target):
            if path[:2] == ("metadata", "name") or path == ("metadata",):
                continue
            for bad in BAD:
                broken = _replaced(target, path, bad)
                pair = (other, broken) if is_runtime else (broken, other)
                result = run(*pair)
                assert isinstance(result.status, dict)
                errors, warnings = validate_trainjob(pair[0], pair[1], True)
                assert isinstance(errors, list)
                assert isinstance(warnings, list)
                runs += 1
    return runs


def test_g1_shapes() -> None:
    assert _check(g1_trainjob(), g1_runtime()) > 300


def test_mpi_shapes() -> None:
    assert _check(g4_trainjob(numProcPerNode=2), g4_runtime(8)) > 300
