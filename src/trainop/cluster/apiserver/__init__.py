"""The embedded Kubernetes-compatible API server of trainop's local and simulated modes.

A real HTTP server (aiohttp) speaking the subset of the Kubernetes REST API that the
controller, the SDK and standard clients use, backed by ``store``
(SQLite).
See ``docs/design/010-embedded-apiserver.md`` for the store layout, the watch cache and what
is deliberately not served.

Subpackages by concern: ``http`` (the aiohttp application, routing, TLS, tokens, bodies,
``Status`` errors, discovery and OpenAPI), ``rest`` (handlers by verb: reads, writes, deletion,
watch, patch, logs, binding, reviews; the served types; server-side printing), ``admission``
(defaulting, validation, schemas, ceilings), ``apply`` (server-side apply and managedFields),
``streams`` (exec, attach, port-forward). Beside them: ``store`` (SQLite and the watch cache),
``schemas`` (the official Kubernetes schemas), ``gc`` (garbage collection and namespace
termination) and ``serviceaccounts``. It meets the kubelet, scheduler and controllers only
through the API; pod logs come from the ``kube.podlogs.LogSource`` the session hands it.
"""

from __future__ import annotations

from trainop.cluster.apiserver.admission.limits import Limits
from trainop.cluster.apiserver.http.server import ApiServer, ServerConfig

__all__ = [
    "ApiServer",
    "Limits",
    "ServerConfig",
]
