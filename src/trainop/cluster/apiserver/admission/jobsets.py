"""JobSet's admission (``jobset.x-k8s.io/v1alpha2``, v0.12.0) in the embedded API server.

What a cluster with JobSet installed does to a write of a JobSet after its CRD schema passed
(spec 1.2-1.6; golden case G14), in kube-apiserver's order:

1. the mutating webhook, on CREATE only (``default``, called before the CRD schema check):
   ``network`` gets ``enableDNSHostnames`` and ``publishNotReadyAddresses`` true,
   ``successPolicy`` ``All``, ``startupPolicy`` ``AnyOrder``, each replicatedJob's Job
   template ``completionMode: Indexed`` and pod ``restartPolicy: OnFailure``, unnamed
   failure-policy rules ``failurePolicyRule<i>``, claim policies ``whenDeleted: Delete``;
2. the CRD's CEL rules, which the embedded schema does not evaluate: InOrder with
   ``dependsOn`` is refused, ``network``/``successPolicy``/``failurePolicy``/
   ``startupPolicy``/``volumeClaimPolicies``/``dependsOn`` are ``Value is immutable``;
3. the validating webhook: on CREATE rules 1-21 of spec 1.5 with upstream's messages (each a
   field error of type internal, as v0.12.0 wraps plain messages); on UPDATE only
   immutability: ``spec.replicatedJobs`` (pod-template labels, annotations, nodeSelector,
   tolerations and schedulingGates may change while the JobSet is or becomes suspended) and
   ``spec.managedBy``.

Every refusal is 422 ``Invalid`` for kind JobSet with one cause per finding. The ``status``
subresource is not seen (the webhooks' rules list the main resource).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from trainop.api.trainer import constants as c
from trainop.api.trainer import rules
from trainop.api.trainer.jobset import EXCLUSIVE_STARTUP, IMMUTABLE_VALUE
from trainop.cluster.apiserver.admission import jobset_create
from trainop.cluster.apiserver.http import status
from trainop.cluster.apiserver.rest.call import Call

Cause = jobset_create.Cause
_IMMUTABLE = ("network", "successPolicy", "failurePolicy", "startupPolicy", "volumeClaimPolicies")
_SUSPEND_MUTABLE_META = ("labels", "annotations")
_SUSPEND_MUTABLE_SPEC = ("nodeSelector", "tolerations", "schedulingGates")


def judged(call: Call) -> bool:
    """Whether this write goes through JobSet's webhooks."""
    return call.rt.group == c.JOBSET_GROUP and call.rt.kind == c.JOBSET and call.subresource is None


