"""JobSet's failure policy (spec 2.8; golden cases G5-G8).

Runs when a current-attempt Job failed. No ``failurePolicy``: the JobSet fails
(``FailedJobs``). Otherwise the rules are tried in order: a failed Job matches a rule when its
``Failed`` reason is among ``onJobFailureReasons``, a pattern of ``onJobFailureMessagePatterns``
is found in its message (an invalid pattern never matches) and its replicatedJob is targeted
(each list empty: anything). The first rule matching any Job wins, with the earliest-failing
matching Job; no rule: ``RestartJobSet`` with the earliest-failing Job of all. A restart only
counts (``restarts``, and ``restartsCountTowardsMax`` for ``RestartJobSet``); the next passes
delete the Jobs of earlier attempts. ``RestartJob*`` actions sit behind a gate that is off:
they fail the pass (admission refuses them anyway).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime

from trainop.cluster.controllers.jobset import keys
from trainop.cluster.controllers.jobset.conditions import Draft, Event, parse_time
from trainop.cluster.controllers.jobset.counts import condition, labels_of
from trainop.cluster.controllers.jobset.spec import Raw, as_int, as_list, as_map, name_of
from trainop.errors import TrainopError

_EPOCH = datetime.min.replace(tzinfo=UTC)


class GatedActionError(TrainopError):
    """A rule's action needs the ``RestartJob`` gate, which is off."""


def failed_at(job: Raw) -> datetime:
    """When the Job's ``Failed`` condition became True (unknown: earliest)."""
    found = condition(job, "Failed") or {}
    return parse_time(found.get("lastTransitionTime")) or _EPOCH


def _search(pattern: object, message: str) -> bool:
    try:
        return re.search(str(pattern), message) is not None
    except re.error:
        return False


def rule_matches(rule: Raw, job: Raw) -> bool:
    """Whether ``rule`` applies to the failed ``job``."""
    failed = condition(job, "Failed") or {}
    reasons = rule.get("onJobFailureReasons") or []
    patterns = rule.get("onJobFailureMessagePatterns") or []
    targets = rule.get("targetReplicatedJobs") or []
    return (
        (not reasons or failed.get("reason") in reasons)
        and (not patterns or any(_search(p, str(failed.get("message") or "")) for p in patterns))
        and (not targets or labels_of(job).get(keys.REPLICATED_JOB) in targets)
    )


def first_failed(jobs: Sequence[Raw]) -> Raw:
    return min(jobs, key=failed_at)


def choose(policy: Raw, failed: Sequence[Raw]) -> tuple[Raw | None, Raw]:
    """The first rule with a matching Job and that Job; no rule: (None, first failed Job)."""
    for rule in as_list(policy.get("rules")):
        matching = [job for job in failed if rule_matches(rule, job)]
        if matching:
            return rule, first_failed(matching)
    return None, first_failed(failed)


def apply(policy: Raw | None, failed: Sequence[Raw], draft: Draft) -> None:
    """Decide what the failed Jobs do to the JobSet; changes ``draft``."""
    if policy is None:
        _fail(draft, keys.FAILED_JOBS, first_failed(failed))
        return
    rule, job = choose(policy, failed)
    action = str(rule.get("action")) if rule is not None else keys.RESTART_JOBSET
    if action == keys.FAIL_JOBSET:
        _fail(draft, keys.FAIL_ACTION, job)
    elif action == keys.RESTART_JOBSET:
        if draft.counted >= as_int(policy.get("maxRestarts")):
            _fail(draft, keys.MAX_RESTARTS, job)
        else:
            draft.counted += 1
            _restart(draft, action, rule, job)
    elif action == keys.RESTART_IGNORE_MAX:
        _restart(draft, action, rule, job)
    else:
        raise GatedActionError(f"failure policy action {action} needs the RestartJob feature gate")


def _fail(draft: Draft, reason_message: tuple[str, str], job: Raw) -> None:
    reason, message = reason_message
    draft.conditions.set(keys.FAILED, True, (reason, message.format(job=name_of(job))))
    draft.conditions.set(keys.RESTARTING, False, keys.JOBSET_FAILED)
    draft.terminal = keys.FAILED


def _restart(draft: Draft, action: str, rule: Raw | None, job: Raw) -> None:
    draft.restarts += 1
    rule_name = as_map(rule).get("name") if rule is not None else None
    reason = (
        f"{keys.RULE_REASON_PREFIX}{rule_name}" if rule is not None else keys.DEFAULT_POLICY_REASON
    )
    message = keys.RESTART_MESSAGE.format(action=action, job=name_of(job))
    draft.conditions.set(keys.RESTARTING, True, (reason, message))
    draft.events.append(Event(keys.WARNING, keys.EVENT_RESTART[action], message))
