"""Durable object store of the embedded API server: SQLite on disk, a read view in memory.

Role: hold every API object as JSON under a key ``(resource, namespace, name)``, hand out one
global, strictly increasing ``resourceVersion`` and keep a bounded in-memory event log that
watches resume from. It knows nothing of Kubernetes semantics (uids, generations, finalizers,
validation): that is the API server's job (``cluster.apiserver``).

Invariants:

- A write is acknowledged (its future resolves) only after the SQLite transaction holding it
  has committed with ``synchronous=FULL`` in WAL mode, i.e. after fsync. Writes are queued to
  one writer thread that commits whatever has queued up as one transaction (group commit), so
  a crash loses only unacknowledged writes and never half of one. The writes of one event-loop
  iteration reach the writer as one hand-off (``_flush``), not one thread wake-up each.
- resourceVersions are assigned in call order on the event-loop thread and committed in that
  order by the single writer, so the durable order, the committed view and the event log
  agree. The counter itself is stored in the same transaction, so it never goes backwards
  across restarts, even after deleting the newest object.
- Two views: ``latest`` (committed plus queued writes) is what write checks (exists? stale
  resourceVersion?) look at; ``get``/``list``/watch see only committed (durable) state, so no
  reader ever observes a write that a crash could still take back.
- Stored objects are shared and must be treated as immutable; callers that want to modify
  one work on ``json.loads(stored.raw)``.
- The database holds every Secret: its files are 0600 in a 0700 directory whatever the umask
  (``cluster.privacy``).

Volatile resources (Events; ``volatile``), as kube-apiserver keeps Events: in a separate,
best-effort store whose objects expire ``volatile_ttl`` seconds after their last write
(``--event-ttl``, default one hour). Their writes are not written to SQLite: they are
acknowledged without waiting for an fsync, and a crash may lose them (a clean stop keeps them:
``close`` saves them, the next start loads what has not expired). They still take their
resourceVersion from the one global counter, are listed, watched and logged like any object,
and become visible in resourceVersion order: one that follows a durable write still being
committed waits for it (``_held``). Expiry deletes the object (watchers see ``DELETED``). So
that no resourceVersion is handed out twice across a crash, a volatile write whose number is
above the durably stored ceiling reserves the next ``_RV_BLOCK`` numbers with a commit first.

Neighbours: ``cluster.apiserver.http.server`` owns one ``Store``;
``cluster.apiserver.rest.watch`` consumes ``Subscription`` queues; ``cluster.apiserver.gc``
listens to committed events.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import queue
import sqlite3
import stat
import threading
import time
from collections import deque
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainop.cluster import privacy
from trainop.errors import TrainopError

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS objects ("
    " resource TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,"
    " rv INTEGER NOT NULL, body BLOB NOT NULL, PRIMARY KEY (resource, namespace, name))",
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL)",
    # volatile objects saved by a clean stop (``expires``: wall-clock seconds), read at start
    "CREATE TABLE IF NOT EXISTS volatile ("
    " resource TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,"
    " rv INTEGER NOT NULL, expires REAL NOT NULL, body BLOB NOT NULL,"
    " PRIMARY KEY (resource, namespace, name))",
)
_RV_BLOCK = 1000  # resourceVersions a volatile write reserves durably at a time


class StoreError(TrainopError):
    """The store could not make a write durable (disk full, database closed)."""


@dataclass(frozen=True, slots=True, order=True)
class Key:
    """Where an object lives: resource is ``group/plural`` (``core/pods``), namespace '' if none."""

    resource: str
    namespace: str
    name: str


@dataclass(frozen=True, slots=True)
class Stored:
    """One version of one object: the parsed dict (read-only by convention) and its JSON."""

    key: Key
    rv: int
    obj: dict[str, Any]
    raw: bytes


@dataclass(frozen=True, slots=True)
class Event:
    """A committed change; ``prev`` is the version it replaced (None for ADDED)."""

    type: str
    stored: Stored
    prev: Stored | None


@dataclass(slots=True)
class Subscription:
    """A watcher's inbox for committed events of one resource (optionally one namespace)."""

    resource: str
    namespace: str | None
    queue: asyncio.Queue[Event] = field(default_factory=asyncio.Queue)


@dataclass(frozen=True, slots=True)
class _Write:
    key: Key
    rv: int
    stored: Stored | None  # None: delete
    event: Event
    future: asyncio.Future[Stored]
    ceiling: int = 0  # the resourceVersion counter's durable value once this commits
    volatile: bool = False  # not written to SQLite


def encode(obj: dict[str, Any]) -> bytes:
    """Serialise an object the one way the store and the HTTP layer both use: compact, UTF-8,
    what ``json.dumps(obj, separators=(",", ":"), ensure_ascii=False)`` writes."""
    if _ENCODE is None:
        return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()
    return "".join(_ENCODE(obj, 0)).encode()


