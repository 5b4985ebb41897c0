"""JSON merge patch (RFC 7386): the patch type the operator sends for custom resources."""

from __future__ import annotations

import copy
from typing import Any


def merge_patch(target: Any, patch: Any) -> Any:
    """``target`` with ``patch`` merged in; ``None`` in the patch deletes a key.

    Returns a new value and never modifies its inputs; subtrees the patch does not touch are
    shared with ``target`` rather than copied.
    """
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result
