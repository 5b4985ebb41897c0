"""The controller's defaults cache: equal to ``apply_defaults``, a new job each time, reused
while a job's spec is unchanged, recomputed when it changes, bounded."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.unit.api.builders import manifest
from trainop.api import manifest as manifests
from trainop.api.defaults import apply_defaults
from trainop.controller.defaults_cache import DefaultsCache


def raw_job(uid: str = "u1", version: str = "1", **spec: Any) -> dict[str, Any]:
    raw = manifest("PyTorchJob", **spec)
    raw["metadata"] |= {"uid": uid, "resourceVersion": version}
    return raw


def test_equal_to_apply_defaults_and_never_the_same_object() -> None:
    cache = DefaultsCache()
    raw = raw_job()
    job = manifests.parse_job(raw)
    first = cache.defaulted(raw, job)
    second = cache.defaulted(raw, manifests.parse_job(raw))
    assert first == apply_defaults(job)
    assert second == first
    assert second is not first
    assert (cache.hits, cache.misses) == (1, 1)
    assert first.spec.replica_specs["Worker"].restart_policy is not None  # defaults applied


def test_a_status_write_keeps_the_entry_a_spec_change_replaces_it() -> None:
    cache = DefaultsCache()
    raw = raw_job()
    cache.defaulted(raw, manifests.parse_job(raw))
    status_only = copy.deepcopy(raw) | {"status": {"conditions": []}}
    status_only["metadata"]["resourceVersion"] = "2"
    job = manifests.parse_job(status_only)
    assert cache.defaulted(status_only, job) == apply_defaults(job)
    assert cache.hits == 1
    changed = copy.deepcopy(status_only)
    changed["metadata"]["resourceVersion"] = "3"
    changed["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 7
    job = manifests.parse_job(changed)
    result = cache.defaulted(changed, job)
    assert result.spec.replica_specs["Worker"].replicas == 7
    assert result == apply_defaults(job)
    assert (cache.hits, cache.misses) == (1, 2)


def test_the_result_carries_the_current_status_and_metadata() -> None:
    cache = DefaultsCache()
    raw = raw_job()
    cache.defaulted(raw, manifests.parse_job(raw))
    later = copy.deepcopy(raw)
    later["metadata"] |= {"resourceVersion": "5", "labels": {"team": "a"}}
    later["status"] = {"conditions": [{"type": "Created", "status": "True"}]}
    result = cache.defaulted(later, manifests.parse_job(later))
    assert cache.hits == 1
    assert result.metadata.labels == {"team": "a"}
    assert result.status is not None
    assert result.status.conditions is not None
    assert result.status.conditions[0].type == "Created"


@pytest.mark.parametrize("uid", ["", None])
def test_a_job_without_uid_is_defaulted_every_time(uid: str | None) -> None:
    cache = DefaultsCache()
    raw = raw_job()
    raw["metadata"]["uid"] = uid
    for _ in range(2):
        assert cache.defaulted(raw, manifests.parse_job(raw)) == apply_defaults(
            manifests.parse_job(raw)
        )
    assert (cache.hits, cache.misses, len(cache)) == (0, 2, 0)


def test_bounded_oldest_first_and_forget() -> None:
    cache = DefaultsCache(limit=2)
    raws = [raw_job(uid=f"u{i}") for i in range(3)]
    for raw in raws:
        cache.defaulted(raw, manifests.parse_job(raw))
    assert len(cache) == 2
    cache.defaulted(raws[0], manifests.parse_job(raws[0]))  # evicted: computed again
    assert cache.misses == 4
    cache.forget("u0")
    cache.defaulted(raws[0], manifests.parse_job(raws[0]))
    assert (cache.hits, cache.misses) == (0, 5)
