"""No created body shares a mutable object with another, with another plan's, or with the job.

``desired.pod`` deep-copies a replica's template once and the frameworks' decorators then edit
that copy in place (``PodDecorator``); a decorator or step that put one object into two pods
(a module-level mount, a cached init container, the template's own dicts) would let an edit of
one body — the client's, a later step's — change another. This walks every dict and list.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from support import CANONICAL, ELASTIC_PYTORCH, run

from trainop.api.types import Job
from trainop.engine.actions import Create
from trainop.engine.plan import EngineOptions

JOBS = {**CANONICAL, "ElasticPyTorchJob": ELASTIC_PYTORCH}
OPTIONS = {"plain": EngineOptions(), "volcano": EngineOptions(gang_scheduler_name="volcano")}


def _containers(value: Any) -> Iterator[dict[str, Any] | list[Any]]:
    """Every dict and list reachable from ``value`` (``value`` included)."""
    if isinstance(value, dict):
        yield value
        for item in value.values():
            yield from _containers(item)
    elif isinstance(value, list):
        yield value
        for item in value:
            yield from _containers(item)


def _ids(value: Any) -> set[int]:
    return {id(item) for item in _containers(value)}


def _bodies(job: Job, options: EngineOptions) -> list[dict[str, Any]]:
    return [a.body for a in run(job, options=options).actions if isinstance(a, Create)]


def _job_ids(job: Job) -> set[int]:
    return set().union(*(_ids(spec.template) for spec in job.spec.replica_specs.values()))


@pytest.mark.parametrize("option", sorted(OPTIONS))
@pytest.mark.parametrize("kind", sorted(JOBS))
def test_created_bodies_share_nothing(kind: str, option: str) -> None:
    job = JOBS[kind]
    first, second = _bodies(job, OPTIONS[option]), _bodies(job, OPTIONS[option])
    # With a gang scheduler some kinds create only their PodGroup on the first reconcile.
    assert any(body["kind"] == "Pod" for body in first) or option == "volcano"
    seen: dict[int, str] = {}
    for label, bodies in (("first", first), ("second", second)):
        for body in bodies:
            where = f"{label} plan's {body['kind']} {body['metadata']['name']}"
            for item_id in _ids(body):
                assert item_id not in seen, f"{where} shares an object with {seen[item_id]}"
                seen[item_id] = where
    assert not _job_ids(job) & set(seen), "a created body shares an object with the job"


@pytest.mark.parametrize("kind", sorted(JOBS))
def test_editing_a_plans_pods_changes_neither_the_job_nor_the_next_plan(kind: str) -> None:
    job = JOBS[kind]
    before = copy.deepcopy(_bodies(job, EngineOptions()))
    templates = {rt: copy.deepcopy(spec.template) for rt, spec in job.spec.replica_specs.items()}
    for body in _bodies(job, EngineOptions()):
        for item in _containers(body):
            if isinstance(item, dict):
                item["edited"] = True
            else:
                item.append("edited")
    assert _bodies(job, EngineOptions()) == before
    assert {rt: spec.template for rt, spec in job.spec.replica_specs.items()} == templates
