"""The store: durable across reopen, resourceVersions never go back, committed-only reads."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from trainop.cluster.apiserver import store


def _key(name: str) -> store.Key:
    return store.Key(resource="core/configmaps", namespace="default", name=name)


async def _write_then_delete_newest(path: Path) -> int:
    db = store.Store(path=path)
    db.start()
    first = db.put(_key("a"), {"metadata": {"name": "a"}})
    assert db.get(_key("a")) is None  # queued, not yet durable: readers do not see it
    assert db.latest(_key("a")) is not None  # but write checks do
    await first
    await db.put(_key("b"), {"metadata": {"name": "b"}})
    deleted = await db.delete(_key("b"))
    await db.close()
    return deleted.rv


def test_reopen_keeps_objects_and_resource_version(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    last = asyncio.run(_write_then_delete_newest(path))
    reopened = store.Store(path=path)
    assert reopened.resource_version == last  # the delete's rv, not the newest object's
    assert [s.key.name for s in reopened.select(resource="core/configmaps")] == ["a"]
    assert reopened.events_since(last - 1) is None  # history does not survive a restart
    assert reopened.events_since(last) == []


async def _events(path: Path) -> list[tuple[str, int]]:
    db = store.Store(path=path, history=2)
    db.start()
    for name in ("a", "b", "c"):
        await db.put(_key(name), {"metadata": {"name": name}})
    events = db.events_since(1)
    oldest = db.events_since(0)
    await db.close()
    assert oldest is None  # rv 1's successor fell out of a 2-event history
    assert events is not None
    return [(e.type, e.stored.rv) for e in events]


def test_event_log_is_bounded(tmp_path: Path) -> None:
    assert asyncio.run(_events(tmp_path / "s.db")) == [("ADDED", 2), ("ADDED", 3)]


def test_a_write_committed_after_its_loop_closed_ends_the_writer_quietly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A signal can end start-up with writes queued and the loop gone: the writer thread must
    not die with a traceback on the closed loop (seen as "Exception in thread store-writer")."""
    failures: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: failures.append(args.exc_value))
    db = store.Store(path=tmp_path / "store.db")
    loop = asyncio.new_event_loop()
    gate = threading.Event()
    commit = db._commit

    def slow_commit(batch: list[Any]) -> Exception | None:
        gate.wait(timeout=30)  # commit only once the loop is closed
        return commit(batch)

    monkeypatch.setattr(db, "_commit", slow_commit)

    async def begin() -> None:
        db.start()
        db.put(_key("a"), {"metadata": {"name": "a"}})

    loop.run_until_complete(begin())
    loop.close()
    gate.set()
    assert db._thread is not None
    db._thread.join(timeout=30)
    assert not db._thread.is_alive()
    assert failures == []
