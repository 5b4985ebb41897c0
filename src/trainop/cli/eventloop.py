"""The event loop long-running commands run on: uvloop's where it is installed, else asyncio's.

uvloop's loop (libuv, written in Cython) spends less CPU per socket operation, timer and
callback than asyncio's pure-Python loop, and its TLS transport is cheaper too; for the
operator, which sends ~20 requests per job and decodes every watch event, that is CPU per job
(docs/design/, the kube client note). It is an optional speed-up, never a requirement: on
platforms without a wheel (Windows) or where ``TRAINOP_EVENT_LOOP=asyncio`` is set (to rule
the loop out when chasing a bug), ``asyncio.run`` runs the coroutine instead.
"""

from __future__ import annotations

import asyncio
import importlib
import os
from collections.abc import Coroutine
from typing import Any, TypeVar

_T = TypeVar("_T")

ENV_VAR = "TRAINOP_EVENT_LOOP"
"""Environment variable choosing the loop: ``asyncio`` forces asyncio's; anything else, or
unset, takes uvloop's when it can be imported."""


def loop_name() -> str:
    """``uvloop`` or ``asyncio``: the loop ``run`` will use in this process."""
    if os.environ.get(ENV_VAR, "").strip().lower() == "asyncio":
        return "asyncio"
    try:
        importlib.import_module("uvloop")
    except ImportError:
        return "asyncio"
    return "uvloop"


def run(coro: Coroutine[Any, Any, _T]) -> _T:
    """Run ``coro`` to completion on a fresh loop (see the module docstring for which).

    Same contract as ``asyncio.run``: a new loop, closed at the end, pending tasks cancelled,
    async generators and the default executor shut down.
    """
    if loop_name() == "uvloop":
        uvloop = importlib.import_module("uvloop")
        result: _T = uvloop.run(coro)
        return result
    return asyncio.run(coro)
