"""kube-apiserver's own rules for batch/v1 Jobs (Kubernetes 1.36, spec §3.1), in kube's words.

Defaults and the generated selector are ``defaults.job``/``generate_selector``; this module
adds what the schema cannot say:

- every write of the main resource: non-negative counts; Indexed needs ``completions``,
  ``parallelism`` ≤ 100000 and a name whose last pod hostname (``<job>-<completions-1>``) is a
  DNS label; ``restartPolicy`` ``OnFailure`` or ``Never`` (only ``Never`` with a
  podFailurePolicy, which also needs ``podReplacementPolicy: Failed`` and well-formed rules);
  ``successPolicy``, ``backoffLimitPerIndex`` and ``maxFailedIndexes`` only for Indexed Jobs
  (``maxFailedIndexes`` needs ``backoffLimitPerIndex``, at most ``completions``; ``FailIndex``
  rules need ``backoffLimitPerIndex``); the selector must match the template's labels;
- updates: selector, completionMode, completions (an Indexed Job may change it together with
  an equal parallelism), podFailurePolicy, successPolicy, managedBy, backoffLimitPerIndex
  immutable; the pod template too, except labels, annotations, nodeSelector, tolerations,
  schedulingGates and node affinity while the Job is suspended and has never started (no
  ``startTime``);
- ``status`` writes: ``Complete`` needs ``SuccessCriteriaMet`` and a ``completionTime``,
  ``Failed`` needs ``FailureTarget``; a finished Job needs ``startTime`` and no active pods.

``causes`` returns ``(field, reason, body)`` triples for ``http.status.rejected``; on create
``clear_status`` drops a client's status, as the registry strategy does. Pure.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from trainop.api import pod_rules

Cause = tuple[str, str, str]
MAX_INDEXED_PARALLELISM = 100000
MAX_FAILURE_RULES = 20
_INVALID, _REQUIRED, _UNSUPPORTED = (
    "FieldValueInvalid",
    "FieldValueRequired",
    "FieldValueNotSupported",
)
_SCHEDULING = ("nodeSelector", "tolerations", "schedulingGates")
_IMMUTABLE = (
    "selector",
    "completionMode",
    "podFailurePolicy",
    "successPolicy",
    "managedBy",
    "backoffLimitPerIndex",
)


def _show(value: Any) -> str:
    """A value as kube prints it after ``Invalid value:`` (strings quoted)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _invalid(path: str, value: Any, detail: str) -> Cause:
    return (path, _INVALID, f"Invalid value: {_show(value)}: {detail}")


def _unsupported(path: str, value: Any, allowed: tuple[str, ...]) -> Cause:
    listed = ", ".join(_show(a) for a in allowed)
    return (path, _UNSUPPORTED, f"Unsupported value: {_show(value)}: supported values: {listed}")


def clear_status(obj: dict[str, Any]) -> None:
    """On create the client's ``status`` is not kept."""
    obj.pop("status", None)


def causes(obj: Mapping[str, Any], old: Mapping[str, Any] | None, *, status: bool) -> list[Cause]:
    """Every rule ``obj`` breaks (``old``: the stored Job on an update; ``status``: a write
    of the status subresource)."""
    if status:
        return _status_causes(obj.get("status") or {})
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return []
    found = _spec_causes(str((obj.get("metadata") or {}).get("name") or ""), spec)
    if old is not None:
        found += _update_causes(spec, old.get("spec") or {}, old.get("status") or {})
    return found


def _spec_causes(name: str, spec: Mapping[str, Any]) -> list[Cause]:
    found: list[Cause] = []
    for key in ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit",
                "ttlSecondsAfterFinished", "backoffLimitPerIndex", "maxFailedIndexes"):  # fmt: skip
        value = spec.get(key)
        if isinstance(value, int) and value < 0:
            found.append(_invalid(f"spec.{key}", value, "must be greater than or equal to 0"))
    found += _per_index_causes(spec)
    found += _mode_causes(name, spec)
    found += _restart_causes(spec)
    found += _failure_policy_causes(spec)
    found += _selector_causes(spec)
    return found


def _per_index_causes(spec: Mapping[str, Any]) -> list[Cause]:
    per_index, most = spec.get("backoffLimitPerIndex"), spec.get("maxFailedIndexes")
    found: list[Cause] = []
    if most is not None and per_index is None:
        body = "Required value: when maxFailedIndexes is specified"
        found.append(("spec.backoffLimitPerIndex", _REQUIRED, body))
    if spec.get("completionMode") != "Indexed":
        found += [
            _invalid(f"spec.{key}", value, "requires indexed completion mode")
            for key, value in (("backoffLimitPerIndex", per_index), ("maxFailedIndexes", most))
            if value is not None
        ]
        return found
    completions = spec.get("completions")
    if isinstance(most, int) and isinstance(completions, int) and most > completions:
        found.append(
            _invalid("spec.maxFailedIndexes", most, "must be less than or equal to completions")
        )
    if isinstance(most, int) and most > MAX_INDEXED_PARALLELISM:
        detail = f"must be less than or equal to {MAX_INDEXED_PARALLELISM}"
        found.append(_invalid("spec.maxFailedIndexes", most, detail))
    return found


