"""Checks an object must pass before it is stored: type, namespace, name, schema.

Role: the steps kube-apiserver runs between decoding a body and writing it — the body's
``apiVersion``/``kind`` must be the endpoint's (400), its namespace and name must agree with
the URL (400), custom resources are pruned, defaulted and validated against their CRD
schema and built-in kinds against the Kubernetes JSON schema (422 with field causes), and
unknown fields are rejected under ``fieldValidation=Strict`` (400) or reported in a
``Warning`` header otherwise.

Then the checks a cluster's admission chain adds, so that what is stored here is what a real
cluster with trainop's webhook would store (docs/design/010, "Admission"):

- custom resources: ``verdict.judge``, the one verdict ``trainop validate`` gives too
  (metadata, structural schema, unknown fields by ``fieldValidation``); for training jobs
  (every job kind, each served version; create, update and every patch, the ``status``
  subresource excepted as the webhook does not see it) the local replica ceiling
  (``limits``) first, and in ``judge`` the webhook's ``manifest.check_job``
  (``validate_update`` against the stored object on an update); errors are 422 with one
  cause per field, warnings go in ``Warning`` headers; for ``trainer.kubeflow.org`` kinds,
  Trainer v2's defaulter and validators (``trainer``; webhook denials are 403);
- built-in kinds: kube's defaults (``defaults``; on the main resource, after unknown fields
  are dropped and before validation, so a Pod's QoS class is computed from them) and numeric
  resource quantities (``cpu: 1``) stored as kube's canonical
  strings (``quantities``);
- pods, ConfigMaps and Secrets: kube's name and path rules (``api.pod_rules``) and the 1 MiB
  data limit; every kind: the metadata limits of ``validation.metadata_errors``.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from trainop.api import pod_rules
from trainop.api.kinds import KINDS, KindInfo
from trainop.cluster.apiserver.admission import (
    batchjobs,
    builtin_fields,
    defaults,
    jobsets,
    limits,
    quantities,
    trainer,
    validation,
    verdict,
    volumes,
)
from trainop.cluster.apiserver.admission.crdschema import CustomSchema
from trainop.cluster.apiserver.http import status
from trainop.cluster.apiserver.rest import resources
from trainop.cluster.apiserver.rest.call import ApiState, Call
from trainop.errors import FieldError

_TRAINING_KINDS = {info.kind: info for info in KINDS}


def check_type(rt: resources.ResourceType, obj: dict[str, Any]) -> None:
    """400 unless the body's apiVersion and kind are the endpoint's.

    Built-in kinds may omit both (the endpoint's are assumed, as kube's typed decoder does);
    custom resources are decoded as unstructured objects and must carry them.
    """
    if not rt.custom:
        obj.setdefault("kind", rt.kind)
        obj.setdefault("apiVersion", rt.api_version)
    kind, api_version = obj.get("kind"), obj.get("apiVersion")
    if not kind:
        raise status.bad_request("Object 'Kind' is missing in the request body")
    if not api_version:
        raise status.bad_request("Object 'apiVersion' is missing in the request body")
    if kind != rt.kind or api_version != rt.api_version:
        raise status.bad_request(
            f"the object provided is unrecognized (must be of type {rt.kind}): "
            f"{api_version}, Kind={kind}"
        )


def check_metadata(call: Call, obj: dict[str, Any]) -> dict[str, Any]:
    """400 unless metadata is a map whose namespace/name agree with the URL; returns it."""
    meta = obj.get("metadata")
    if meta is None:
        meta = obj["metadata"] = {}
    if not isinstance(meta, dict):
        raise status.bad_request("metadata must be an object")
    problem = verdict.metadata_error(meta)
    if problem is not None:
        raise status.bad_request(str(problem))
    body_ns = meta.get("namespace")
    if call.rt.namespaced and body_ns and call.namespace and body_ns != call.namespace:
        raise status.bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
    if call.name is not None and meta.get("name") not in (None, call.name):
        raise status.bad_request(
            f"the name of the object ({meta.get('name')}) does not match the name on the URL "
            f"({call.name})"
        )
    return meta


def admit(
    state: ApiState, call: Call, obj: dict[str, Any], old: dict[str, Any] | None = None
) -> list[str]:
    """Prune/default/validate ``obj`` in place; 422 on errors. Returns warnings to send.

    ``old`` is the stored object on an update (None on create): a training job's update is
    judged by the webhook's update rules (immutable fields) against it.
    """
    rt = call.rt
    name = str((obj.get("metadata") or {}).get("name") or "")
    job_kind = _job_kind(state, rt)
    if job_kind is not None and call.subresource is None:
        ceiling = limits.replica_errors(job_kind, obj, state.limits.max_replicas_per_job)
        if ceiling:
            raise status.invalid(rt, name, ceiling)
    if rt.custom:
        return _admit_custom(state, call, obj, old, job=job_kind is not None)
    errors: list[FieldError] = validation.metadata_errors(
        obj, plural=rt.plural, namespaced=rt.namespaced
    )
    warnings: list[str] = []
    checked = obj
    if rt.definition is not None:
        if rt.kind == "Secret" and not rt.group:
            builtin_fields.merge_string_data(obj)
        if call.subresource == "status":
            checked = _schema_view(rt.definition, obj)
        warnings = _unknown_fields(call, builtin_fields.unknown(rt.definition, checked))
        if call.subresource is None:
            defaults.apply(rt.group, rt.plural, obj, create=old is None)
            if volumes.judged(rt.group, rt.plural):
                volumes.default(state.store, rt.group, rt.plural, obj, create=old is None)
        errors += validation.builtin_validator(rt.definition).errors(checked)
    if not errors and rt.definition is not None:
        not_quantity = quantities.normalize(rt.definition, checked)  # cpu: 1 is stored as "1"
        if not_quantity is not None:
            raise status.bad_request(
                f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: '
                f"quantities must match the regular expression '{quantities.MESSAGE_PATTERN}'"
            )
    if not errors and call.subresource is None:
        errors += _object_rules(rt, obj)
    if errors:
        raise status.invalid(rt, name, errors)
    if volumes.judged(rt.group, rt.plural) and call.subresource is None:
        causes = volumes.causes(rt.plural, obj, old)  # claims' and volumes' rules
        if causes:
            raise status.rejected(rt, name, causes)
    if rt.group == "batch" and rt.plural == "jobs" and call.subresource in (None, "status"):
        _admit_job(call, obj, old, name)
    return warnings


def _schema_view(definition: str, obj: dict[str, Any]) -> dict[str, Any]:
    """What the schema checks of a built-in kind's ``/status`` write need to see: its
    ``status`` (and the fields its definition requires), sharing their values with ``obj``.

    Everything else in the object is the stored object's (``objects.prepare_update`` builds
    a status write on a copy of it), already admitted under the same, fixed schema; checking
    it again cannot find anything (kube's ``ValidateStatusUpdate`` too leaves the spec be),
    and for a pod it is most of the work. The unknown-field walk and the quantity walk then
    change ``status`` in place, as they would within ``obj``.
    """
    return {key: obj[key] for key in _status_keys(definition) if key in obj}


@functools.cache
def _status_keys(definition: str) -> tuple[str, ...]:
    required = validation.definitions().get(definition, {}).get("required", ())
    return tuple(dict.fromkeys(("apiVersion", "kind", "status", *required)))


def _custom_keys(schema: CustomSchema | None) -> tuple[str, ...]:
    """The fields of a custom resource's ``/status`` write that are judged, as
    ``_schema_view`` picks them for a built-in kind: its metadata (which every kind's rules
    check), its status and what the root of its CRD schema requires. The rest (a job's
    replica templates above all) is the stored object's, judged when it was written; the
    pruning, null-dropping and defaulting of the judged fields are copied back whole."""
    required = schema.schema.get("required", ()) if schema is not None else ()
    return tuple(dict.fromkeys(("apiVersion", "kind", "metadata", "status", *required)))


def _admit_job(call: Call, obj: dict[str, Any], old: dict[str, Any] | None, name: str) -> None:
    """kube-apiserver's Job rules (``batchjobs``); a new Job's status is dropped."""
    if old is None and call.subresource is None:
        batchjobs.clear_status(obj)
    causes = batchjobs.causes(obj, old, status=call.subresource == "status")
    if causes:
        raise status.rejected(call.rt, name, causes)


def _admit_custom(
    state: ApiState, call: Call, obj: dict[str, Any], old: dict[str, Any] | None, *, job: bool
) -> list[str]:
    """A custom resource: the one verdict ``trainop validate`` gives too (``verdict.judge``)."""
    rt = call.rt
    if state.job_admission and jobsets.judged(call) and old is None:
        jobsets.default(obj)  # JobSet's mutating webhook runs before the schema is checked
    schema = state.schemas.get((rt.group, rt.version, rt.plural))
    keys = _custom_keys(schema) if call.subresource == "status" else None
    view = obj if keys is None else {key: obj[key] for key in keys if key in obj}
    decision = verdict.judge(
        view,
        schema=schema,
        plural=rt.plural,
        field_validation=call.query.get("fieldValidation", verdict.SERVER_DEFAULT_MODE),
        job=job and call.subresource is None,
        old=old,
        namespaced=rt.namespaced,
    )
    for key in keys or ():  # what preparing the view did to its fields, done to obj
        if key in view:
            obj[key] = view[key]
        else:
            obj.pop(key, None)
    if decision.unknown_fields:
        raise _strict_error(call, decision.unknown_fields)
    if decision.errors:
        name = str((obj.get("metadata") or {}).get("name") or "")
        raise status.invalid(rt, name, list(decision.errors))
    if state.job_admission and jobsets.judged(call):  # JobSet's webhooks
        jobsets.admit(call, obj, old)
    if state.job_admission and trainer.judged(call):  # Trainer v2's webhooks
        return list(decision.warnings) + trainer.admit(state, call, obj, old, state.clock())
    return list(decision.warnings)


def _job_kind(state: ApiState, rt: resources.ResourceType) -> KindInfo | None:
    """The training kind served at ``rt`` (kubeflow.org/v1, or another version its CRD serves
    beside v1: MPIJob v2beta1), when jobs are admitted here."""
    if not state.job_admission or rt.group != "kubeflow.org":
        return None
    info = _TRAINING_KINDS.get(rt.kind)
    if info is None:
        return None
    if rt.version == "v1" or any(v.name == rt.version for v in info.other_versions):
        return info
    return None


def _object_rules(rt: resources.ResourceType, obj: dict[str, Any]) -> list[FieldError]:
    """kube-apiserver's own rules beyond the schema for pods, ConfigMaps and Secrets: the
    names and paths of ``pod_rules`` (the sandbox's first half) and the data size limit."""
    if rt.group:
        return []
    if rt.plural == "pods":
        spec = obj.get("spec")
        return pod_rules.pod_spec_errors(spec, path="spec") if isinstance(spec, dict) else []
    if rt.plural in ("configmaps", "secrets"):
        return pod_rules.data_key_errors(obj) + validation.data_size_errors(
            obj, secret=rt.plural == "secrets"
        )
    return []


def _unknown_fields(call: Call, pruned: list[str]) -> list[str]:
    if not pruned:
        return []
    mode = call.query.get("fieldValidation", verdict.SERVER_DEFAULT_MODE)
    if mode == verdict.STRICT:
        raise _strict_error(call, pruned)
    return [] if mode == verdict.IGNORE else [verdict.unknown_field_message(p) for p in pruned]


def _strict_error(call: Call, pruned: Sequence[str]) -> Exception:
    kind, version = call.rt.kind, call.rt.api_version
    return status.bad_request(
        f'{kind} in version "{version}" cannot be handled as a {kind}: '
        "strict decoding error: " + ", ".join(map(verdict.unknown_field_message, pruned))
    )
