"""Label and field selectors: parse once per request, then match objects cheaply.

Label selectors take the full Kubernetes grammar: ``a=b``, ``a==b``, ``a!=b``, ``a in (x,y)``,
``a notin (x)``, ``a`` (exists), ``!a`` (does not exist), comma-separated and ANDed. Field
selectors take ``path=value``, ``path==value`` and ``path!=value`` over the dotted paths a
resource type allows (``metadata.name``, ``status.phase``...); any other path is a 400, as in
kube-apiserver ("field label not supported"). A missing field compares as the empty string.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from . import status

Matcher = Callable[[dict[str, Any]], bool]

_KEY = re.compile(
    r"^([a-zA-Z0-9]([-a-zA-Z0-9_.]*[a-zA-Z0-9])?/)?[a-zA-Z0-9]([-a-zA-Z0-9_.]*[a-zA-Z0-9])?$"
)
_VALUE = re.compile(r"^(([a-zA-Z0-9]([-a-zA-Z0-9_.]*[a-zA-Z0-9])?)?)$")
_SET = re.compile(r"^\s*(\S+?)\s+(in|notin)\s+\(([^)]*)\)\s*$")


@dataclass(frozen=True, slots=True)
class Requirement:
    """One ANDed term: ``op`` is one of =, !=, in, notin, exists, !exists."""

    key: str
    op: str
    values: frozenset[str]

    def matches(self, labels: dict[str, str]) -> bool:
        """Whether a label map satisfies this term."""
        present = self.key in labels
        if self.op == "exists":
            return present
        if self.op == "!exists":
            return not present
        if self.op in ("=", "in"):
            return present and labels[self.key] in self.values
        return not present or labels[self.key] not in self.values


def parse_labels(text: str | None) -> tuple[Requirement, ...]:
    """Parse a label selector; raises a 400 ``RequestError`` on bad syntax."""
    if not text or not text.strip():
        return ()
    return tuple(_parse_term(term) for term in _split_terms(text))


def _split_terms(text: str) -> list[str]:
    terms, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return [t.strip() for t in terms]


def _parse_term(term: str) -> Requirement:
    m = _SET.match(term)
    if m:
        values = frozenset(v.strip() for v in m.group(3).split(",") if v.strip())
        return _checked(m.group(1), m.group(2), values)
    for op in ("!=", "==", "="):
        if op in term:
            key, _, value = term.partition(op)
            return _checked(key.strip(), "!=" if op == "!=" else "=", frozenset([value.strip()]))
    if term.startswith("!"):
        return _checked(term[1:].strip(), "!exists", frozenset())
    return _checked(term, "exists", frozenset())


def _checked(key: str, op: str, values: frozenset[str]) -> Requirement:
    if not _KEY.match(key) or not all(_VALUE.match(v) for v in values):
        raise status.bad_request(f"unable to parse requirement: invalid label selector {key!r}")
    return Requirement(key=key, op=op, values=values)


def label_matcher(text: str | None) -> Matcher | None:
    """A predicate over objects for a label selector, or None when it selects everything."""
    reqs = parse_labels(text)
    if not reqs:
        return None

    def match(obj: dict[str, Any]) -> bool:
        labels = obj.get("metadata", {}).get("labels") or {}
        return all(r.matches(labels) for r in reqs)

    return match


def field_matcher(text: str | None, *, allowed: Sequence[str]) -> Matcher | None:
    """A predicate for a field selector over the ``allowed`` paths, or None for everything."""
    if not text or not text.strip():
        return None
    terms: list[tuple[list[str], bool, str]] = []
    for term in _split_terms(text):
        path, negate, value = _field_term(term)
        if path not in allowed:
            raise status.bad_request(f'field label not supported: "{path}"')
        terms.append((path.split("."), negate, value))

    def match(obj: dict[str, Any]) -> bool:
        return all((_lookup(obj, p) == v) != neg for p, neg, v in terms)

    return match


def _field_term(term: str) -> tuple[str, bool, str]:
    for op in ("!=", "==", "="):
        if op in term:
            path, _, value = term.partition(op)
            return path.strip(), op == "!=", value.strip()
    raise status.bad_request(f"invalid selector: '{term}'; can't understand '{term}'")


def _lookup(obj: dict[str, Any], path: list[str]) -> str:
    cur: Any = obj
    for part in path:
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(part)
    return "" if cur is None else str(cur)


def combine(*matchers: Matcher | None) -> Matcher | None:
    """AND several optional predicates into one (None when all are None)."""
    active = [m for m in matchers if m is not None]
    if not active:
        return None
    if len(active) == 1:
        return active[0]
    return lambda obj: all(m(obj) for m in active)
