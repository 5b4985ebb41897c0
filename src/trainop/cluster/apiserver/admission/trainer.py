"""Trainer v2's admission webhooks in the embedded API server's chain (spec 6.1).

What a cluster running Trainer's webhooks does to a write of a ``trainer.kubeflow.org`` object
after its CRD schema passed, with the decisions of ``controller.trainjob_admission`` (the ones
the operator's webhook server serves, so both answer alike):

- a TrainJob CREATE or UPDATE: the defaulter stamps ``spec.runtimePatches[].time`` (the clock
  of the server); then ``validate_trainjob`` against the **live** runtime read from the store
  (and, on an update, the live JobSet);
- a TrainingRuntime or ClusterTrainingRuntime: ``runtime_errors`` (which knows that upstream's
  webhook skips TrainingRuntime updates and runtimes labelled ``webhook-validation: disabled``).

The API server's own rules (the CEL rules the embedded schema does not evaluate) refuse with
422 ``Invalid`` as kube-apiserver does; the webhooks' rules with 403 ``Forbidden`` and the
message ``admission webhook "<name>" denied the request: <errors>``. Warnings are returned.
The ``status`` subresource is not seen by the webhooks (their rules list the main resource).
``judge_manifest`` gives ``trainop validate`` the same verdict offline.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from trainop.api.trainer import constants as c
from trainop.api.trainer import crds as trainer_crds
from trainop.api.trainer import validation as api_validation
from trainop.cluster.apiserver import schemas, store
from trainop.cluster.apiserver.admission import verdict
from trainop.cluster.apiserver.admission.crdschema import CustomSchema
from trainop.cluster.apiserver.http import status
from trainop.cluster.apiserver.rest.call import ApiState, Call
from trainop.controller import trainjob_admission as webhooks
from trainop.errors import FieldError

_STORE_KEYS = {
    c.TRAINING_RUNTIME: (f"{c.GROUP}/{c.PLURALS[c.TRAINING_RUNTIME]}", True),
    c.CLUSTER_TRAINING_RUNTIME: (f"{c.GROUP}/{c.PLURALS[c.CLUSTER_TRAINING_RUNTIME]}", False),
    c.JOBSET: (f"{c.JOBSET_GROUP}/{c.JOBSET_PLURAL}", True),
}


def judged(call: Call) -> bool:
    """Whether this write goes through Trainer's webhooks."""
    return call.rt.group == c.GROUP and call.rt.kind in c.KINDS and call.subresource is None


def admit(
    state: ApiState, call: Call, obj: dict[str, Any], old: dict[str, Any] | None, now: datetime
) -> list[str]:
    """Default and validate ``obj`` in place; raises the request's error; returns warnings."""
    kind = call.rt.kind
    if kind == c.TRAINJOB:
        defaulted = webhooks.patch_times(obj, old, now)
        if defaulted is not obj:
            obj["spec"]["runtimePatches"] = defaulted["spec"]["runtimePatches"]
        decision = _trainjob(state, obj, old)
    else:
        decision = webhooks.judge_runtime(kind, obj, old)
    if decision.errors:
        if webhooks.is_webhook_denial(kind, obj, old, decision.errors):
            raise status.forbidden(webhooks.denial(kind, decision.errors))
        name = str((obj.get("metadata") or {}).get("name") or "")
        raise status.invalid(call.rt, name, list(decision.errors))
    return list(decision.warnings)


def _trainjob(
    state: ApiState, obj: dict[str, Any], old: dict[str, Any] | None
) -> webhooks.Decision:
    known, kind, namespace, name = webhooks.runtime_target(obj)
    runtime = _read(state, kind, namespace, name) if known and name else None
    own = (obj.get("metadata") or {}).get("name")
    jobset = _read(state, c.JOBSET, namespace, own) if old is not None and own else None
    return webhooks.judge_trainjob(obj, old, runtime=runtime, jobset=jobset, known=known)


def _read(state: ApiState, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
    resource, namespaced = _STORE_KEYS[kind]
    key = store.Key(resource=resource, namespace=namespace if namespaced else "", name=name)
    found = state.store.get(key)
    return found.obj if found is not None else None


# --- ``trainop validate``: the same verdict, offline ------------------------------------------


def judge_manifest(
    document: dict[str, Any], *, field_validation: str, runtimes: Sequence[dict[str, Any]] = ()
) -> verdict.Verdict:
    """The verdict of a create of a Trainer v2 ``document``, as this server gives it: metadata,
    the kind's CRD schema, then the API's and the webhooks' rules. A TrainJob's runtime is taken
    from ``runtimes`` (the other documents of the file); when it is not there, only the rules
    that need no runtime are checked and a warning says so."""
    kind = str(document.get("kind"))
    obj = copy.deepcopy(document)
    meta = obj.setdefault("metadata", {})
    if not isinstance(meta, dict):
        return verdict.Verdict((FieldError("metadata", "Invalid", "must be an object"),))
    verdict.as_created(obj, meta)
    namespaced = kind != c.CLUSTER_TRAINING_RUNTIME
    if namespaced:
        meta.setdefault("namespace", "default")
    judged = verdict.judge(obj, schema=_schemas().get(kind), plural=c.PLURALS[kind],
                           field_validation=field_validation, job=False,
                           namespaced=namespaced)  # fmt: skip
    if not judged.ok:
        return judged
    if kind != c.TRAINJOB:
        decision = webhooks.judge_runtime(kind, obj, None)
        return verdict.Verdict(decision.errors, judged.warnings + decision.warnings)
    known, runtime_kind, _, name = webhooks.runtime_target(obj)
    runtime = next((r for r in runtimes if _is(r, runtime_kind, name)), None)
    if known and runtime is None:
        errors = tuple(api_validation.trainjob_errors(obj))
        note = f"{runtime_kind} {name!r} is not in the file: the runtime's rules were not checked"
        return verdict.Verdict(errors, (*judged.warnings, note))
    decision = webhooks.judge_trainjob(obj, None, runtime=runtime, jobset=None, known=known)
    return verdict.Verdict(decision.errors, judged.warnings + decision.warnings)


def is_trainer_document(document: Mapping[str, Any]) -> bool:
    return document.get("apiVersion") == c.API_VERSION and document.get("kind") in c.KINDS


def _is(runtime: Mapping[str, Any], kind: str, name: str) -> bool:
    meta = runtime.get("metadata")
    return (
        runtime.get("kind") == kind
        and isinstance(meta, dict)
        and meta.get("name") == name
        and runtime.get("apiVersion") == c.API_VERSION
    )


@functools.cache
def _schemas() -> dict[str, CustomSchema]:
    found = {}
    for crd in trainer_crds.build_crds(schemas.load_definitions()):
        if crd["spec"]["group"] != c.GROUP:
            continue
        [version] = crd["spec"]["versions"]
        found[crd["spec"]["names"]["kind"]] = CustomSchema(version["schema"]["openAPIV3Schema"])
    return found
