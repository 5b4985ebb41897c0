"""One decoded resource request, and the shared state every handler works against.

``Call`` is what a handler sees: the resource type, the addressed namespace/name/subresource,
the query parameters and the raw body, plus the helpers that turn them into values the way
kube-apiserver reads them (booleans case-insensitively, since some clients send ``True``;
a missing ``Content-Type`` on POST/PUT means JSON). ``ApiState`` bundles the store, the
registry and the collaborators (log source, clock, CRD schemas, the Services' cluster IPs)
that the server owns.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from aiohttp import web

from trainop.cluster.apiserver import store
from trainop.cluster.apiserver.admission.limits import Limits
from trainop.cluster.apiserver.http import bodies, status
from trainop.cluster.apiserver.rest import resources
from trainop.cluster.apiserver.rest.clusterips import ClusterIPs

if TYPE_CHECKING:
    from trainop.cluster.apiserver.admission.crdschema import CustomSchema
    from trainop.kube.podlogs import LogSource


@dataclass(slots=True)
class ApiState:
    """Everything handlers share; owned by ``server.ApiServer``."""

    store: store.Store
    registry: resources.Registry
    log_source: LogSource
    clock: Callable[[], datetime]
    bookmark_interval: float = 60.0
    schemas: dict[tuple[str, str, str], CustomSchema] = field(default_factory=dict)
    wakeups: list[Callable[[], None]] = field(default_factory=list)
    # Admission: the local cluster's ceilings, and whether training jobs are judged by the
    # webhook's rules (``manifest.check_job``); off only for tests of a stand-in job CRD.
    limits: Limits = field(default_factory=Limits)
    job_admission: bool = True
    cluster_ips: ClusterIPs = field(default_factory=ClusterIPs)  # the Services' addresses


@dataclass(frozen=True, slots=True)
class Call:
    """A request for one resource type, already routed."""

    rt: resources.ResourceType
    namespace: str | None
    name: str | None
    subresource: str | None
    query: Mapping[str, str]
    body: bytes
    content_type: str
    request: web.Request

    def flag(self, key: str) -> bool:
        """A boolean query parameter, read case-insensitively (``watch=True``)."""
        return self.query.get(key, "").lower() in ("true", "1")

    def integer(self, key: str) -> int | None:
        """An integer query parameter, or None; 400 when it is not a number."""
        text = self.query.get(key)
        if text in (None, ""):
            return None
        try:
            return int(text)
        except ValueError as exc:
            raise status.bad_request(f"invalid value for {key}: {text!r}") from exc

    def json_body(self) -> dict[str, Any]:
        """The body as a JSON object; 400 when it is not one."""
        ctype = self.content_type
        if ctype and "json" not in ctype and ctype != "*/*":
            raise status.unsupported_media_type(ctype, ["application/json"])
        value = bodies.decode(self.body) if self.body else None
        if not isinstance(value, dict):
            raise status.bad_request("the request body must be a JSON object")
        return value

    def key(self, name: str | None = None) -> store.Key:
        """The store key of the addressed (or named) object."""
        return store.Key(
            resource=self.rt.store_key,
            namespace=(self.namespace or "") if self.rt.namespaced else "",
            name=name if name is not None else (self.name or ""),
        )
