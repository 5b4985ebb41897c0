"""Trainer v2's admission webhooks (spec 6.1): the decisions, shared by the operator's webhook
server and the embedded API server's admission chain.

Four paths, as upstream's ``manifests/base/webhook``:
- ``/mutate-trainer-kubeflow-org-v1alpha1-trainjob`` — the defaulter: it only stamps
  ``spec.runtimePatches[].time`` (``patch_times``): on CREATE every patch without a time gets
  now; on UPDATE a patch whose manager existed keeps its old time when nothing else changed,
  else now; a new manager keeps a time the client gave, else now;
- ``/validate-trainer-kubeflow-org-v1alpha1-trainjob`` — ``engine.trainer.validate
  .validate_trainjob`` against the **live** runtime (never the snapshot), CREATE and UPDATE;
- ``/validate-trainer-kubeflow-org-v1alpha1-trainingruntime`` — ``api.trainer.validation
  .runtime_errors``, CREATE only (upstream accepts every UPDATE);
- ``/validate-trainer-kubeflow-org-v1alpha1-clustertrainingruntime`` — the same, CREATE and
  UPDATE.
Runtimes labelled ``trainer.kubeflow.org/webhook-validation: disabled`` are not validated (the
webhook configuration's objectSelector upstream). ``decide`` is pure but for the runtime
and JobSet lookup, which the caller passes in (the operator GETs them; the embedded server reads
its store).
A denial names the webhook as kube-apiserver does: ``admission webhook "<name>" denied the
request: <errors>``.
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from trainop.api.trainer import constants as c
from trainop.api.trainer import validation as api_validation
from trainop.controller import admission
from trainop.controller.admission import Reply
from trainop.engine.trainer.validate import validate_trainjob
from trainop.errors import FieldError

Obj = dict[str, Any]
MUTATE_TRAINJOB = "/mutate-trainer-kubeflow-org-v1alpha1-trainjob"
VALIDATE_PATHS = {
    c.TRAINJOB: "/validate-trainer-kubeflow-org-v1alpha1-trainjob",
    c.TRAINING_RUNTIME: "/validate-trainer-kubeflow-org-v1alpha1-trainingruntime",
    c.CLUSTER_TRAINING_RUNTIME: "/validate-trainer-kubeflow-org-v1alpha1-clustertrainingruntime",
}
WEBHOOK_NAMES = {
    c.TRAINJOB: "validator.trainjob.trainer.kubeflow.org",
    c.TRAINING_RUNTIME: "validator.trainingruntime.trainer.kubeflow.org",
    c.CLUSTER_TRAINING_RUNTIME: "validator.clustertrainingruntime.trainer.kubeflow.org",
}
DEFAULTER_NAME = "defaulter.trainjob.trainer.kubeflow.org"
# Reads a runtime or the TrainJob's JobSet: (kind, namespace, name) → the live object, or None
# when it does not exist.
RuntimeLookup = Callable[[str, str, str], Awaitable[Obj | None]]


@dataclass(frozen=True, slots=True)
class Decision:
    """Errors deny the request; warnings are returned either way."""

    errors: tuple[FieldError, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.errors


def denial(kind: str, errors: tuple[FieldError, ...]) -> str:
    """kube-apiserver's message for a webhook's denial: the webhook named, the error list."""
    unique = list(dict.fromkeys(str(error) for error in errors))
    listed = unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"
    return f'admission webhook "{WEBHOOK_NAMES[kind]}" denied the request: {listed}'


async def decide(
    kind: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None, lookup: RuntimeLookup
) -> Decision:
    """The validating webhook of ``kind`` on a CREATE (``old`` None) or UPDATE."""
    if kind != c.TRAINJOB:
        return judge_runtime(kind, obj, old)
    known, runtime_kind, namespace, name = runtime_target(obj)
    runtime = await lookup(runtime_kind, namespace, name) if known and name else None
    own = (obj.get("metadata") or {}).get("name")
    jobset = None
    if old is not None and isinstance(own, str):
        jobset = await lookup(c.JOBSET, namespace, own)  # runtimePatches vs active jobs
    return judge_trainjob(obj, old, runtime=runtime, jobset=jobset, known=known)


def runtime_target(obj: Mapping[str, Any]) -> tuple[bool, str, str, str]:
    """(registered, kind, namespace, name) of a TrainJob's runtimeRef, CRD defaults applied."""
    spec = obj.get("spec")
    ref = spec.get("runtimeRef") if isinstance(spec, dict) else None
    ref = ref if isinstance(ref, dict) else {}
    kind = str(ref.get("kind") or c.CLUSTER_TRAINING_RUNTIME)
    group = ref.get("apiGroup")
    known = f"{kind}.{c.GROUP if group is None else group}" in c.RUNTIME_KEYS
    namespace = str((obj.get("metadata") or {}).get("namespace") or "")
    name = ref.get("name")
    return known, kind, namespace, name if isinstance(name, str) else ""


