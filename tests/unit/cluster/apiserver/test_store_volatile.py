"""The store's volatile part (Events): in order with durable writes, TTL'd, kept by a clean
stop, never handing a resourceVersion out twice across a crash."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests import polling
from trainop.cluster.apiserver import store

EVENTS = "core/events"


def _cm(name: str) -> store.Key:
    return store.Key(resource="core/configmaps", namespace="default", name=name)


def _ev(name: str) -> store.Key:
    return store.Key(resource=EVENTS, namespace="default", name=name)


def _open(path: Path, ttl: float = 3600.0) -> store.Store:
    return store.Store(path=path, volatile={EVENTS}, volatile_ttl=ttl)


def _counting_commits(db: store.Store, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record the size of every batch the writer commits."""
    sizes: list[int] = []
    commit = db._commit

    def counted(batch: list[Any]) -> Exception | None:
        sizes.append(len(batch))
        return commit(batch)

    monkeypatch.setattr(db, "_commit", counted)
    return sizes


async def _event_writes(path: Path, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    db = _open(path)
    commits = _counting_commits(db, monkeypatch)
    db.start()
    for i in range(20):
        stored = await db.put(_ev(f"e{i}"), {"metadata": {"name": f"e{i}"}})
        assert db.get(_ev(f"e{i}")) == stored  # acknowledged means visible
    await db.close()
    return commits


def test_event_writes_are_acknowledged_without_a_commit_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the first Event commits (it reserves a block of resourceVersions); the next 19
    are acknowledged from memory."""
    assert asyncio.run(_event_writes(tmp_path / "s.db", monkeypatch)) == [1]


async def _ordered(path: Path, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    db = _open(path)
    gate = threading.Event()
    commit = db._commit

    def slow_commit(batch: list[Any]) -> Exception | None:
        gate.wait(timeout=30)
        return commit(batch)

    monkeypatch.setattr(db, "_commit", slow_commit)
    db.start()
    sub = db.subscribe(resource=EVENTS, namespace=None)
    gate.set()
    await db.put(_ev("first"), {"metadata": {"name": "first"}})  # reserves the block
    gate.clear()
    durable = db.put(_cm("a"), {"metadata": {"name": "a"}})
    event = db.put(_ev("after"), {"metadata": {"name": "after"}})
    for _ in range(10):  # releases are scheduled with call_soon: let them all run
        await asyncio.sleep(0)
    assert not event.done()  # numbered after a write still being committed: not yet seen
    assert db.get(_ev("after")) is None
    assert db.latest(_ev("after")) is not None  # but write checks see it
    gate.set()
    await event
    assert durable.done()
    log = db.events_since(0)
    assert log is not None
    assert sub.queue.qsize() == 2
    await db.close()
    return [(e.stored.key.name, e.stored.rv) for e in log]


def test_an_event_becomes_visible_after_the_durable_writes_numbered_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert asyncio.run(_ordered(tmp_path / "s.db", monkeypatch)) == [
        ("first", 1),
        ("a", 2),
        ("after", 3),
    ]


async def _expiring(path: Path) -> list[str]:
    db = _open(path, ttl=0.2)
    db.start()
    sub = db.subscribe(resource=EVENTS, namespace=None)
    await db.put(_ev("short"), {"metadata": {"name": "short"}})
    await polling.until(lambda: db.get(_ev("short")) is None, timeout=10, what="expiry")
    seen = [sub.queue.get_nowait().type for _ in range(sub.queue.qsize())]
    await db.close()
    return seen


def test_an_event_expires_after_its_ttl_as_a_deletion_watchers_see(tmp_path: Path) -> None:
    assert asyncio.run(_expiring(tmp_path / "s.db")) == [store.ADDED, store.DELETED]


async def _write(db: store.Store, key: store.Key) -> int:
    return (await db.put(key, {"metadata": {"name": key.name}})).rv


def test_a_clean_stop_keeps_events_a_crash_after_the_restart_loses_them(tmp_path: Path) -> None:
    path = tmp_path / "s.db"

    async def first() -> int:
        db = _open(path)
        db.start()
        rv = await _write(db, _ev("kept"))
        await db.close()
        return rv

    kept_rv = asyncio.run(first())
    reopened = _open(path)
    assert reopened.get(_ev("kept")) is not None
    assert reopened.get(_ev("kept")).rv == kept_rv  # type: ignore[union-attr]
    reopened._db.close()  # a crash: no clean stop saves them again
    after_crash = _open(path)
    assert after_crash.get(_ev("kept")) is None
    assert after_crash.resource_version >= kept_rv


def test_an_event_past_its_ttl_at_restart_is_not_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.db"

    async def first() -> None:
        db = _open(path, ttl=60)
        db.start()
        await _write(db, _ev("old"))
        await _write(db, _ev("young"))
        db._expires[_ev("young")] += 120  # written later: its TTL ends later
        await db.close()

    asyncio.run(first())
    now = time.time()
    monkeypatch.setattr(store.time, "time", lambda: now + 90)  # "old" expired meanwhile
    reopened = _open(path, ttl=60)
    assert reopened.get(_ev("old")) is None
    assert reopened.get(_ev("young")) is not None


def test_resource_versions_of_events_are_not_reused_after_a_crash(tmp_path: Path) -> None:
    """Events acknowledged but never saved: the counter the next start reads is above them."""
    path = tmp_path / "s.db"

    async def crashing() -> int:
        db = _open(path)
        db.start()
        await _write(db, _cm("durable"))
        newest = 0
        for i in range(50):
            newest = await _write(db, _ev(f"e{i}"))
        return newest  # never closed: nothing saved at a stop

    newest = asyncio.run(crashing())
    assert _open(path).resource_version >= newest


def test_events_an_older_store_kept_durably_move_to_memory(tmp_path: Path) -> None:
    path = tmp_path / "s.db"

    async def older() -> None:
        db = store.Store(path=path)  # before Events were volatile
        db.start()
        await _write(db, _ev("legacy"))
        await db.close()

    asyncio.run(older())
    assert _open(path).get(_ev("legacy")) is not None
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT count(*) FROM objects WHERE resource=?", (EVENTS,)).fetchone()
    assert rows == (0,)  # a crash from now on cannot bring back a deleted one
