"""The one place where Kubernetes API failures become ``trainop.errors``.

``error_from_status`` maps an HTTP status code and its ``Status`` body to the error tree; every
client implementation calls it and nothing else builds ``ApiError``s from responses.
"""

from __future__ import annotations

from typing import Any

from trainop import errors

_BY_REASON: dict[str, type[errors.ApiError]] = {
    "NotFound": errors.NotFoundError,
    "AlreadyExists": errors.AlreadyExistsError,
    "Conflict": errors.ConflictError,
    "Gone": errors.GoneError,
    "Expired": errors.GoneError,
}
_BY_CODE: dict[int, type[errors.ApiError]] = {
    404: errors.NotFoundError,
    409: errors.ConflictError,
    410: errors.GoneError,
}


def error_from_status(code: int, body: Any, *, what: str) -> errors.ApiError:
    """The error for an HTTP ``code`` with a (possibly non-Status) ``body``; ``what`` names the
    call, e.g. ``"create pods default/p-0"``."""
    reason = body.get("reason", "") if isinstance(body, dict) else ""
    message = body.get("message", "") if isinstance(body, dict) else ""
    cls = _BY_REASON.get(reason) or _BY_CODE.get(code, errors.ApiError)
    text = f"{what}: {message or reason or f'HTTP {code}'}"
    return cls(text, status=code, reason=reason, causes=_causes(body))


def _causes(body: Any) -> list[errors.FieldError]:
    """``details.causes`` of a Status body as field errors (empty when there are none)."""
    details = body.get("details") if isinstance(body, dict) else None
    causes = details.get("causes") if isinstance(details, dict) else None
    return [
        errors.FieldError(
            str(c.get("field", "")), str(c.get("reason", "")), str(c.get("message", ""))
        )
        for c in causes or []
        if isinstance(c, dict)
    ]