def _c_encoder() -> Any:
    """CPython's C encoder, made once: ``json.dumps`` with these options builds a new one
    per call (a quarter of its time for a pod). No circular-reference check: decoded JSON
    cannot hold a cycle. None where the C accelerator is missing."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return None
    base = json.JSONEncoder()
    return make(
        None, base.default, json.encoder.encode_basestring, None, ":", ",", False, False, True
    )


_ENCODE = _c_encoder()


class Store:
    """SQLite-backed object store with group commit, a committed view and an event log."""

    def __init__(
        self,
        *,
        path: Path,
        history: int = 10_000,
        volatile: Collection[str] = (),
        volatile_ttl: float = 3600.0,
    ) -> None:
        self._path = path
        self._db = _connect(path)
        self._volatile = frozenset(volatile)
        self._ttl = volatile_ttl
        self._expires: dict[Key, float] = {}  # volatile keys: wall-clock expiry
        self._inflight: deque[int] = deque()  # rvs queued to the writer, in order
        self._held: deque[_Write] = deque()  # volatile writes waiting for earlier ones
        self._release_soon = False
        self._sweeper: asyncio.TimerHandle | None = None
        self._committed: dict[str, dict[tuple[str, str], Stored]] = {}
        self._pending: dict[Key, Stored | None] = {}
        self._pending_count: dict[Key, int] = {}
        self._log: deque[Event] = deque(maxlen=history)
        self._subs: dict[str, list[Subscription]] = {}
        self._listeners: list[Callable[[Event], None]] = []
        self._rv = self._load()
        self._reserved = self._rv  # no rv above this is durably accounted for yet
        self._committed_rv = self._rv
        self._floor_rv = self._rv  # events with rv > floor are in the log
        self._queue: queue.SimpleQueue[list[_Write] | None] = queue.SimpleQueue()
        self._outbox: list[_Write] = []  # this loop iteration's writes, handed over at its end
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # ---- lifecycle -------------------------------------------------------------------

    def start(self) -> None:
        """Start the writer thread; must be called from the event loop that will write."""
        self._loop = asyncio.get_running_loop()
        self._thread = threading.Thread(target=self._writer, name="store-writer", daemon=True)
        self._thread.start()
        if self._volatile:
            self._sweeper = self._loop.call_later(self._sweep_interval(), self._sweep)

    async def close(self) -> None:
        """Stop the writer after everything queued so far is durable, save the volatile
        objects, then close SQLite."""
        if self._sweeper is not None:
            self._sweeper.cancel()
        if self._thread is not None:
            self._flush()
            self._queue.put(None)
            await asyncio.to_thread(self._thread.join)
            self._thread = None
        self._release()
        with contextlib.suppress(sqlite3.Error):  # best effort, as their writes were
            self._save_volatile()
        self._db.close()

    # ---- reads -----------------------------------------------------------------------

    @property
    def resource_version(self) -> int:
        """The newest committed resourceVersion."""
        return self._committed_rv

    def get(self, key: Key) -> Stored | None:
        """The committed version of ``key``, or None."""
        return self._committed.get(key.resource, {}).get((key.namespace, key.name))

    def latest(self, key: Key) -> Stored | None:
        """The newest version including queued, not yet durable writes (for write checks)."""
        if key in self._pending:
            return self._pending[key]
        return self.get(key)

    def select(self, *, resource: str, namespace: str | None = None) -> list[Stored]:
        """Committed objects of a resource, sorted by namespace then name."""
        table = self._committed.get(resource, {})
        keys = sorted(k for k in table if namespace is None or k[0] == namespace)
        return [table[k] for k in keys]

    def count(self, resource: str) -> int:
        """How many objects of ``resource`` exist, counting queued creates and deletes."""
        table = self._committed.get(resource, {})
        total = len(table)
        for key, stored in self._pending.items():
            if key.resource != resource:
                continue
            present = (key.namespace, key.name) in table
            total += (stored is not None and not present) - (stored is None and present)
        return total

    def iter_all(self) -> Iterator[Stored]:
        """Every committed object of every resource (for indexes rebuilt at start)."""
        for table in self._committed.values():
            yield from table.values()

    def events_since(self, rv: int) -> list[Event] | None:
        """Committed events with resourceVersion > rv, or None if the log no longer has them."""
        if rv < self._floor_rv:
            return None
        if not self._log or rv >= self._log[-1].stored.rv:
            return []
        return [e for e in self._log if e.stored.rv > rv]

    # ---- subscriptions -------------------------------------------------------------

    def subscribe(self, *, resource: str, namespace: str | None) -> Subscription:
        """Register a watcher; it receives every event committed after this call."""
        sub = Subscription(resource=resource, namespace=namespace)
        self._subs.setdefault(resource, []).append(sub)
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        """Forget a watcher; safe to call twice."""
        with contextlib.suppress(KeyError, ValueError):
            self._subs[sub.resource].remove(sub)

    def add_listener(self, listener: Callable[[Event], None]) -> None:
        """Call ``listener`` synchronously for every committed event (indexes, GC)."""
        self._listeners.append(listener)

    # ---- writes ----------------------------------------------------------------------

    def put(self, key: Key, obj: dict[str, Any]) -> asyncio.Future[Stored]:
        """Queue a create-or-replace; stamps ``metadata.resourceVersion`` into ``obj``.

        The returned future resolves with the stored version once it is durable.
        """
        prev = self.latest(key)
        self._rv += 1
        obj.setdefault("metadata", {})["resourceVersion"] = str(self._rv)
        stored = Stored(key=key, rv=self._rv, obj=obj, raw=encode(obj))
        event = Event(type=MODIFIED if prev else ADDED, stored=stored, prev=prev)
        return self._enqueue(key, stored, event)

    def delete(self, key: Key, final: dict[str, Any] | None = None) -> asyncio.Future[Stored]:
        """Queue the removal of ``key`` (which must exist in ``latest``).

        The DELETED event carries ``final`` (the object's last state, e.g. with its last
        finalizer removed) or else the newest stored version.
        """
        prev = self.latest(key)
        if prev is None:
            raise StoreError(f"delete of missing key {key}")
        self._rv += 1
        obj = final if final is not None else json.loads(prev.raw)
        obj["metadata"]["resourceVersion"] = str(self._rv)
        stored = Stored(key=key, rv=self._rv, obj=obj, raw=encode(obj))
        event = Event(type=DELETED, stored=stored, prev=prev)
        return self._enqueue(key, None, event)

    def _enqueue(self, key: Key, stored: Stored | None, event: Event) -> asyncio.Future[Stored]:
        if self._loop is None or self._thread is None:
            raise StoreError("store is not started")
        future: asyncio.Future[Stored] = self._loop.create_future()
        self._pending[key] = stored
        self._pending_count[key] = self._pending_count.get(key, 0) + 1
        rv, volatile = event.stored.rv, key.resource in self._volatile
        if volatile and rv <= self._reserved:
            self._held.append(_Write(key, rv, stored, event, future, volatile=True))
            if not self._release_soon:
                self._release_soon = True
                self._loop.call_soon(self._release)
            return future
        if volatile:  # commit a new ceiling before this number is seen
            self._reserved = rv + _RV_BLOCK
        ceiling = max(rv, self._reserved)
        self._inflight.append(rv)
        self._outbox.append(_Write(key, rv, stored, event, future, ceiling, volatile))
        if len(self._outbox) == 1:
            self._loop.call_soon(self._flush)
        return future

    def _flush(self) -> None:
        if self._outbox:
            self._queue.put(self._outbox)
            self._outbox = []

    def _release(self) -> None:
        """Apply the held volatile writes that no queued durable write precedes."""
        self._release_soon = False
        bound = self._inflight[0] if self._inflight else None
        while self._held and (bound is None or self._held[0].rv < bound):
            w = self._held.popleft()
            self._settle_pending(w.key)
            self._apply(w)
            if not w.future.done():
                w.future.set_result(w.event.stored)

    # ---- writer thread ---------------------------------------------------------------

    def _writer(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch = list(first)
            stop = self._drain_into(batch)
            error = self._commit(batch)
            assert self._loop is not None
            try:
                self._loop.call_soon_threadsafe(self._on_durable, batch, error)
            except RuntimeError:  # the loop is closed (a signal ended start-up): nobody waits
                return
            if stop:
                return

    def _drain_into(self, batch: list[_Write]) -> bool:
        while len(batch) < 2000:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return False
            if item is None:
                return True
            batch.extend(item)
        return False

    def _commit(self, batch: list[_Write]) -> Exception | None:
        try:
            with self._db:
                for w in batch:
                    if not w.volatile:
                        self._write_row(w)
                ceiling = max(w.ceiling for w in batch)
                self._db.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES ('rv', ?)", (ceiling,)
                )
        except sqlite3.Error as exc:
            return exc
        return None

    def _write_row(self, w: _Write) -> None:
        k = w.key
        if w.stored is None:
            self._db.execute(
                "DELETE FROM objects WHERE resource=? AND namespace=? AND name=?",
                (k.resource, k.namespace, k.name),
            )
            return
        self._db.execute(
            "INSERT OR REPLACE INTO objects (resource, namespace, name, rv, body)"
            " VALUES (?, ?, ?, ?, ?)",
            (k.resource, k.namespace, k.name, w.rv, w.stored.raw),
        )

    # ---- back on the event loop ------------------------------------------------------

    def _on_durable(self, batch: list[_Write], error: Exception | None) -> None:
        for w in batch:
            self._release()  # the volatile writes numbered before this one
            self._inflight.popleft()
            self._settle_pending(w.key)
            if error is not None:
                if not w.future.done():
                    w.future.set_exception(StoreError(f"write not durable: {error}"))
                continue
            self._apply(w)
            if not w.future.done():
                w.future.set_result(w.event.stored)
        self._release()

    def _settle_pending(self, key: Key) -> None:
        left = self._pending_count[key] - 1
        if left:
            self._pending_count[key] = left
        else:
            del self._pending_count[key]
            del self._pending[key]

    def _apply(self, w: _Write) -> None:
        table = self._committed.setdefault(w.key.resource, {})
        slot = (w.key.namespace, w.key.name)
        if w.stored is None:
            table.pop(slot, None)
        else:
            table[slot] = w.stored
        if w.key.resource in self._volatile:
            if w.stored is None:
                self._expires.pop(w.key, None)
            else:
                self._expires[w.key] = time.time() + self._ttl
        self._committed_rv = w.rv
        if len(self._log) == self._log.maxlen:
            self._floor_rv = self._log[0].stored.rv
        self._log.append(w.event)
        for listener in self._listeners:
            listener(w.event)
        for sub in self._subs.get(w.key.resource, ()):
            if sub.namespace is None or sub.namespace == w.key.namespace:
                sub.queue.put_nowait(w.event)

    # ---- volatile objects: expiry, and what a clean stop keeps ------------------------

    def _sweep_interval(self) -> float:
        return min(max(self._ttl / 10, 0.01), 30.0)

    def _sweep(self) -> None:
        """Delete the volatile objects whose TTL has passed (as etcd's leases do for kube)."""
        now = time.time()
        for key, expires in list(self._expires.items()):
            if expires <= now and key not in self._pending and self.get(key) is not None:
                self.delete(key)
        assert self._loop is not None
        self._sweeper = self._loop.call_later(self._sweep_interval(), self._sweep)

    def _save_volatile(self) -> None:
        with self._db:
            self._db.execute("DELETE FROM volatile")
            for key, expires in self._expires.items():
                stored = self.get(key)
                if stored is not None:
                    self._db.execute(
                        "INSERT INTO volatile VALUES (?, ?, ?, ?, ?, ?)",
                        (key.resource, key.namespace, key.name, stored.rv, expires, stored.raw),
                    )
            self._db.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('rv', ?)", (self._rv,)
            )

    # ---- start-up --------------------------------------------------------------------

    def _load(self) -> int:
        """Read every object; volatile ones (saved by the last clean stop, or written durably
        by an older version) move to memory, so none can come back after a later crash."""
        rows = self._db.execute("SELECT resource, namespace, name, rv, NULL, body FROM objects")
        saved = self._db.execute(
            "SELECT resource, namespace, name, rv, expires, body FROM volatile"
        )
        newest, now = 0, time.time()
        for resource, namespace, name, rv, expires, body in [*rows, *saved]:
            newest = max(newest, rv)
            key = Key(resource=resource, namespace=namespace, name=name)
            if resource in self._volatile:
                expires = now + self._ttl if expires is None else expires
                if expires <= now:
                    continue
                self._expires[key] = expires
            raw = bytes(body)
            table = self._committed.setdefault(resource, {})
            table[(namespace, name)] = Stored(key=key, rv=rv, obj=json.loads(raw), raw=raw)
        row = self._db.execute("SELECT value FROM meta WHERE key='rv'").fetchone()
        with self._db:
            self._db.execute("DELETE FROM volatile")
            for resource in self._volatile:
                self._db.execute("DELETE FROM objects WHERE resource=?", (resource,))
        return max(newest, int(row[0]) if row else 0)


def _connect(path: Path) -> sqlite3.Connection:
    _private_files(path)
    try:
        db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        for statement in _SCHEMA:
            db.execute(statement)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open store {path}: {exc}") from exc
    # isolation_level=None is autocommit; `with db` below needs explicit transactions.
    db.isolation_level = "DEFERRED"
    return db


def _private_files(path: Path) -> None:
    """The database and its WAL/shared-memory files are 0600 (SQLite gives the WAL files the
    database's own mode), whatever the umask; an older store is narrowed on open."""
    privacy.private_dirs(path.parent)
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT, privacy.FILE_MODE))
    for suffix in ("", "-wal", "-shm", "-journal"):
        candidate = path.with_name(path.name + suffix)
        if candidate.exists() and stat.S_IMODE(candidate.stat().st_mode) != privacy.FILE_MODE:
            candidate.chmod(privacy.FILE_MODE)
