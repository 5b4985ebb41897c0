"""Parse a request path into what it addresses: a discovery document or a resource request.

Kubernetes paths are regular but dynamic (CRDs add resources at run time), so instead of a
route table this module splits the path once::

    /api/v1[/namespaces/NS]/PLURAL[/NAME[/SUB]]
    /apis/GROUP/VERSION[/namespaces/NS]/PLURAL[/NAME[/SUB]]

``/api/v1/namespaces/NAME[/status]`` is the namespaces resource itself, not a namespace
prefix. Trailing slashes are ignored (``/version/``). The result is plain data; looking the
resource up in the registry is the caller's job.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ResourcePath:
    """A request for a resource collection, an object or an object's subresource."""

    group: str
    version: str
    plural: str
    namespace: str | None = None
    name: str | None = None
    subresource: str | None = None


@dataclass(frozen=True, slots=True)
class DiscoveryPath:
    """A discovery document: ``what`` is api, apis, group, or version."""

    what: str
    group: str = ""
    version: str = ""


@dataclass(frozen=True, slots=True)
class OpenApiPath:
    """An OpenAPI document: ``tail`` is ``v2``, ``v3`` or ``v3/<group-version path>``."""

    tail: str


# Where client-go looks for protobuf OpenAPI v2 after a 406 on /openapi/v2.
LEGACY_SWAGGER = "swagger-2.0.0.pb-v1"

Route = ResourcePath | DiscoveryPath | OpenApiPath | str | None


def parse(path: str) -> Route:
    """Classify ``path``: a ResourcePath, a DiscoveryPath, a plain endpoint name, or None."""
    parts = [p for p in path.split("/") if p]
    if not parts:
        return "root"
    if parts[0] == "api":
        return _core(parts[1:])
    if parts[0] == "apis":
        return _named(parts[1:])
    plain = "/".join(parts)
    if parts[0] == "openapi" and len(parts) > 1 and parts[1] in ("v2", "v3"):
        return OpenApiPath(tail="/".join(parts[1:]))
    if plain == LEGACY_SWAGGER:
        return OpenApiPath(tail=LEGACY_SWAGGER)
    if plain in ("version", "healthz", "readyz", "livez"):
        return plain
    return None


def _core(parts: list[str]) -> Route:
    if not parts:
        return DiscoveryPath(what="api")
    if len(parts) == 1:
        return DiscoveryPath(what="version", group="", version=parts[0])
    return _resource("", parts[0], parts[1:])


def _named(parts: list[str]) -> Route:
    if not parts:
        return DiscoveryPath(what="apis")
    if len(parts) == 1:
        return DiscoveryPath(what="group", group=parts[0])
    if len(parts) == 2:
        return DiscoveryPath(what="version", group=parts[0], version=parts[1])
    return _resource(parts[0], parts[1], parts[2:])


def _resource(group: str, version: str, rest: list[str]) -> ResourcePath | None:
    namespace: str | None = None
    is_namespace_sub = len(rest) == 3 and rest[2] in ("status", "finalize")
    if rest[0] == "namespaces" and len(rest) >= 3 and not (group == "" and is_namespace_sub):
        namespace, rest = rest[1], rest[2:]
    if len(rest) > 3:
        return None
    return ResourcePath(
        group=group,
        version=version,
        plural=rest[0],
        namespace=namespace,
        name=rest[1] if len(rest) > 1 else None,
        subresource=rest[2] if len(rest) > 2 else None,
    )