def judge_trainjob(
    obj: Mapping[str, Any],
    old: Mapping[str, Any] | None,
    *,
    runtime: Mapping[str, Any] | None,
    jobset: Mapping[str, Any] | None,
    known: bool,
) -> Decision:
    """``validate_trainjob`` against the live runtime (and JobSet, on an update)."""
    errors, warnings = validate_trainjob(obj, runtime, known, old, jobset=jobset)
    return Decision(tuple(errors), tuple(warnings))


def judge_runtime(kind: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> Decision:
    """``runtime_errors`` (which skips updates of TrainingRuntimes and runtimes labelled
    ``webhook-validation: disabled``, as upstream's webhook configuration does)."""
    errors, warnings = api_validation.runtime_errors(kind, obj, old)
    return Decision(tuple(errors), tuple(warnings))


def is_webhook_denial(kind: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None,
                      errors: tuple[FieldError, ...]) -> bool:  # fmt: skip
    """Whether ``errors`` are the webhook's (a 403 denial) rather than the API server's own
    schema and CEL rules (a 422), which kube-apiserver checks before calling any webhook."""
    if kind == c.TRAINJOB:
        return not api_validation.trainjob_errors(obj, old)
    webhook = set(api_validation.ancestor_errors(obj))
    return all(error in webhook for error in errors)


def patch_times(obj: Obj, old: Mapping[str, Any] | None, now: datetime) -> Obj:
    """``obj`` with ``spec.runtimePatches[].time`` defaulted (see the module docstring)."""
    spec = obj.get("spec")
    patches = spec.get("runtimePatches") if isinstance(spec, dict) else None
    if not isinstance(patches, list):
        return obj
    stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    before = _patches_by_manager(old)
    result = copy.deepcopy(obj)
    for patch in result["spec"]["runtimePatches"]:
        if not isinstance(patch, dict):
            continue
        previous = before.get(patch.get("manager"))
        if previous is None:
            patch.setdefault("time", stamp)
            if patch["time"] is None:
                patch["time"] = stamp
        elif _without_time(previous) == _without_time(patch) and previous.get("time"):
            patch["time"] = previous["time"]
        else:
            patch["time"] = stamp
    return result


def _patches_by_manager(old: Mapping[str, Any] | None) -> dict[Any, Mapping[str, Any]]:
    spec = (old or {}).get("spec")
    patches = spec.get("runtimePatches") if isinstance(spec, dict) else None
    if not isinstance(patches, list):
        return {}
    return {p.get("manager"): p for p in patches if isinstance(p, dict)}


def _without_time(patch: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in patch.items() if k != "time"}


# --- the AdmissionReview transport (the operator's webhook server) ---------------------------


async def review(path: str, raw: bytes, *, lookup: RuntimeLookup, now: datetime) -> Reply:
    """Answer the ``AdmissionReview`` posted to one of Trainer's four paths."""
    document: object = None
    try:
        document, request = admission.decode_review(raw)
        response = await _respond(path, request, lookup, now)
    except admission.MalformedError as exc:
        status = {"code": 400, "reason": "BadRequest", "message": str(exc)}
        return Reply(400, admission.reply(document, {"allowed": False, "status": status}))
    return Reply(200, admission.reply(document, response))


def paths() -> tuple[str, ...]:
    return (MUTATE_TRAINJOB, *VALIDATE_PATHS.values())


async def _respond(path: str, request: Obj, lookup: RuntimeLookup, now: datetime) -> Obj:
    operation = request.get("operation")
    obj, old = request.get("object"), request.get("oldObject")
    if operation not in ("CREATE", "UPDATE") or not isinstance(obj, dict):
        return {"allowed": True, "status": {"code": 200}}
    old = old if operation == "UPDATE" and isinstance(old, dict) else None
    if path == MUTATE_TRAINJOB:
        return _mutation(obj, patch_times(obj, old, now))
    kind = next(k for k, p in VALIDATE_PATHS.items() if p == path)
    decision = await decide(kind, obj, old, lookup)
    response: Obj = {"allowed": True, "status": {"code": 200}}
    if not decision.ok:
        message = admission.denial_message(decision.errors)
        response = {"allowed": False, "status": {"code": 403, "reason": "Forbidden",
                                                 "message": message}}  # fmt: skip
    if decision.warnings:
        response["warnings"] = list(decision.warnings)
    return response


def _mutation(before: Obj, after: Obj) -> Obj:
    response: Obj = {"allowed": True, "status": {"code": 200}}
    if before == after:
        return response
    ops = [{"op": "replace", "path": "/spec/runtimePatches",
            "value": after["spec"]["runtimePatches"]}]  # fmt: skip
    response["patchType"] = "JSONPatch"
    response["patch"] = base64.b64encode(json.dumps(ops).encode()).decode()
    return response
