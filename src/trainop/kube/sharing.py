"""Sharing equal parts of cached objects: one copy of each label, owner reference, condition.

Thousands of cached pods repeat the same strings (label keys and values, the owner's uid,
condition types, timestamps within a second) and the same small structures (a job's owner
reference, the four conditions of a pod started in the same second, ``{"running": {}}``).
``Sharer.share`` returns one object for all equal values (keyed by their compact JSON text,
which C's encoder makes in microseconds), built once with ``sys.intern``'d strings, from a
table of the most recent ``capacity`` distinct values (oldest dropped first, so memory stays
bounded as jobs come and go; a dropped entry only means less sharing).

Invariant: what ``share`` returns may be referenced by many cached objects, so it must never be
mutated — the informers' contract already (their objects are shared, read-only).
"""

from __future__ import annotations

import json
import sys
from typing import Any


class Sharer:
    """Hash-consing of JSON values; see the module docstring."""

    def __init__(self, capacity: int = 16384) -> None:
        self._capacity = capacity
        self._table: dict[str, Any] = {}

    def __len__(self) -> int:
        return len(self._table)

    def share(self, value: Any) -> Any:
        """``value`` (decoded JSON) as one shared object per distinct value, equal to it."""
        try:
            key = _encode(value)  # C speed; true and 1, 1 and 1.0 encode apart
        except (TypeError, ValueError):
            return value  # not JSON: nothing to share
        shared = self._table.get(key)
        if shared is None:
            shared = self._table[key] = _interned(value)
            if len(self._table) > self._capacity:
                del self._table[next(iter(self._table))]
        return shared


_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False).encode


def _interned(value: Any) -> Any:
    """A copy of ``value`` whose strings (keys and values) are ``sys.intern``'d."""
    if isinstance(value, str):
        return sys.intern(value)
    if isinstance(value, dict):
        return {sys.intern(k): _interned(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_interned(v) for v in value]
    return value
