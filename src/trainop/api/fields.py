"""Wire-level building blocks shared by every kubeflow.org/v1 model.

``WireModel`` is the base of every model in this package: camelCase JSON names generated from
snake_case attributes, unknown fields rejected (as ``kubectl``'s strict field validation does),
instances frozen. Scalar types are strict (``"3"`` is not an integer) because the Kubernetes API
server is strict too, and integers are bounded as kube's Go types bound them (``Int32``,
``Int64``). ``FieldPath`` renders paths the way Kubernetes ``field.Path`` does:
``spec.pytorchReplicaSpecs[Master].template.spec.containers[0].image``.

Neighbours: ``types`` and ``jobs`` build the models from these; ``manifest`` turns pydantic
errors into ``trainop.errors.FieldError`` using ``FieldPath``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    StrictBool,
    StrictInt,
    StrictStr,
    WithJsonSchema,
)
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

# Marks a field whose schema is an official Kubernetes definition (by its OpenAPI name); the
# CRD generator substitutes the real schema, the model itself keeps the value as a mapping.
K8S_DEFINITION = "x-trainop-k8s-definition"

INT32_MAX = 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
INT_RANGE_ERROR = "int_range"  # the pydantic error type of an integer outside its Go type


@dataclass(frozen=True, slots=True)
class Suggested:
    """``Annotated`` metadata of a required field the operator does not interpret: the value
    builders fill in when the caller gives none (MXJob's ``jobMode``). Not in any schema."""

    value: object


class WireModel(BaseModel):
    """Base of every kubeflow.org/v1 model: camelCase on the wire, strict, frozen."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
        use_attribute_docstrings=False,
    )


def _to_utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def format_time(value: datetime) -> str:
    """Render a time as Kubernetes does (RFC 3339, UTC, seconds, ``Z``)."""
    return _to_utc(value).strftime("%Y-%m-%dT%H:%M:%SZ")


def _check_quantity(value: object) -> str | int | float:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError("must be a quantity: a number or a string such as '500m' or '1Gi'")
    return value


_QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
    r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)


def _check_int64(value: int) -> int:
    if not INT64_MIN <= value <= INT64_MAX:
        raise PydanticCustomError(INT_RANGE_ERROR, "out of range for int64", {"go_type": "int64"})
    return value


# Integers are bounded as kube's typed decoding bounds them (``manifest`` words the error as
# Go's ``json: cannot unmarshal number ... of type int32``). Int64's bound is a validator, not
# a schema bound: the CRD says ``type: integer`` and kube's JSON decoding bounds it already.
Int32 = Annotated[StrictInt, Field(ge=-(2**31), le=INT32_MAX)]
Int64 = Annotated[StrictInt, AfterValidator(_check_int64)]
Bool = StrictBool
Str = StrictStr
Time = Annotated[
    datetime,
    AfterValidator(_to_utc),
    PlainSerializer(format_time, return_type=str),
    WithJsonSchema({"type": "string", "format": "date-time"}),
]
Quantity = Annotated[
    str | int | float,
    PlainValidator(_check_quantity),
    WithJsonSchema(
        {
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "x-kubernetes-int-or-string": True,
            "pattern": _QUANTITY_PATTERN,
        }
    ),
]
Mapping = dict[str, Any]


@dataclass(frozen=True, slots=True)
class FieldPath:
    """A Kubernetes-style field path; ``child`` for attributes, ``key`` and ``index`` for items."""

    text: str = ""

    def child(self, name: str) -> FieldPath:
        return FieldPath(f"{self.text}.{name}" if self.text else name)

    def key(self, key: str) -> FieldPath:
        return FieldPath(f"{self.text}[{key}]")

    def index(self, index: int) -> FieldPath:
        return FieldPath(f"{self.text}[{index}]")

    def __str__(self) -> str:
        return self.text
