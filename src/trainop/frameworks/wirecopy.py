"""``wire_copy``: a deep copy of decoded JSON (dicts, lists, strings, numbers), 2.5x cheaper.

``copy.deepcopy`` keeps a memo of every object and dispatches on each one's type; the pod
templates and init containers the engine copies for every pod it builds are plain JSON, for
which a recursive walk does the same work in ~40% of the time (a PyTorch template: 25 µs →
10 µs). Anything that is not a dict, a list or an immutable JSON scalar (a YAML date, a tuple)
is handed to ``copy.deepcopy``, so the result is always a copy sharing no mutable object with
the original. Unlike ``deepcopy`` it never shares: an object present twice is copied twice,
which is what a body sent to the API wants anyway.
"""

from __future__ import annotations

import copy
from typing import Any, TypeVar, cast

_SCALARS = (str, int, float, bool, type(None))
_T = TypeVar("_T")


def wire_copy(value: _T) -> _T:
    """A deep copy of ``value``; see the module docstring."""
    return cast(_T, _copy(value))


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy(item) for item in value]
    if isinstance(value, _SCALARS):
        return value
    return copy.deepcopy(value)
