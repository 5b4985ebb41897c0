"""The garbage collector deletes a dependent whose owners are all gone, however it appears."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from trainop.cluster.apiserver import gc, store
from trainop.cluster.apiserver.rest import resources
from trainop.cluster.apiserver.rest.call import ApiState
from trainop.kube.podlogs import MemoryLogSource

_PODS = "core/pods"


def _state(path: Path) -> ApiState:
    db = store.Store(path=path)
    return ApiState(
        store=db,
        registry=resources.Registry(),
        log_source=MemoryLogSource(),
        clock=lambda: datetime(2026, 1, 1, tzinfo=UTC),
    )


def _pod(name: str, *owners: str) -> dict[str, Any]:
    refs = [{"apiVersion": "v1", "kind": "ConfigMap", "name": f"o-{u}", "uid": u} for u in owners]
    meta: dict[str, Any] = {"name": name, "namespace": "default", "uid": f"uid-{name}"}
    if refs:
        meta["ownerReferences"] = refs
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta}


def _key(name: str, resource: str = _PODS) -> store.Key:
    return store.Key(resource=resource, namespace="default", name=name)


async def _orphan_at_start(path: Path) -> tuple[list[str], bool, bool]:
    state = _state(path)
    state.store.start()
    await state.store.put(_key("orphan"), _pod("orphan", "gone-uid"))
    await state.store.put(_key("lonely"), _pod("lonely"))
    collector = gc.GarbageCollector(state, sweep_interval=0)
    collector.start()  # what a restarted server runs: one sweep over the store
    await asyncio.wait_for(collector.idle(), 5)
    swept = collector.sweep()
    result = (
        swept,
        state.store.latest(_key("orphan")) is None,
        state.store.latest(_key("lonely")) is None,
    )
    await collector.stop()
    await state.store.close()
    return result


def test_a_dependent_of_an_unknown_owner_is_collected_within_one_sweep(tmp_path: Path) -> None:
    swept, orphan_gone, lonely_gone = asyncio.run(_orphan_at_start(tmp_path / "s.db"))
    assert orphan_gone
    assert not lonely_gone  # no ownerReferences: never collected
    assert swept == []  # nothing left to sweep


async def _created_orphans(path: Path) -> dict[str, bool]:
    state = _state(path)
    state.store.start()
    owner = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "o-live", "namespace": "default", "uid": "live"},
    }
    await state.store.put(_key("o-live", "core/configmaps"), owner)
    collector = gc.GarbageCollector(state, sweep_interval=0)
    collector.start()
    await state.store.put(_key("stale"), _pod("stale", "gone-uid"))  # created after its owner left
    await state.store.put(_key("owned"), _pod("owned", "live"))
    await state.store.put(_key("mixed"), _pod("mixed", "live", "gone-uid"))
    await asyncio.wait_for(collector.idle(), 5)
    mixed = state.store.latest(_key("mixed"))
    result = {
        "stale": state.store.latest(_key("stale")) is None,
        "owned": state.store.latest(_key("owned")) is None,
        "mixed": mixed is None,
        "mixed_refs": mixed is not None
        and [r["uid"] for r in mixed.obj["metadata"]["ownerReferences"]] == ["live"],
    }
    await collector.stop()
    await state.store.close()
    return result


def test_a_dependent_created_after_its_owner_is_gone_is_collected(tmp_path: Path) -> None:
    result = asyncio.run(_created_orphans(tmp_path / "s.db"))
    assert result["stale"]
    assert not result["owned"]
    assert not result["mixed"]  # a live owner keeps it, only the dangling reference goes
    assert result["mixed_refs"]
