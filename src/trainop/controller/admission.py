"""Admission decisions for kubeflow.org/v1 jobs: an ``AdmissionReview`` in, the reply out.

``review(info, raw)`` is the whole webhook minus the HTTPS server (``controller.webhook``): it
decodes an ``admission.k8s.io/v1`` ``AdmissionReview`` posted to the path of kind ``info``,
decides, and returns the HTTP status and the ``AdmissionReview`` to send back. It never raises
on bad input.

- CREATE and UPDATE → ``manifest.check_job`` (the check ``trainop validate`` and the embedded
  API server run too: ``validate``, or ``validate_update`` against the old object);
  DELETE and CONNECT → allowed.
- Denied: ``allowed: false`` and ``status {code: 403, reason: Forbidden, message}``, what
  controller-runtime's ``admission.Denied`` sends for a validator's error. The message is a
  Kubernetes ``field.ErrorList`` aggregate in kube's words: one error as ``path: body``
  (``spec.jobMode: Required value: must be specified``), several as ``[e1, e2]`` (duplicates
  dropped). A job that does not even parse (a string where a number
  belongs) is denied the same way, naming the field.
- Allowed: ``allowed: true``, ``status {code: 200}``. Warnings (deprecations) go in
  ``response.warnings`` whether the request is allowed or denied.
- A request this endpoint cannot judge (not JSON, no ``request``, no ``uid``, an unknown
  operation, an object of another kind) → HTTP 400 with ``status {code: 400, reason:
  BadRequest, message}`` naming what is wrong.

The request's ``uid`` is echoed, and so is the review's ``apiVersion`` (v1, or v1beta1 for an
old API server). See docs/design/040-admission-webhook.md.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from trainop.api import manifest, validation
from trainop.api.kinds import KindInfo
from trainop.api.types import API_VERSION
from trainop.errors import FieldError, aggregate

CONFIGURATION_NAME = "validator.training-operator.kubeflow.org"
REVIEW_KIND = "AdmissionReview"
REVIEW_API_VERSIONS = ("admission.k8s.io/v1", "admission.k8s.io/v1beta1")
_ALLOWED_WITHOUT_CHECKS = ("DELETE", "CONNECT")
_OPERATIONS = ("CREATE", "UPDATE", *_ALLOWED_WITHOUT_CHECKS)

Review = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Reply:
    """What to send back: the HTTP status and the ``AdmissionReview`` body."""

    status: int
    body: Review


class _MalformedError(Exception):
    """The review cannot be judged; never leaves this module (it becomes a 400 reply)."""


def path_of(info: KindInfo) -> str:
    """The URL path of the kind's webhook: ``/validate-kubeflow-org-v1-<kind lower>``."""
    return f"/validate-kubeflow-org-v1-{info.singular}"


def webhook_name(info: KindInfo) -> str:
    """The kind's entry in the ValidatingWebhookConfiguration (upstream's naming)."""
    return f"validator.{info.singular}.training-operator.kubeflow.org"


def denial_message(errors: tuple[FieldError, ...]) -> str:
    """The errors as Kubernetes prints an aggregated ``field.ErrorList`` (``errors.aggregate``:
    ``spec.jobMode: Required value: must be specified``)."""
    return aggregate(errors)


def review(info: KindInfo, raw: bytes) -> Reply:
    """Decide the ``AdmissionReview`` in ``raw`` for kind ``info``; see the module docstring."""
    document: object = None
    try:
        document = _decode(raw)
        request = _request(document)
        outcome = _decide(info, request)
    except _MalformedError as exc:
        status = {"code": 400, "reason": "BadRequest", "message": str(exc)}
        return Reply(400, _reply(document, {"allowed": False, "status": status}))
    return Reply(200, _reply(document, _response(outcome)))


MalformedError = _MalformedError  # for Trainer v2's paths (``trainjob_admission``)


def decode_review(raw: bytes) -> tuple[Review, Review]:
    """The ``AdmissionReview`` in ``raw`` and its ``request``; ``MalformedError`` when it
    cannot be judged (for Trainer v2's paths, ``trainjob_admission``)."""
    document = _decode(raw)
    return document, _request(document)


