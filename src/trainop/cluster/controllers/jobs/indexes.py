"""Which pods a Job wants: completion indexes, their interval notation, and the pods to create
and to delete in one sync (pure; K-idx and ``manageJob`` of spec §3.3).

Indexed: every index ``0..completions-1`` needs one succeeded pod; the lowest indexes that are
neither succeeded nor held by an active pod (nor, with ``podReplacementPolicy: Failed``, by a
terminating one) are created, at most ``wanted - active``, where ``wanted =
min(completions - succeeded, parallelism)``. Active pods without a valid index, with an index
out of range, or duplicating another pod's index are deleted first (the least advanced of
duplicates), and a sync that deletes them creates nothing. NonIndexed: ``wanted`` is
``min(completions - succeeded, parallelism)``, or ``parallelism`` until the first success
when ``completions`` is unset (then what runs is left running). Extra active pods are
deleted, least advanced first.
``success_rule``: the first batch ``successPolicy`` rule the succeeded indexes meet.
Neighbours: ``model`` (pod facts), ``step`` (uses ``Plan``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

from trainop.cluster.controllers.jobs import model
from trainop.cluster.controllers.jobs.model import JobSpec, Pod


def parse_intervals(text: object) -> set[int]:
    """The indexes of ``completedIndexes`` notation (``"1,3-5"``); malformed parts skipped."""
    found: set[int] = set()
    if not isinstance(text, str):
        return found
    for part in filter(None, text.split(",")):
        low, dash, high = part.partition("-")
        if low.isdigit() and (high.isdigit() if dash else True):
            found.update(range(int(low), int(high or low) + 1))
    return found


def format_intervals(indexes: Iterable[int]) -> str:
    """Ascending, comma separated; runs of three or more as ``a-b`` (kube's notation)."""
    runs: list[list[int]] = []
    for index in sorted(set(indexes)):
        if runs and runs[-1][1] == index - 1:
            runs[-1][1] = index
        else:
            runs.append([index, index])
    parts: list[str] = []
    for low, high in runs:
        if high - low >= 2:
            parts.append(f"{low}-{high}")
        else:
            parts.extend(str(i) for i in range(low, high + 1))
    return ",".join(parts)


@dataclass(slots=True)
class Plan:
    """Pods to create (by index; None for NonIndexed) and active pods to delete."""

    create: list[int | None] = field(default_factory=list)
    delete: list[Pod] = field(default_factory=list)


def _advancement(pod: Pod) -> tuple[int, int]:
    """Sort key: the least advanced pods first (unscheduled, pending, not ready)."""
    scheduled = bool((pod.get("spec") or {}).get("nodeName"))
    phase = {"Pending": 0, "Unknown": 1, "Running": 2}.get(model.phase_of(pod), 0)
    return (int(scheduled) + phase, int(model.is_ready(pod)))


def wanted_active(spec: JobSpec, succeeded: int, active: int) -> int:
    """How many pods should be active now (after a success, a Job without ``completions``
    leaves what runs running and starts nothing)."""
    if spec.completions is None:
        return active if succeeded > 0 else spec.parallelism
    return max(0, min(spec.completions - succeeded, spec.parallelism))


def plan_indexed(
    spec: JobSpec,
    active: Sequence[Pod],
    terminating: Sequence[Pod],
    succeeded: set[int],
    failed: AbstractSet[int] = frozenset(),
) -> Plan:
    """The sync's pod changes for an Indexed Job (module docstring); ``failed``: indexes
    failed for good (per-index back-off), never created again."""
    completions = spec.completions or 0
    plan = Plan()
    holders: dict[int, list[Pod]] = {}
    for pod in active:
        index = model.index_of(pod)
        if index is None or index >= completions:
            plan.delete.append(pod)
        else:
            holders.setdefault(index, []).append(pod)
    for pods in holders.values():
        ranked = sorted(pods, key=_advancement, reverse=True)
        plan.delete.extend(ranked[1:])
    if plan.delete:
        return plan
    done = (succeeded | failed) & set(range(completions))
    wanted = wanted_active(spec, len(done), len(active))
    if len(active) > wanted:
        plan.delete = _surplus(active, len(active) - wanted, succeeded)
        return plan
    taken = succeeded | failed | set(holders)
    if spec.replace_only_failed:
        taken |= {i for i in map(model.index_of, terminating) if i is not None}
    room = wanted - len(active) - (len(terminating) if spec.replace_only_failed else 0)
    free = (i for i in range(completions) if i not in taken)
    plan.create = [i for _, i in zip(range(max(0, room)), free, strict=False)]
    return plan


def plan_non_indexed(
    spec: JobSpec, active: Sequence[Pod], terminating: Sequence[Pod], succeeded: int
) -> Plan:
    """The sync's pod changes for a NonIndexed Job (module docstring)."""
    wanted = wanted_active(spec, succeeded, len(active))
    if len(active) > wanted:
        return Plan(delete=_surplus(active, len(active) - wanted, set()))
    room = wanted - len(active) - (len(terminating) if spec.replace_only_failed else 0)
    return Plan(create=[None] * max(0, room))


def _surplus(active: Sequence[Pod], count: int, succeeded: set[int]) -> list[Pod]:
    """``count`` active pods to remove: those of succeeded indexes, then the least advanced,
    then the highest index."""

    def key(pod: Pod) -> tuple[int, tuple[int, int], int]:
        index = model.index_of(pod)
        done = index is not None and index in succeeded
        return (0 if done else 1, _advancement(pod), -(index or 0))

    return sorted(active, key=key)[:count]


def success_rule(spec: JobSpec, completed: set[int]) -> int | None:
    """The index of the first batch ``successPolicy`` rule that ``completed`` meets."""
    if not spec.indexed:
        return None
    for number, rule in enumerate(spec.success_rules):
        wanted = rule.get("succeededIndexes")
        count = rule.get("succeededCount")
        if wanted is not None:
            met = parse_intervals(wanted) & completed
            if len(met) >= count if count is not None else met == parse_intervals(wanted):
                return number
        elif count is not None and len(completed) >= count:
            return number
    return None
