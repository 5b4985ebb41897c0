"""Parse a Trainer object with its model, and say what is wrong in kube-apiserver's words.

``parse(model, obj)`` returns the typed object or the ``FieldError``s of every problem the
model finds — a missing field, an unknown one, a wrong type, a value outside a limit — worded
as kube-apiserver words the same problem found by the CRD's schema (``spec.x in body should be
at most 253 chars long``, ``Too many: 17: must have at most 16 items``, ``Unsupported value``),
so that ``trainop validate`` and the embedded API server say the same thing. Anything that is
not a mapping is an error naming the root, never an exception.
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from trainop.api.fields import INT32_MAX, INT_RANGE_ERROR
from trainop.errors import FieldError, json_type

ModelT = TypeVar("ModelT", bound=BaseModel)

# Wire fields whose values are string maps: the segment after one is a key, in brackets.
_MAP_FIELDS = ("labels", "annotations", "nodeSelector")
_INT32_BOUNDS = (INT32_MAX, -(2**31))
_TYPE_ERRORS = {
    "string_type": "string",
    "int_type": "integer",
    "int_from_float": "integer",
    "bool_type": "boolean",
    "list_type": "array",
    "dict_type": "object",
    "model_type": "object",
    "model_attributes_type": "object",
    "datetime_type": "string",
    "datetime_parsing": "string",
    "datetime_from_date_parsing": "string",
}
_BOUNDS = {
    "greater_than_equal": ("ge", "should be greater than or equal to {}"),
    "less_than_equal": ("le", "should be less than or equal to {}"),
    "string_too_short": ("min_length", "should be at least {} chars long"),
    "string_too_long": ("max_length", "should be at most {} chars long"),
}


def parse(model: type[ModelT], obj: object) -> ModelT | list[FieldError]:
    """``obj`` as a ``model``, or the errors that keep it from being one."""
    if not isinstance(obj, dict):
        return [FieldError("<root>", "Invalid", f"must be an object, not {json_type(obj)}")]
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        return [_field_error(error) for error in exc.errors()]


def shown(value: object) -> str:
    """A value as an error message shows it (JSON, cut short)."""
    try:
        text = json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError):
        text = json.dumps(str(value))
    return text if len(text) < 60 else text[:57] + "..."


def render(loc: tuple[int | str, ...]) -> str:
    """A pydantic location in Kubernetes notation: ``spec.x[0].y``, map keys in brackets."""
    text, previous = "", ""
    for part in loc:
        if isinstance(part, int) or previous in _MAP_FIELDS:
            text += f"[{part}]"
        else:
            text = f"{text}.{part}" if text else part
        previous = str(part)
    return text or "<root>"


def _field_error(error: Any) -> FieldError:
    path = render(tuple(error["loc"]))
    kind, value, context = error["type"], error.get("input"), error.get("ctx") or {}
    if kind == "missing":
        return FieldError(path, "Required", "Required value")
    if kind == "extra_forbidden":
        return FieldError(path, "Forbidden", f'unknown field "{path}"')
    if kind in ("literal_error", "enum"):
        expected = str(context.get("expected", "")).replace("'", '"').replace(" or ", ", ")
        detail = f"Unsupported value: {shown(value)}: supported values: {expected}"
        return FieldError(path, "NotSupported", detail)
    if kind == INT_RANGE_ERROR or context.get("le", context.get("ge")) in _INT32_BOUNDS:
        go_type = "int32" if kind != INT_RANGE_ERROR else str(context.get("go_type", "int64"))
        decoding = f"json: cannot unmarshal number {value} into Go value of type {go_type}"
        return FieldError(path, "Invalid", f"Invalid value: {value}: {decoding}")
    if kind in ("too_long", "too_short"):
        return _count_error(path, kind, value, context)
    if kind in _BOUNDS:
        key, rule = _BOUNDS[kind]
        said = f"{path} in body {rule.format(context.get(key))}"
        return FieldError(path, "Invalid", f"Invalid value: {shown(value)}: {said}")
    if kind in _TYPE_ERRORS:
        actual, wanted = json_type(value), _TYPE_ERRORS[kind]
        detail = f'Invalid value: "{actual}": {path} in body must be of type {wanted}: "{actual}"'
        return FieldError(path, "Invalid", detail)
    return FieldError(path, "Invalid", f"Invalid value: {shown(value)}: {error['msg']}")


def _count_error(path: str, kind: str, value: object, context: dict[str, Any]) -> FieldError:
    count = len(value) if isinstance(value, list | dict | str) else 0
    if kind == "too_long":
        limit = context.get("max_length")
        return FieldError(path, "TooMany", f"Too many: {count}: must have at most {limit} items")
    limit = context.get("min_length")
    said = f"{path} in body should have at least {limit} items"
    return FieldError(path, "Invalid", f"Invalid value: {count}: {said}")
