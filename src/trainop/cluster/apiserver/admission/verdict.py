"""The one verdict on a custom resource: what the API server and ``trainop validate`` both run.

kube-apiserver judges a custom resource write in this order, and ``judge`` does the same:
the metadata rules every kind has (``validation.metadata_errors``); the CRD's structural schema
(``crdschema``: unknown fields pruned, ``null``s dropped, defaults applied, numbers read as
kube's JSON decoder reads them, then validated); and, for a training job (every job kind, v1
and MPIJob v2beta1), the admission webhook's check ``manifest.check_job`` (``validate``, or
``validate_update`` against the stored object) on the object as the schema left it — what a
cluster's webhook receives.

Unknown fields are where kube-apiserver is lenient, and the request's ``fieldValidation`` says
how (``FIELD_VALIDATION_MODES``): ``Strict`` refuses the write (400 ``strict decoding error``),
``Warn`` (the server's default) prunes them and answers one ``Warning`` per field, ``Ignore``
prunes them silently. kubectl sends ``Strict`` unless told otherwise (``--validate=strict``,
``KUBECTL_DEFAULT_MODE``), and so does ``trainop validate``.

Neighbours: ``admission.admit`` calls ``judge`` on every write of a custom resource;
``cli.validate`` calls ``judge_manifest``, which first does to a manifest what the server does
to a create before admitting it (``as_created``: the name made from ``generateName``, the
fields the server owns dropped, as ``rest.writes.insert`` and ``rest.objects.prepare_create``
do) and takes the schema of the kind's generated CRD (``schemas.crds``), the very schema a
local session installs. See docs/design/002-api-defaulting-and-validation.md.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from trainop.api import manifest
from trainop.api.kinds import KINDS, KindInfo
from trainop.cluster.apiserver import schemas
from trainop.cluster.apiserver.admission import validation
from trainop.cluster.apiserver.admission.crdschema import CustomSchema
from trainop.cluster.apiserver.rest import objects
from trainop.errors import FieldError

STRICT, WARN, IGNORE = "Strict", "Warn", "Ignore"
FIELD_VALIDATION_MODES = (STRICT, WARN, IGNORE)
SERVER_DEFAULT_MODE = WARN  # kube-apiserver, when a request names no fieldValidation
KUBECTL_DEFAULT_MODE = STRICT  # kubectl's --validate=strict
V1 = "kubeflow.org/v1"
# Set by the server on create whatever the body says (rest.objects.prepare_create).
_SERVER_OWNED_METADATA = (
    "uid",
    "creationTimestamp",
    "generation",
    "resourceVersion",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)


@dataclass(frozen=True, slots=True)
class Verdict:
    """Errors refuse the write (422); unknown fields refuse it under ``Strict`` (400);
    warnings are answered either way."""

    errors: tuple[FieldError, ...] = ()
    warnings: tuple[str, ...] = ()
    unknown_fields: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.errors and not self.unknown_fields


def unknown_field_message(path: str) -> str:
    """kube's words for one unknown field (a ``Warning``, or part of the strict error)."""
    return f'unknown field "{path}"'


def judge(
    obj: dict[str, Any],
    *,
    schema: CustomSchema | None,
    plural: str,
    field_validation: str,
    job: bool,
    old: dict[str, Any] | None = None,
    namespaced: bool = True,
) -> Verdict:
    """The verdict on a custom resource ``obj``, which is prepared in place.

    ``job``: judge it by the webhook's rules too (a training job, not its status). Under
    ``Strict`` the unknown fields refuse it (the server answers only them, as kube does) and
    the pruned object is judged on, so that ``trainop validate`` names every problem at once.
    """
    errors = validation.metadata_errors(obj, plural=plural, namespaced=namespaced)
    pruned = tuple(schema.prepare(obj)) if schema is not None else ()
    refused = pruned if field_validation == STRICT else ()
    warnings = (
        () if refused or field_validation == IGNORE else tuple(map(unknown_field_message, pruned))
    )
    if schema is not None:
        errors += schema.errors(obj)
    if errors or not job:
        return Verdict(tuple(errors), warnings, refused)
    decision = manifest.check_job(as_v1(obj), old=as_v1(old))
    return Verdict(decision.errors, warnings + decision.warnings, refused)


def as_v1(obj: dict[str, Any] | None) -> dict[str, Any] | None:
    """``obj`` as read through v1: the versions of one CRD share storage and differ only in
    ``apiVersion`` (conversion None, docs/design/100), so one check judges every version."""
    if obj is None or obj.get("apiVersion") == V1:
        return obj
    return {**obj, "apiVersion": V1}


def metadata_error(meta: Mapping[str, Any]) -> FieldError | None:
    """Why kube could not decode ``metadata`` into an ObjectMeta before admitting anything
    (a 400), for the fields the server reads before admission; None when it can."""
    namespace = meta.get("namespace")
    if namespace is not None and not isinstance(namespace, str):
        return FieldError("metadata.namespace", "Invalid", "must be a string")
    return None


def judge_manifest(document: dict[str, Any], *, field_validation: str) -> Verdict:
    """The verdict of a create of ``document`` at the endpoint its kind and apiVersion name,
    as the embedded API server gives it (``trainop validate``)."""
    info = _served_kind(document)
    if info is None:
        refused = manifest.check_job(document).errors  # names apiVersion or kind
        return Verdict(refused or (FieldError("apiVersion", "NotSupported", "not served"),))
    obj = copy.deepcopy(document)
    meta = obj.get("metadata")
    if meta is None:
        meta = obj["metadata"] = {}
    if not isinstance(meta, dict):
        return Verdict((FieldError("metadata", "Invalid", "must be an object"),))
    problem = metadata_error(meta)
    if problem is not None:
        return Verdict((problem,))
    as_created(obj, meta)
    return judge(
        obj,
        schema=schema_of(info.kind, str(obj["apiVersion"])),
        plural=info.plural,
        field_validation=field_validation,
        job=True,
    )


def as_created(obj: dict[str, Any], meta: dict[str, Any]) -> None:
    """What the server does to a created custom resource before admission, in place: a name
    from ``generateName``, no server-owned metadata, no status (the subresource's)."""
    if not meta.get("name") and meta.get("generateName"):
        meta["name"] = objects.generated_name(str(meta["generateName"]))
    for key in _SERVER_OWNED_METADATA:
        meta.pop(key, None)
    obj.pop("status", None)


def _served_kind(document: Mapping[str, Any]) -> KindInfo | None:
    kind, api_version = document.get("kind"), document.get("apiVersion")
    if not isinstance(api_version, str):
        return None
    for info in KINDS:
        versions = {V1, *(f"kubeflow.org/{v.name}" for v in info.other_versions)}
        if info.kind == kind and api_version in versions:
            return info
    return None


@functools.cache
def _crd_schemas() -> dict[tuple[str, str], CustomSchema]:
    found = {}
    for crd in schemas.crds():
        kind = crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            schema = version["schema"]["openAPIV3Schema"]
            found[(kind, f"kubeflow.org/{version['name']}")] = CustomSchema(schema)
    return found


def schema_of(kind: str, api_version: str) -> CustomSchema | None:
    """The structural schema of ``kind`` at ``api_version`` from the generated CRDs."""
    return _crd_schemas().get((kind, api_version))
