"""Resource quantities of built-in kinds are stored as strings, as kube-apiserver stores them.

A manifest may write ``cpu: 1`` or ``memory: 1.5e9`` (JSON numbers): kube-apiserver decodes
them into ``resource.Quantity`` and answers its canonical string (``"1"``, ``"1500M"``,
``0.5`` → ``"500m"``). Stored as numbers, they break clients that read the typed form: the
official ``kubernetes`` client refuses to deserialise a pod list whose ``limits.cpu`` is ``1``.
``normalize(definition, obj)`` finds, by walking the kind's JSON-schema definition, every
place typed ``io.k8s.apimachinery.pkg.api.resource.Quantity`` (container ``resources``,
``overhead``, ``emptyDir.sizeLimit``, a node's ``capacity``, quota ``hard`` ...) and replaces a
number there, in place, by its canonical string (``engine.quantities.render``). Strings are
kept as written (kube would also canonicalise ``"0.5"`` to ``"500m"``; trainop does not).

A string there that is not a quantity (``cpu: abc``) is reported back: kube cannot decode
such a body into its Go type, and answers 400 ``... cannot be handled as a Pod: quantities
must match the regular expression ...``; so does ``admission``.

Only the branches of a definition that can hold a quantity are walked (computed once per
definition), so a pod costs a few dictionary lookups. Custom resources are kept as written,
as kube keeps them.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from trainop.cluster.apiserver import schemas
from trainop.engine import quantities

_PREFIX = "#/$defs/"
_QUANTITY = _PREFIX + "io.k8s.apimachinery.pkg.api.resource.Quantity"


@functools.cache
def _definitions() -> dict[str, Any]:
    return schemas.load_definitions()


# kube's quantity grammar: a signed decimal number, then an exponent or one suffix.
_FORM = re.compile(
    r"^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+|[KMGTPE]i|[numkMGTPE])?$"
)
# What kube's error message quotes (its coarse pre-check), word for word.
MESSAGE_PATTERN = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"


def normalize(definition: str, obj: dict[str, Any]) -> str | None:
    """Replace every number typed as a Quantity in ``obj`` by its canonical string; the first
    string there that is not a quantity (``"abc"``), or None."""
    bad: list[str] = []
    _walk(_root(definition), obj, bad)
    return bad[0] if bad else None


@functools.cache
def _root(definition: str) -> dict[str, Any]:
    return {"$ref": _PREFIX + definition}


def canonical(value: int | float) -> str:
    """kube's canonical string for a numeric quantity (``1`` → ``"1"``, ``0.5`` → ``"500m"``)."""
    return quantities.render(quantities.parse(repr(value) if isinstance(value, float) else value))


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _walk(schema: dict[str, Any], value: Any, bad: list[str]) -> Any:
    if schema.get("$ref") == _QUANTITY:
        if _is_number(value):
            return canonical(value)
        if isinstance(value, str) and not _FORM.match(value):
            bad.append(value)
        return value
    props, extra, items = _plan(_node(schema))
    if isinstance(value, dict):
        for key, child in props:
            if key in value:
                value[key] = _walk(child, value[key], bad)
        if extra is not None:
            for key in list(value):
                value[key] = _walk(extra, value[key], bad)
    elif isinstance(value, list) and items is not None:
        for index, item in enumerate(value):
            value[index] = _walk(items, item, bad)
    return value


_Plan = tuple[list[tuple[str, dict[str, Any]]], dict[str, Any] | None, dict[str, Any] | None]
_PLANS: dict[int, _Plan] = {}  # by id of a node of the (cached, immortal) definitions


def _plan(node: dict[str, Any]) -> _Plan:
    """The children of a schema node that may hold a quantity: properties, map values, items."""
    known = _PLANS.get(id(node))
    if known is not None:
        return known
    props = node.get("properties")
    walked = [
        (key, child)
        for key, child in (props.items() if isinstance(props, dict) else ())
        if isinstance(child, dict) and _may_hold(child)
    ]
    extra, items = node.get("additionalProperties"), node.get("items")
    plan: _Plan = (
        walked,
        extra if isinstance(extra, dict) and _may_hold(extra) else None,
        items if isinstance(items, dict) and _may_hold(items) else None,
    )
    _PLANS[id(node)] = plan
    return plan


def _node(schema: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith(_PREFIX):
        target = _definitions().get(ref[len(_PREFIX) :])
        return target if isinstance(target, dict) else {}
    return schema


_MAY_HOLD: dict[int, bool] = {}  # by id of a schema node of the (cached, immortal) definitions


def _may_hold(schema: dict[str, Any]) -> bool:
    known = _MAY_HOLD.get(id(schema))
    if known is None:
        holders = _holders()
        known = any(ref == _QUANTITY or ref in holders for ref in _refs(schema))
        _MAY_HOLD[id(schema)] = known
    return known


@functools.cache
def _holders() -> frozenset[str]:
    """Every definition ref with a Quantity somewhere below it: a fixed point over the
    definitions' references (recursive definitions included)."""
    direct = {_PREFIX + name: _refs(body) for name, body in _definitions().items()}
    holders = {ref for ref, refs in direct.items() if _QUANTITY in refs}
    while True:
        more = {ref for ref, refs in direct.items() if ref not in holders and refs & holders}
        if not more:
            return frozenset(holders)
        holders |= more


def _refs(schema: Any) -> set[str]:
    """The ``$ref``s inside a schema node, not following them."""
    found: set[str] = set()
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                found.add(ref)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found
