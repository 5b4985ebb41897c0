"""Sharing equal parts of cached objects: one copy of each label, owner reference, condition.

Thousands of cached pods repeat the same strings (label keys and values, the owner's uid,
condition types, timestamps within a second) and the same small structures (a job's owner
reference, the four conditions of a pod started in the same second, ``{"running": {}}``).
``Sharer.share`` rebuilds a decoded JSON value bottom-up so that equal strings are one
``sys.intern``'d object and equal dicts and lists (by value, recursively) are one object,
looked up in a table of the most recent ``capacity`` distinct ones (oldest dropped first, so
memory stays bounded as jobs come and go; a dropped entry only means less sharing).

Invariant: what ``share`` returns may be referenced by many cached objects, so it must never be
mutated — the informers' contract already (their objects are shared, read-only).
"""

from __future__ import annotations

import sys
from typing import Any

_Key = tuple[Any, ...]


class Sharer:
    """Hash-consing of JSON values; see the module docstring."""

    def __init__(self, capacity: int = 16384) -> None:
        self._capacity = capacity
        self._table: dict[_Key, Any] = {}

    def __len__(self) -> int:
        return len(self._table)

    def share(self, value: Any) -> Any:
        """``value`` rebuilt with shared strings, dicts and lists (equal to it)."""
        return self._share(value)[0]

    def _share(self, value: Any) -> tuple[Any, Any]:
        """The shared value and its key: identity for containers, the value for scalars."""
        if isinstance(value, str):
            shared = sys.intern(value)
            return shared, shared
        if isinstance(value, dict):
            items = [(sys.intern(k), *self._share(v)) for k, v in value.items()]
            key: _Key = ("d", *((k, kv) for k, _, kv in items))
            return self._lookup(key, lambda: {k: v for k, v, _ in items})
        if isinstance(value, list):
            parts = [self._share(v) for v in value]
            key = ("l", *(kv for _, kv in parts))
            return self._lookup(key, lambda: [v for v, _ in parts])
        return value, (type(value), value)  # True and 1 are equal, but not the same JSON

    def _lookup(self, key: _Key, make: Any) -> tuple[Any, Any]:
        shared = self._table.get(key)
        if shared is None:
            shared = self._table[key] = make()
            if len(self._table) > self._capacity:
                del self._table[next(iter(self._table))]
        # A container's key is its identity: the table holds it, so the id is not reused
        # while an entry whose key names it is there.
        return shared, id(shared)
