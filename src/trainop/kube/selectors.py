"""Kubernetes label selectors: parsing the string form and matching labels against it.

Supports the equality-based (``a=b``, ``a==b``, ``a!=b``) and set-based (``a in (x,y)``,
``a notin (x)``, ``a``, ``!a``) forms, comma-separated (all must hold). Invalid selectors raise
``SelectorError`` (a ``ValueError``) naming the offending requirement.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

_SET = re.compile(r"^\s*(!?)\s*([A-Za-z0-9._/-]+)\s*(?:(in|notin)\s*\(([^)]*)\))?\s*$")
_EQUALITY = re.compile(r"^\s*([A-Za-z0-9._/-]+)\s*(==|=|!=)\s*([A-Za-z0-9._-]*)\s*$")
# A label key (optional DNS-subdomain prefix and "/", then a name) and a label value.
_KEY = re.compile(
    r"^([a-zA-Z0-9]([-a-zA-Z0-9_.]*[a-zA-Z0-9])?/)?[a-zA-Z0-9]([-a-zA-Z0-9_.]*[a-zA-Z0-9])?$"
)
_VALUE = re.compile(r"^(([a-zA-Z0-9]([-a-zA-Z0-9_.]*[a-zA-Z0-9])?)?)$")


class SelectorError(ValueError):
    """A selector string that is not valid Kubernetes selector syntax."""


@dataclass(frozen=True, slots=True)
class Requirement:
    """One requirement: ``key`` with ``op`` in {in, notin, exists, !exists} and ``values``."""

    key: str
    op: str
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.op == "exists":
            return present
        if self.op == "!exists":
            return not present
        if self.op == "in":
            return present and labels[self.key] in self.values
        return not present or labels[self.key] not in self.values


@dataclass(frozen=True, slots=True)
class Selector:
    """A parsed selector; the empty selector matches everything."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        return all(r.matches(labels or {}) for r in self.requirements)


def parse(text: str) -> Selector:
    """Parse a selector string."""
    return Selector(tuple(_requirement(part) for part in _split(text) if part.strip()))


def from_labels(labels: Mapping[str, str]) -> str:
    """The equality selector string that matches exactly these labels."""
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def _split(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in text:
        depth += char == "("
        depth -= char == ")"
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return parts


def _requirement(part: str) -> Requirement:
    found = _unchecked(part)
    if not _KEY.match(found.key) or not all(_VALUE.match(v) for v in found.values):
        raise SelectorError(f"invalid label selector requirement {part.strip()!r}")
    return found


def _unchecked(part: str) -> Requirement:
    equality = _EQUALITY.match(part)
    if equality:
        key, op, value = equality.groups()
        return Requirement(key, "notin" if op == "!=" else "in", frozenset({value}))
    match = _SET.match(part)
    if not match:
        raise SelectorError(f"invalid label selector requirement {part.strip()!r}")
    negated, key, op, values = match.groups()
    if op:
        if negated:
            raise SelectorError(f"invalid label selector requirement {part.strip()!r}")
        return Requirement(key, op, frozenset(v.strip() for v in values.split(",") if v.strip()))
    return Requirement(key, "!exists" if negated else "exists")
