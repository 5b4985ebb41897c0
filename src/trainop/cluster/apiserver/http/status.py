"""Kubernetes ``Status`` errors, raised by handlers and rendered once by the server.

Role: every client mistake a handler detects becomes a ``RequestError`` carrying the HTTP code
and the ``reason`` kube-apiserver would send (``NotFound``, ``AlreadyExists``, ``Conflict``,
``Invalid``, ``BadRequest``, ``Expired``, ``Unauthorized``, ``MethodNotAllowed``,
``UnsupportedMediaType``, ``Forbidden``); ``server`` turns it into a ``Status`` body. It is an
``ApiError`` (the same code/reason pair a client maps back) so the error tree stays one tree.

Messages follow kube-apiserver's wording (``pods "x" not found``) because clients and humans
match on them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from trainop.cluster.apiserver.rest import resources
from trainop.errors import ApiError, FieldError, aggregate


class RequestError(ApiError):
    """A request the server refuses; renders as a Kubernetes ``Status`` object."""

    def __init__(
        self,
        message: str,
        *,
        status: int,
        reason: str,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message, status=status, reason=reason)
        self.message = message
        self.details = details

    def body(self) -> dict[str, Any]:
        """The ``Status`` object sent to the client."""
        out: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.status,
        }
        if self.details is not None:
            out["details"] = self.details
        return out


def _details(rt: resources.ResourceType, name: str) -> dict[str, Any]:
    d: dict[str, Any] = {"name": name, "kind": rt.plural}
    if rt.group:
        d["group"] = rt.group
    return d


def _qualified(rt: resources.ResourceType) -> str:
    return f"{rt.plural}.{rt.group}" if rt.group else rt.plural


def not_found(rt: resources.ResourceType, name: str) -> RequestError:
    """404 for a missing object."""
    return RequestError(
        f'{_qualified(rt)} "{name}" not found',
        status=404,
        reason="NotFound",
        details=_details(rt, name),
    )


def namespace_not_found(name: str) -> RequestError:
    """404 for an object whose namespace does not exist."""
    return RequestError(
        f'namespaces "{name}" not found',
        status=404,
        reason="NotFound",
        details={"name": name, "kind": "namespaces"},
    )


def already_exists(rt: resources.ResourceType, name: str) -> RequestError:
    """409 AlreadyExists for a create of an existing name."""
    return RequestError(
        f'{_qualified(rt)} "{name}" already exists',
        status=409,
        reason="AlreadyExists",
        details=_details(rt, name),
    )


def conflict(rt: resources.ResourceType, name: str, why: str) -> RequestError:
    """409 Conflict for a write based on a stale resourceVersion or precondition."""
    return RequestError(
        f'Operation cannot be fulfilled on {_qualified(rt)} "{name}": {why}',
        status=409,
        reason="Conflict",
        details=_details(rt, name),
    )


def invalid(rt: resources.ResourceType, name: str, errors: Sequence[FieldError]) -> RequestError:
    """422 Invalid with one cause per field error, as kube-apiserver words it: the message
    aggregates the errors (``FieldError.__str__``: ``spec.x: Required value``), each cause
    carries the error's body (``Invalid value: -1: must be ...``) and reason."""
    causes = [{"reason": e.reason, "message": e.body(), "field": e.path} for e in errors]
    details = {**_details(rt, name), "kind": rt.kind, "causes": causes}
    return RequestError(
        f'{rt.kind} "{name}" is invalid: {aggregate(errors)}',
        status=422,
        reason="Invalid",
        details=details,
    )


def rejected(
    rt: resources.ResourceType, name: str, causes: Sequence[tuple[str, str, str]]
) -> RequestError:
    """422 Invalid from causes already in kube's words: ``(field, reason, body)`` where
    ``body`` is what kube's ``field.Error`` prints after the path (``Invalid value: 3: must
    be ...``, ``Forbidden: ...``), one ``details.causes`` entry each."""
    listed = ", ".join(f"{path}: {body}" for path, _, body in causes)
    text = listed if len(causes) == 1 else f"[{listed}]"
    entries = [{"reason": why, "message": body, "field": path} for path, why, body in causes]
    return RequestError(
        f'{rt.kind} "{name}" is invalid: {text}',
        status=422,
        reason="Invalid",
        details={**_details(rt, name), "kind": rt.kind, "causes": entries},
    )


def bad_request(message: str) -> RequestError:
    """400 BadRequest: the request itself cannot be understood."""
    return RequestError(message, status=400, reason="BadRequest")


def expired(message: str) -> RequestError:
    """410 Expired (Gone): a resourceVersion or continue token is too old."""
    return RequestError(message, status=410, reason="Expired")


def unauthorized() -> RequestError:
    """401: no or wrong bearer token."""
    return RequestError("Unauthorized", status=401, reason="Unauthorized")


def method_not_allowed(verb: str, rt: resources.ResourceType | None = None) -> RequestError:
    """405 for a verb the resource does not support."""
    what = f" on {rt.plural}" if rt else ""
    return RequestError(
        f"the server does not allow this method on the requested resource ({verb}{what})",
        status=405,
        reason="MethodNotAllowed",
    )


def unsupported_media_type(content_type: str, accepted: Sequence[str]) -> RequestError:
    """415 for a body (usually a patch) in a format this resource does not take."""
    return RequestError(
        f"the body of the request was in an unknown format - accepted media types include: "
        f"{', '.join(accepted)}",
        status=415,
        reason="UnsupportedMediaType",
    )


def path_not_found(path: str) -> RequestError:
    """404 for a URL that names no served resource."""
    return RequestError(
        "the server could not find the requested resource",
        status=404,
        reason="NotFound",
        details={"causes": [{"reason": "UnexpectedServerResponse", "message": f"404 {path}"}]},
    )


def forbidden(message: str) -> RequestError:
    """403, e.g. creating content in a namespace that is being terminated."""
    return RequestError(message, status=403, reason="Forbidden")
