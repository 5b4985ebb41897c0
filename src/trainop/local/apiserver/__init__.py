"""The embedded Kubernetes-compatible API server of trainop's local and simulated modes.

A real HTTP server (aiohttp) speaking the subset of the Kubernetes REST API that the
controller, the SDK and standard clients use, backed by ``trainop.local.store`` (SQLite).
See ``docs/design/010-embedded-apiserver.md`` for the store layout, the watch cache and what
is deliberately not served.

Modules: ``server`` (lifecycle, dispatch), ``routing`` (paths), ``resources`` (served types),
``call`` (request + shared state), ``reads``/``writes``/``deletion``/``watch``/``logs``
(handlers by concern), ``bodies`` (size, depth and Unicode limits of request bodies),
``admission``/``validation``/``crdschema``/``limits`` (checks), ``objects``
(create/update field rules), ``patch``, ``selectors``, ``gc``, ``crds``, ``discovery``,
``auth``, ``status`` (errors as Status bodies).
"""

from __future__ import annotations

from .limits import Limits
from .logs import LogLine, LogRef, LogSource, MemoryLogSource
from .server import ApiServer, ServerConfig

__all__ = [
    "ApiServer",
    "Limits",
    "LogLine",
    "LogRef",
    "LogSource",
    "MemoryLogSource",
    "ServerConfig",
]
