"""JobSet's validating webhook on CREATE (spec 1.5; golden case G14): rules 1-21, in order,
with upstream's messages.

Each finding is a cause ``(field, reason, body)``; plain messages are internal-type field
errors (``Internal error: <message>``, at the field the spec names, else ``<nil>``), as
v0.12.0 wraps them; the managedBy checks are apimachinery's own field errors. Not checked:
the gate-only in-place-restart rules and volumeClaimPolicies (spec 1.5, omitted there too).
Neighbour: ``jobsets`` (defaults, CEL rules, updates) calls ``create_causes``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from trainop.api.trainer import rules
from trainop.engine.trainer.plugins import jobset_validate

Cause = tuple[str, str, str]  # (field, reason, body) as status.rejected takes them
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS1035_DETAIL = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_SUBDOMAIN_DETAIL = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
_RULE_NAME = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")
_REASONS = (
    "BackoffLimitExceeded",
    "DeadlineExceeded",
    "FailedIndexes",
    "MaxFailedIndexesExceeded",
    "PodFailurePolicy",
)
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
MAX_INT32 = 2147483647


_LONG_POD = "JobSet name is too long, pod names generated for this JobSet will exceed 63 characters"
_RULE_NAME_DETAIL = (
    "a failure policy rule name must start with an alphabetic character, optionally followed by "
    "a string of alphanumeric characters or '_,:', and must end with an alphanumeric character "
    "or '_'"
)


def _internal(message: str, path: str = rules.ROOT) -> Cause:
    return (path, "InternalError", f"Internal error: {message}")


def create_causes(obj: Mapping[str, Any]) -> list[Cause]:
    """The validating webhook on CREATE: rules 1-21 of spec 1.5, in that order."""
    spec = rules.child(obj, "spec")
    name = str(rules.child(rules.child(obj, "metadata"), "name") or "")
    jobs = rules.items(rules.child(spec, "replicatedJobs"))
    policy = rules.child(spec, "failurePolicy")
    found = []
    if rules.child(policy, "restartStrategy") == "InPlaceRestart":
        found.append(
            _internal(
                "InPlaceRestart restart strategy cannot be set when InPlaceRestart "
                "feature gate is disabled"
            )
        )
    if jobs and jobs[0].get("dependsOn") is not None:
        found.append(_internal("DependsOn can't be set for the first ReplicatedJob"))
    found += _subdomain_causes(rules.child(rules.child(spec, "network"), "subdomain"))
    found += _manager_causes(rules.child(spec, "managedBy"))
    found += _replicated_job_causes(name, jobs)
    known = [str(job.get("name")) for job in jobs]
    for target in _listed(rules.child(rules.child(spec, "successPolicy"), "targetReplicatedJobs")):
        if target not in known:
            found.append(
                _internal(
                    f"invalid replicatedJob name '{target}' does not appear in .spec.ReplicatedJobs"
                )
            )
    found += _failure_policy_causes(policy, known)
    found += _coordinator_causes(name, spec, jobs)
    return found


def _dns1035(value: str, too_long: str) -> list[str]:
    problems = [too_long] if len(value) > 63 else []
    return problems + ([] if _DNS1035.match(value) else [_DNS1035_DETAIL])


def _subdomain_causes(subdomain: object) -> list[Cause]:
    if not isinstance(subdomain, str) or not subdomain:
        return []
    path = "spec.network.subdomain"
    problems = ["must be no more than 253 characters"] if len(subdomain) > 253 else []
    if not _SUBDOMAIN.match(subdomain):
        problems.append(_SUBDOMAIN_DETAIL)
    problems += _dns1035(
        subdomain, ".spec.network.subdomain is too long, must be less than 63 characters"
    )
    return [_internal(p, path) for p in problems]


def _manager_causes(manager: object) -> list[Cause]:
    if not isinstance(manager, str):
        return []
    path = "spec.managedBy"
    found = [
        (path, "FieldValueInvalid", f'Invalid value: "{manager}": {p}')
        for p in jobset_validate.manager_problems(manager)
    ]
    if len(manager) > 63:
        found.append((path, "FieldValueTooLong", "Too long: may not be more than 63 bytes"))
    return found


def _replicated_job_causes(name: str, jobs: list[Mapping[str, Any]]) -> list[Cause]:
    found, seen = [], []
    for index, rj in enumerate(jobs):
        rj_name, replicas = str(rj.get("name") or ""), _int(rj.get("replicas"), 1)
        job = rules.child(rules.child(rj, "template"), "spec")
        if _int(rules.child(job, "parallelism"), 1) * replicas > MAX_INT32:
            found.append(
                _internal(
                    f"the product of replicas and parallelism must not exceed "
                    f"{MAX_INT32} for replicatedJob '{rj_name}'"
                )
            )
        group = str(rj.get("groupName") or "default")
        where = f"spec.replicatedJobs[{index}]"
        long_group = ".spec.replicatedJob[].groupName is too long, must be less than 63 characters"
        found += [_internal(p, f"{where}.groupName") for p in _dns1035(group, long_group)]
        longest = f"{name}-{rj_name}-{replicas - 1}"
        long_job = (
            "JobSet name is too long, job names generated for this JobSet will exceed 63 characters"
        )
        found += [_internal(p, f"{where}.name") for p in _dns1035(longest, long_job)]
        completions = rules.child(job, "completions")
        if rules.child(job, "completionMode") == "Indexed" and isinstance(completions, int):
            pod = f"{longest}-{completions - 1}-abcde"
            long_pod = _LONG_POD
            found += [_internal(p, f"{where}.name") for p in _dns1035(pod, long_pod)]
        seen.append(rj_name)
        for dependency in rules.items(rj.get("dependsOn")):
            if dependency.get("name") not in seen:
                found.append(
                    _internal(
                        f"replicatedJob: {rj_name} cannot depend on replicatedJob: "
                        f"{dependency.get('name')}"
                    )
                )
    return found


def _listed(value: object) -> list[Any]:
    """The items of a list field (anything else: none; the schema reports it)."""
    return value if isinstance(value, list) else []


def _int(value: object, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _failure_policy_causes(policy: Any, known: list[str]) -> list[Cause]:
    rule_list = rules.items(rules.child(policy, "rules"))
    if any(
        str(r.get("action")).startswith("RestartJob") and "JobSet" not in str(r.get("action"))
        for r in rule_list
    ):
        return [
            _internal(
                "RestartJob and RestartJobAndIgnoreMaxRestarts failure policy actions "
                "are not allowed when RestartJob feature gate is disabled"
            )
        ]
    found: list[Cause] = []
    by_name: dict[str, list[int]] = {}
    for index, rule in enumerate(rule_list):
        rule_name = str(rule.get("name") or "")
        if not 1 <= len(rule_name) <= 128:
            found.append(
                _internal(
                    f"invalid failure policy rule name of length {len(rule_name)}, "
                    "the rule name must be at least 1 characters long and at most "
                    "128 characters long"
                )
            )
        by_name.setdefault(rule_name, []).append(index)
        if not _RULE_NAME.match(rule_name):
            found.append(
                _internal(f"invalid failure policy rule name '{rule_name}', {_RULE_NAME_DETAIL}")
            )
        for target in _listed(rule.get("targetReplicatedJobs")):
            if target not in known:
                found.append(
                    _internal(
                        f"invalid replicatedJob name '{target}' in failure policy "
                        "does not appear in .spec.ReplicatedJobs"
                    )
                )
        for reason in _listed(rule.get("onJobFailureReasons")):
            if reason not in _REASONS:
                found.append(
                    _internal(
                        f"invalid job failure reason '{reason}' in failure policy "
                        "is not a recognized job failure reason"
                    )
                )
    for rule_name, indices in by_name.items():
        if len(indices) > 1:
            listed = "[" + " ".join(map(str, indices)) + "]"
            found.append(
                _internal(
                    f"rule names are not unique, rules with indices {listed} all "
                    f"have the same name '{rule_name}'"
                )
            )
    return found


def _coordinator_causes(name: str, spec: Any, jobs: list[Mapping[str, Any]]) -> list[Cause]:
    coordinator = rules.child(spec, "coordinator")
    if not isinstance(coordinator, Mapping):
        return []
    target = str(coordinator.get("replicatedJob") or "")
    job_index, pod_index = (
        _int(coordinator.get("jobIndex"), 0),
        _int(coordinator.get("podIndex"), 0),
    )
    rj = next((j for j in jobs if j.get("name") == target), None)
    if rj is None:
        return [_internal(f"coordinator replicatedJob {target} does not exist")]
    if not 0 <= job_index < _int(rj.get("replicas"), 1):
        return [
            _internal(f"coordinator job index {job_index} is invalid for replicatedJob {target}")
        ]
    job = rules.child(rules.child(rj, "template"), "spec")
    completions = rules.child(job, "completions")
    if rules.child(job, "completionMode") != "Indexed" or not isinstance(completions, int):
        return [
            _internal(
                "job for coordinator pod must be indexed completion mode, and "
                "completions number must be set"
            )
        ]
    if not 0 <= pod_index < completions:
        return [
            _internal(
                f"coordinator pod index {pod_index} is invalid for replicatedJob "
                f"{target} job index {job_index}"
            )
        ]
    subdomain = rules.child(rules.child(spec, "network"), "subdomain") or name
    endpoint = f"{name}-{target}-{job_index}-{pod_index}.{subdomain}"
    problems = _label_value_problems(endpoint)
    if not problems:
        return []
    return [
        _internal(
            f'spec will lead to invalid label value "{endpoint}" for coordinator label '
            f'"jobset.sigs.k8s.io/coordinator" (long JobSet / ReplicatedJob / SubDomain '
            f"name?): {'; '.join(problems)}"
        )
    ]


def _label_value_problems(value: str) -> list[str]:
    problems = ["must be no more than 63 characters"] if len(value) > 63 else []
    if not _LABEL_VALUE.match(value):
        problems.append(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', "
            "'_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  "
            "or 'my_value',  or '12345', regex used for validation is "
            "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
        )
    return problems
