"""Schema markers shared by the Trainer models: limits, defaults, CEL rules and list types.

Each helper returns the ``json_schema_extra`` (or the whole ``Field``) that makes the generated
CRD carry what upstream's controller-gen markers put there: ``x-kubernetes-validations`` (CEL),
``default``, ``x-kubernetes-list-type``/``-map-keys``, and the official Kubernetes definition a
plain-mapping field stands for (``fields.K8S_DEFINITION``).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, WithJsonSchema

from trainop.api.fields import K8S_DEFINITION, Int32, Int64, Str

FIELD_IMMUTABLE = "field is immutable"
ATOMIC: dict[str, Any] = {"x-kubernetes-list-type": "atomic"}


def immutable(message: str = FIELD_IMMUTABLE) -> dict[str, Any]:
    """A CEL transition rule ``self == oldSelf`` with ``message``."""
    return cel("self == oldSelf", message)


def list_map(*keys: str) -> dict[str, Any]:
    """A list merged by ``keys`` (server-side apply and uniqueness)."""
    return {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": list(keys)}


Name = Annotated[Str, Field(min_length=1, max_length=253)]
NonNegative = Annotated[Int32, Field(ge=0)]
# int64 with a lower bound; the schema is spelled out because pydantic does not render a bound
# placed after ``Int64``'s range check as ``minimum``.
PositiveInt64 = Annotated[
    Int64, Field(ge=1), WithJsonSchema({"type": "integer", "format": "int64", "minimum": 1})
]
NonNegativeInt64 = Annotated[
    Int64, Field(ge=0), WithJsonSchema({"type": "integer", "format": "int64", "minimum": 0})
]


def cel(rule: str, message: str) -> dict[str, Any]:
    """One CEL rule."""
    return {"x-kubernetes-validations": [{"message": message, "rule": rule}]}


def fixed(value: object) -> dict[str, Any]:
    """A schema default."""
    return {"default": value}


def k8s(definition: str, *, many: bool = False) -> dict[str, Any]:
    """A core/v1 definition (``many``: a list of them)."""
    extra: dict[str, Any] = {K8S_DEFINITION: f"io.k8s.api.core.v1.{definition}"}
    if many:
        extra["x-trainop-list"] = True
    return extra


def env_field(limit: int = 128) -> Any:
    """An env list (core/v1 EnvVar) merged by name."""
    return Field(
        None,
        max_length=limit,
        description="Environment variables (core/v1 EnvVar), merged by name.",
        json_schema_extra={**k8s("EnvVar", many=True), **list_map("name")},
    )


IMMUTABLE = immutable()