def admit(call: Call, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    """Validate ``obj`` (already defaulted on create, by ``default`` before the schema
    check, as kube-apiserver runs mutating admission first); raises the request's 422."""
    spec, old_spec = rules.child(obj, "spec"), rules.child(old, "spec")
    causes = cel_causes(spec, old_spec)
    if not causes:
        causes = jobset_create.create_causes(obj) if old is None else update_causes(spec, old_spec)
    if causes:
        name = str(rules.child(rules.child(obj, "metadata"), "name") or "")
        raise status.rejected(call.rt, name, causes)


def default(obj: dict[str, Any]) -> None:
    """The mutating webhook's defaults (spec 1.2, 1.3)."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    if spec.get("successPolicy") is None:
        spec["successPolicy"] = {"operator": "All"}
    if spec.get("startupPolicy") is None:
        spec["startupPolicy"] = {"startupPolicyOrder": "AnyOrder"}
    for rj in rules.items(spec.get("replicatedJobs")):
        job = _dict_at(rj, "template", "spec")
        job.setdefault("completionMode", "Indexed")
        pod = _dict_at(job, "template", "spec")
        if not pod.get("restartPolicy"):
            pod["restartPolicy"] = "OnFailure"
    if spec.get("network") is None:
        spec["network"] = {}
    network = spec["network"] if isinstance(spec["network"], dict) else {}
    for key in ("enableDNSHostnames", "publishNotReadyAddresses"):
        if network.get(key) is None:
            network[key] = True
    for index, rule in enumerate(rules.items(rules.child(spec.get("failurePolicy"), "rules"))):
        if not rule.get("name") and isinstance(rule, dict):
            rule["name"] = f"failurePolicyRule{index}"
    for policy in rules.items(spec.get("volumeClaimPolicies")):
        if isinstance(policy, dict) and policy.get("retentionPolicy") is None:
            policy["retentionPolicy"] = {"whenDeleted": "Delete"}


def _dict_at(obj: Any, *path: str) -> dict[str, Any]:
    """The mapping at ``path`` inside ``obj``, made when absent (a scalar in the way: a
    throwaway dict, so a malformed object is left as the schema judged it)."""
    for key in path:
        if not isinstance(obj, dict):
            return {}
        if obj.get(key) is None:
            obj[key] = {}
        obj = obj[key]
    return obj if isinstance(obj, dict) else {}


def cel_causes(spec: Any, old_spec: Any) -> list[Cause]:
    """The CRD's CEL rules (spec 1.2, 1.6)."""
    found = []
    jobs = rules.items(rules.child(spec, "replicatedJobs"))
    order = rules.child(rules.child(spec, "startupPolicy"), "startupPolicyOrder")
    if order == "InOrder" and any(rules.has(job, "dependsOn") for job in jobs):
        found.append(_cel("spec", "object", EXCLUSIVE_STARTUP))
    if old_spec is None:
        return found
    for name in _IMMUTABLE:
        if rules.changed(spec, old_spec, name):
            found.append(_cel(f"spec.{name}", rules.schema_type(spec[name]), IMMUTABLE_VALUE))
    old_jobs = rules.keyed(rules.child(old_spec, "replicatedJobs"), "name")
    for index, job in enumerate(jobs):
        before = rules.matching(old_jobs, job, "name")
        if before is not None and rules.changed(job, before, "dependsOn"):
            found.append(_cel(f"spec.replicatedJobs[{index}].dependsOn", "array", IMMUTABLE_VALUE))
    return found


def _cel(path: str, schema_type: str, message: str) -> Cause:
    return (path, "FieldValueInvalid", f'Invalid value: "{schema_type}": {message}')


def update_causes(spec: Any, old_spec: Any) -> list[Cause]:
    """The validating webhook on UPDATE: immutability only (spec 1.6)."""
    new_jobs = copy.deepcopy(rules.child(spec, "replicatedJobs"))
    old_jobs = rules.child(old_spec, "replicatedJobs")
    suspended = rules.child(spec, "suspend") is True or rules.child(old_spec, "suspend") is True
    if suspended and isinstance(new_jobs, list) and isinstance(old_jobs, list):
        for new, old in zip(new_jobs, old_jobs, strict=False):
            _carry_mutable(new, old)
    found = []
    if new_jobs != old_jobs:
        found.append(
            (
                "spec.replicatedJobs",
                "FieldValueInvalid",
                f"Invalid value: {_go_value(new_jobs)}: field is immutable",
            )
        )
    if rules.child(spec, "managedBy") != rules.child(old_spec, "managedBy"):
        value = rules.child(spec, "managedBy")
        found.append(
            (
                "spec.managedBy",
                "FieldValueInvalid",
                f"Invalid value: {_go_value(value)}: field is immutable",
            )
        )
    return found


def _go_value(value: object) -> str:
    return "null" if value is None else f'"{value}"' if isinstance(value, str) else "[]"


def _carry_mutable(new: Any, old: Any) -> None:
    """Copy the fields a suspended JobSet may change from ``old`` into ``new`` (both
    replicatedJobs), so only the others are compared."""
    new_pod, old_pod = _pod_template(new), _pod_template(old)
    if new_pod is None or old_pod is None:
        return
    for part, names in (("metadata", _SUSPEND_MUTABLE_META), ("spec", _SUSPEND_MUTABLE_SPEC)):
        target, source = new_pod.setdefault(part, {}), old_pod.get(part) or {}
        if not isinstance(target, dict) or not isinstance(source, Mapping):
            continue
        for name in names:
            target.pop(name, None)
            if source.get(name) is not None:
                target[name] = source[name]
        if not target and not source:
            new_pod.pop(part)


def _pod_template(rj: Any) -> dict[str, Any] | None:
    pod = rules.child(rules.child(rules.child(rj, "template"), "spec"), "template")
    return pod if isinstance(pod, dict) else None