def _mode_causes(name: str, spec: Mapping[str, Any]) -> list[Cause]:
    mode = spec.get("completionMode")
    if mode not in (None, "NonIndexed", "Indexed"):
        return [_unsupported("spec.completionMode", mode, ("NonIndexed", "Indexed"))]
    found: list[Cause] = []
    if mode != "Indexed":
        if spec.get("successPolicy") is not None:
            found.append(_invalid("spec.successPolicy", "", "requires indexed completion mode"))
        return found
    completions, parallelism = spec.get("completions"), spec.get("parallelism")
    if completions is None:
        found.append(
            ("spec.completions", _REQUIRED, "Required value: when completion mode is Indexed")
        )
    if isinstance(parallelism, int) and parallelism > MAX_INDEXED_PARALLELISM:
        most = MAX_INDEXED_PARALLELISM
        detail = f"must be less than or equal to {most} when completion mode is Indexed"
        found.append(_invalid("spec.parallelism", parallelism, detail))
    if isinstance(completions, int) and completions > 0:
        hostname = f"{name}-{completions - 1}"
        if pod_rules.label_problems(hostname):
            detail = f"will not able to create pod with invalid DNS label: {hostname}"
            found.append(_invalid("metadata.name", name, detail))
    return found


def _template_spec(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    template = spec.get("template")
    inner = template.get("spec") if isinstance(template, dict) else None
    return inner if isinstance(inner, dict) else {}


def _restart_causes(spec: Mapping[str, Any]) -> list[Cause]:
    path = "spec.template.spec.restartPolicy"
    policy = _template_spec(spec).get("restartPolicy")
    if policy in (None, "", "Always"):
        return [(path, _REQUIRED, 'Required value: valid values: "OnFailure", "Never"')]
    if policy not in ("OnFailure", "Never"):
        return [_unsupported(path, policy, ("OnFailure", "Never"))]
    if spec.get("podFailurePolicy") is not None and policy != "Never":
        return [
            _invalid(path, policy, 'only "Never" is supported when podFailurePolicy is specified')
        ]
    return []


def _failure_policy_causes(spec: Mapping[str, Any]) -> list[Cause]:
    replacement = spec.get("podReplacementPolicy")
    policy = spec.get("podFailurePolicy")
    found: list[Cause] = []
    if policy is None:
        if replacement not in (None, "Failed", "TerminatingOrFailed"):
            allowed = ("Failed", "TerminatingOrFailed")
            found.append(_unsupported("spec.podReplacementPolicy", replacement, allowed))
        return found
    if replacement not in (None, "Failed"):
        found.append(_unsupported("spec.podReplacementPolicy", replacement, ("Failed",)))
    rules = policy.get("rules") if isinstance(policy, dict) else None
    rules = rules if isinstance(rules, list) else []
    if len(rules) > MAX_FAILURE_RULES:
        body = f"Too many: {len(rules)}: must have at most {MAX_FAILURE_RULES} items"
        found.append(("spec.podFailurePolicy.rules", "FieldValueTooMany", body))
    names = {c.get("name") for key in ("containers", "initContainers")
             for c in _template_spec(spec).get(key) or [] if isinstance(c, dict)}  # fmt: skip
    for number, rule in enumerate(rules):
        if isinstance(rule, dict):
            where = f"spec.podFailurePolicy.rules[{number}]"
            per_index = spec.get("backoffLimitPerIndex") is not None
            found += _rule_causes(where, rule, names, per_index=per_index)
    return found


def _rule_causes(
    path: str, rule: Mapping[str, Any], names: set[Any], *, per_index: bool
) -> list[Cause]:
    found: list[Cause] = []
    action = rule.get("action")
    actions = ("Count", "FailIndex", "FailJob", "Ignore")
    if not action:
        listed = "[" + " ".join(_show(a) for a in actions) + "]"
        found.append((f"{path}.action", _REQUIRED, f"Required value: valid values: {listed}"))
    elif action == "FailIndex" and not per_index:
        detail = "requires the backoffLimitPerIndex to be set"
        found.append(_invalid(f"{path}.action", action, detail))
    elif action not in actions:
        found.append(_unsupported(f"{path}.action", action, actions))
    exits, conditions = rule.get("onExitCodes"), rule.get("onPodConditions")
    if isinstance(exits, dict):
        found += _exit_code_causes(f"{path}.onExitCodes", exits, names)
    if exits is not None and conditions:
        detail = "Invalid value: specifying both OnExitCodes and OnPodConditions is not supported"
        found.append((path, _INVALID, detail))
    if exits is None and not conditions:
        detail = "Invalid value: specifying one of OnExitCodes and OnPodConditions is required"
        found.append((path, _INVALID, detail))
    for number, pattern in enumerate(conditions if isinstance(conditions, list) else []):
        state = pattern.get("status") if isinstance(pattern, dict) else None
        if state not in (None, "True", "False", "Unknown"):
            where = f"{path}.onPodConditions[{number}].status"
            found.append(_unsupported(where, state, ("False", "True", "Unknown")))
    return found


def _exit_code_causes(path: str, exits: Mapping[str, Any], names: set[Any]) -> list[Cause]:
    found: list[Cause] = []
    operator = exits.get("operator")
    if not operator:
        found.append(
            (f"{path}.operator", _REQUIRED, 'Required value: valid values: ["In" "NotIn"]')
        )
    elif operator not in ("In", "NotIn"):
        found.append(_unsupported(f"{path}.operator", operator, ("In", "NotIn")))
    container = exits.get("containerName")
    if container is not None and container not in names:
        detail = "must be one of the container or initContainer names in the pod template"
        found.append(_invalid(f"{path}.containerName", container, detail))
    values = exits.get("values")
    values = [v for v in values if isinstance(v, int)] if isinstance(values, list) else []
    if not values:
        found.append(_invalid(f"{path}.values", values, "at least one value is required"))
    for number, value in enumerate(values):
        if operator == "In" and value == 0:
            found.append(
                _invalid(f"{path}.values[{number}]", value, "must not be 0 for the In operator")
            )
        if value in values[:number]:
            found.append(
                (f"{path}.values[{number}]", "FieldValueDuplicate", f"Duplicate value: {value}")
            )
    if values != sorted(values):
        found.append(_invalid(f"{path}.values", values, "must be ordered"))
    return found


def _selector_causes(spec: Mapping[str, Any]) -> list[Cause]:
    selector = spec.get("selector")
    match = selector.get("matchLabels") if isinstance(selector, dict) else None
    template = spec.get("template")
    meta = template.get("metadata") if isinstance(template, dict) else None
    labels = (meta.get("labels") if isinstance(meta, dict) else None) or {}
    if not isinstance(match, dict) or not isinstance(labels, dict):
        return []
    if all(labels.get(k) == v for k, v in match.items()):
        return []
    detail = "`selector` does not match template `labels`"
    return [_invalid("spec.template.metadata.labels", labels, detail)]


def _update_causes(
    spec: Mapping[str, Any], old: Mapping[str, Any], old_status: Mapping[str, Any]
) -> list[Cause]:
    found = [
        _invalid(f"spec.{key}", spec.get(key), "field is immutable")
        for key in _IMMUTABLE
        if spec.get(key) != old.get(key)
    ]
    if spec.get("completions") != old.get("completions"):
        elastic = spec.get("completionMode") == "Indexed" and spec.get("completions") is not None
        if not elastic:
            found.append(
                _invalid("spec.completions", spec.get("completions"), "field is immutable")
            )
        elif spec.get("completions") != spec.get("parallelism"):
            detail = "can only be modified in tandem with spec.parallelism"
            found.append(_invalid("spec.completions", spec.get("completions"), detail))
    template, before = spec.get("template") or {}, old.get("template") or {}
    if old.get("suspend") and old_status.get("startTime") is None:
        template, before = _without_scheduling(template), _without_scheduling(before)
    if template != before:
        found.append(_invalid("spec.template", spec.get("template"), "field is immutable"))
    return found


def _without_scheduling(template: Mapping[str, Any]) -> dict[str, Any]:
    """The template less what a suspended, never started Job may change."""
    meta = {k: v for k, v in (template.get("metadata") or {}).items()
            if k not in ("labels", "annotations")}  # fmt: skip
    spec = {k: v for k, v in (template.get("spec") or {}).items() if k not in _SCHEDULING}
    affinity = spec.get("affinity")
    if isinstance(affinity, dict):
        rest = {k: v for k, v in affinity.items() if k != "nodeAffinity"}
        spec["affinity"] = rest or None
    spec = {k: v for k, v in spec.items() if v is not None}
    return {**template, "metadata": meta, "spec": spec}


def _status_causes(status: Mapping[str, Any]) -> list[Cause]:
    conditions = status.get("conditions") or []
    true = {c.get("type") for c in conditions if isinstance(c, dict) and c.get("status") == "True"}
    found: list[Cause] = []
    if "Complete" in true and status.get("completionTime") is None:
        body = "Required value: completionTime is required for Complete jobs"
        found.append(("status.completionTime", _REQUIRED, body))
    for final, interim in (("Failed", "FailureTarget"), ("Complete", "SuccessCriteriaMet")):
        if final in true and interim not in true:
            body = (
                f"Invalid value: cannot set {final}=True condition without the {interim}=true "
                "condition"
            )
            found.append(("status.conditions", _INVALID, body))
    if true & {"Complete", "Failed"}:
        active = status.get("active") or 0
        if active:
            found.append(_invalid("status.active", active, "active>0 is invalid for finished job"))
        if status.get("startTime") is None:
            body = "Required value: startTime is required for finished job"
            found.append(("status.startTime", _REQUIRED, body))
    return found
