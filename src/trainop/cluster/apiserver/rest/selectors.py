"""Label and field selectors: parse once per request, then match objects cheaply.

Label selectors take the full Kubernetes grammar: ``a=b``, ``a==b``, ``a!=b``, ``a in (x,y)``,
``a notin (x)``, ``a`` (exists), ``!a`` (does not exist), comma-separated and ANDed. Field
selectors take ``path=value``, ``path==value`` and ``path!=value`` over the dotted paths a
resource type allows (``metadata.name``, ``status.phase``...); any other path is a 400, as in
kube-apiserver ("field label not supported"). A missing field compares as the empty string.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from trainop.cluster.apiserver.http import status
from trainop.kube import selectors as label_selectors

Matcher = Callable[[dict[str, Any]], bool]
# Field labels that name a different path than they spell (kube's events: ``source``).
_ALIASES = {"source": "source.component"}


def label_matcher(text: str | None) -> Matcher | None:
    """A predicate over objects for a label selector (``kube.selectors``, the one grammar
    trainop has), or None when it selects everything; bad syntax is a 400."""
    try:
        selector = label_selectors.parse(text or "")
    except label_selectors.SelectorError as exc:
        raise status.bad_request(f"unable to parse requirement: {exc}") from exc
    if not selector.requirements:
        return None

    def match(obj: dict[str, Any]) -> bool:
        return selector.matches(obj.get("metadata", {}).get("labels"))

    return match


def field_matcher(text: str | None, *, allowed: Sequence[str]) -> Matcher | None:
    """A predicate for a field selector over the ``allowed`` paths, or None for everything."""
    if not text or not text.strip():
        return None
    terms: list[tuple[list[str], bool, str]] = []
    for term in (t.strip() for t in text.split(",")):  # field terms have no parentheses
        path, negate, value = _field_term(term)
        if path not in allowed:
            raise status.bad_request(f'field label not supported: "{path}"')
        terms.append((_ALIASES.get(path, path).split("."), negate, value))

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