def reply(document: object, response: Review) -> Review:
    """The reply ``AdmissionReview`` to ``document`` carrying ``response``."""
    return _reply(document, response)


def _decode(raw: bytes) -> Review:
    try:
        document = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise _MalformedError(f"the body is not JSON: {exc}") from exc
    if not isinstance(document, dict):
        raise _MalformedError(f"expected an {REVIEW_KIND} object, got {type(document).__name__}")
    if document.get("kind") != REVIEW_KIND or document.get("apiVersion") not in (
        REVIEW_API_VERSIONS
    ):
        versions = " or ".join(REVIEW_API_VERSIONS)
        raise _MalformedError(f"expected kind {REVIEW_KIND} of apiVersion {versions}")
    return document


def _request(document: Review) -> Review:
    request = document.get("request")
    if not isinstance(request, dict):
        raise _MalformedError(f"the {REVIEW_KIND} has no request")
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        raise _MalformedError(
            str(FieldError("request.uid", "Required", "must be a non-empty string"))
        )
    return request


def _decide(info: KindInfo, request: Review) -> validation.Validation:
    operation = request.get("operation")
    if operation not in _OPERATIONS:
        supported = ", ".join(f'"{op}"' for op in _OPERATIONS)
        detail = f"supported values: {supported}"
        error = FieldError("request.operation", "NotSupported", detail, value=operation)
        raise _MalformedError(str(error))
    if operation in _ALLOWED_WITHOUT_CHECKS:
        return validation.Validation()
    _check_request_kind(info, request.get("kind"))
    new = _job_object(info, request, "object")
    if operation == "CREATE":
        return _validate_create(new)
    return _validate_update(_job_object(info, request, "oldObject"), new)


def _check_request_kind(info: KindInfo, kind: object) -> None:
    """``request.kind`` (group, version, kind), when given, must be this endpoint's kind."""
    if not isinstance(kind, dict):
        return
    group, version = API_VERSION.split("/")
    expected = {"group": group, "version": version, "kind": info.kind}
    if {key: kind.get(key) for key in expected} != expected:
        raise _MalformedError(
            f"request.kind: this endpoint validates {API_VERSION} {info.kind}, got {kind}"
        )


def _job_object(info: KindInfo, request: Review, field: str) -> Review:
    obj = request.get(field)
    if not isinstance(obj, dict):
        missing = FieldError(f"request.{field}", "Required", f"the {info.kind} is missing")
        raise _MalformedError(str(missing))
    if obj.get("kind") != info.kind:
        raise _MalformedError(
            f"request.{field}.kind: this endpoint validates {info.kind}, got {obj.get('kind')!r}"
        )
    return obj


def _validate_create(obj: Review) -> validation.Validation:
    return manifest.check_job(obj)


def _validate_update(old_obj: Review, new_obj: Review) -> validation.Validation:
    return manifest.check_job(new_obj, old=old_obj)


def _response(outcome: validation.Validation) -> Review:
    response: Review
    if outcome.ok:
        response = {"allowed": True, "status": {"code": 200}}
    else:
        message = denial_message(outcome.errors)
        status = {"code": 403, "reason": "Forbidden", "message": message}
        response = {"allowed": False, "status": status}
    if outcome.warnings:
        response["warnings"] = list(outcome.warnings)
    return response


def _reply(document: object, response: Review) -> Review:
    """The ``AdmissionReview`` reply: same apiVersion as asked, the request's uid echoed."""
    api_version = REVIEW_API_VERSIONS[0]
    uid = ""
    if isinstance(document, dict):
        if document.get("apiVersion") in REVIEW_API_VERSIONS:
            api_version = document["apiVersion"]
        request = document.get("request")
        if isinstance(request, dict) and isinstance(request.get("uid"), str):
            uid = request["uid"]
    return {"apiVersion": api_version, "kind": REVIEW_KIND, "response": {"uid": uid, **response}}
