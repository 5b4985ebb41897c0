"""Small helpers the Trainer validation rules are written with: guarded walks over plain
mappings (any shape in, never an exception) and kube's framing of a failed CEL rule.

A CEL rule that fails is reported by kube-apiserver as ``<path>: Invalid value: "<type>":
<message>``, where ``<type>`` is the OpenAPI type of the node the rule sits on (``object``,
``string``, ``integer``, ``array``) and a rule on the object itself has the path ``<nil>``.
Transition rules (``self == oldSelf``) run only when the field exists in both the old and the
new object, and compare deeply (spec sections 1.1 and 7.2): ``changed`` says exactly that.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from trainop.errors import FieldError, json_type

ROOT = "<nil>"  # how kube prints the path of a rule on the object itself


def cel(path: str, schema_type: str, message: str) -> FieldError:
    """A failed CEL rule at ``path`` (a node of ``schema_type``), in kube's words."""
    return FieldError(path, "Invalid", f'Invalid value: "{schema_type}": {message}')


def min_properties(path: str, count: int) -> FieldError:
    """A ``minProperties`` violation, in kube's words."""
    detail = f"Invalid value: 0: {path} in body should have at least {count} properties"
    return FieldError(path, "Invalid", detail)


def child(obj: object, key: str) -> Any:
    """``obj[key]`` when ``obj`` is a mapping, else None."""
    return obj.get(key) if isinstance(obj, Mapping) else None


def has(obj: object, key: str) -> bool:
    """Whether ``obj`` is a mapping with a non-null ``key`` (CEL's ``has``)."""
    return child(obj, key) is not None


def items(value: object) -> list[Mapping[str, Any]]:
    """The mapping items of a list (anything else: none)."""
    return [item for item in value if isinstance(item, Mapping)] if isinstance(value, list) else []


def keyed(value: object, key: str) -> dict[Any, Mapping[str, Any]]:
    """The items of a list-map by their key (the first item wins a duplicate key)."""
    found: dict[Any, Mapping[str, Any]] = {}
    for item in items(value):
        name = item.get(key)
        if isinstance(name, str) and name not in found:
            found[name] = item
    return found


def matching(found: dict[Any, Mapping[str, Any]], item: Mapping[str, Any], key: str) -> Any:
    """The item of ``found`` (a ``keyed`` list) with the same ``key`` as ``item``, or None."""
    name = item.get(key)
    return found.get(name) if isinstance(name, str) else None


def changed(new: object, old: object, key: str) -> bool:
    """Whether a ``self == oldSelf`` rule on ``key`` fails: present in both, and unequal."""
    return has(new, key) and has(old, key) and child(new, key) != child(old, key)


def matches(pattern: str, value: object) -> bool:
    """CEL's ``matches`` (an RE2 search) for the anchored patterns the rules use."""
    return isinstance(value, str) and re.search(pattern, value) is not None


def schema_type(value: object) -> str:
    """The OpenAPI type name of a decoded value, as a CEL error names it (``object`` for null)."""
    return "object" if value is None else json_type(value)


def below(value: object, bound: int) -> bool:
    """Whether ``value`` is an integer (not a bool) smaller than ``bound``."""
    return isinstance(value, int) and not isinstance(value, bool) and value < bound


def merged(schema: list[FieldError], found: list[FieldError]) -> list[FieldError]:
    """The schema's errors, then the rules' errors on paths the schema has not reported."""
    reported = {error.path for error in schema}
    return [*schema, *(error for error in found if error.path not in reported)]
