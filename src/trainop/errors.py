"""The one exception tree of trainop.

Every error trainop raises on purpose derives from :class:`TrainopError`. Lower libraries'
exceptions (pydantic, YAML, HTTP clients) are translated at exactly one boundary each and
chained with ``raise ... from exc`` so the cause is never lost::

    TrainopError
    ├── ManifestError          a file or document could not be read as a job (YAML, not a mapping)
    ├── InvalidJobError        a job failed parsing, defaulting or validation; carries FieldErrors
    ├── UnknownKindError       a kind that is not one of trainop's job kinds
    ├── TerminalError          a reconcile failed in a way no retry can fix (not requeued)
    ├── InvalidTemplateError   an operator template (PyTorch init container file) cannot be used
    ├── engine.trainer.plugins.base.PlanError
    │                          a TrainJob and runtime that cannot become objects (event + retry)
    ├── engine.trainer.snapshot.SnapshotError
    │                          a runtime snapshot ConfigMap that cannot be used (§2.3 messages)
    ├── local.ports.PortsExhaustedError
    │                          the local port range cannot address a job now (it waits)
    ├── sdk.errors.SdkError    the SDK's own: InvalidArgumentError (ValueError), JobFailedError
    │                          (RuntimeError), WaitTimeoutError (TimeoutError)
    └── ApiError               a Kubernetes API call failed (mapped once, in ``kube/``)
        ├── NotFoundError          404
        ├── AlreadyExistsError     409 AlreadyExists
        ├── ConflictError          409 Conflict (stale resourceVersion)
        ├── GoneError              410 Gone (watch resourceVersion too old)
        ├── UnreachableError       the server could not be reached at all
        └── cluster.apiserver.http.status.RequestError
                                   a request the embedded API server refuses (rendered as Status)

Module neighbours: ``api.validation`` produces the field errors that ``InvalidJobError`` carries.
A ``FieldError`` renders itself in kube-apiserver's words (``FieldError.body``, ``aggregate``):
the one rendering the CLI, the webhooks' denials and the embedded API server's 422 use.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final


class TrainopError(Exception):
    """Base of every error trainop raises on purpose."""


class ManifestError(TrainopError):
    """A manifest could not be read: bad YAML, not a mapping, unreadable file."""


class UnknownKindError(TrainopError):
    """The object's kind/apiVersion is not one of the kubeflow.org/v1 job kinds."""


class TerminalError(TrainopError):
    """A reconcile failed in a way that retrying cannot fix; the key is not requeued."""


class InvalidTemplateError(TrainopError):
    """An operator-wide template (``--pytorch-init-container-template-file``) cannot be
    rendered into containers."""


class _Omitted:
    """The value of a field error that does not show one (kube's ``field.OmitValueType``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "OMITTED"


OMITTED: Final = _Omitted()

# Each type's phrase in kube's ``field.ErrorType.String()``, and the ``details.causes`` reason
# kube-apiserver sends for it. The reasons are accepted as types too: a cause read back from a
# server's Status (``kube.status``) keeps its reason as the type.
_PHRASES: Final = {
    "NotFound": ("Not found", "FieldValueNotFound"),
    "Required": ("Required value", "FieldValueRequired"),
    "Duplicate": ("Duplicate value", "FieldValueDuplicate"),
    "Invalid": ("Invalid value", "FieldValueInvalid"),
    "NotSupported": ("Unsupported value", "FieldValueNotSupported"),
    "Forbidden": ("Forbidden", "FieldValueForbidden"),
    "TooLong": ("Too long", "FieldValueTooLong"),
    "TooMany": ("Too many", "FieldValueTooMany"),
    "Internal": ("Internal error", "InternalError"),
    "TypeInvalid": ("Invalid value", "FieldValueTypeInvalid"),  # kube's for a wrong JSON type
}
_BY_REASON: Final = {reason: kind for kind, (_, reason) in _PHRASES.items()}
# The types whose body never shows the value, whatever was given (kube's ``ErrorBody``).
_VALUELESS: Final = frozenset({"Required", "Forbidden", "TooLong", "Internal"})


def go_value(value: object) -> str:
    """``value`` as kube's ``field.Error`` prints a bad value: strings quoted (Go's ``%q``),
    numbers and booleans bare, ``null`` for nothing, anything else as compact JSON."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return go_quote(value)
    try:
        return json.dumps(value, separators=(",", ":"), sort_keys=True, default=str)
    except (TypeError, ValueError):
        return go_quote(str(value))


_GO_ESCAPES: Final = {
    '"': '\\"',
    "\\": "\\\\",
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
}


def go_quote(text: str) -> str:
    """``text`` as Go's ``%q`` quotes it: printable characters kept, quotes and backslashes
    escaped, other characters as ``\\n``, ``\\x1e``, ``\\u200b``."""
    out = []
    for ch in text:
        if ch in _GO_ESCAPES:
            out.append(_GO_ESCAPES[ch])
        elif ch.isprintable():
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return '"' + "".join(out) + '"'


@dataclass(frozen=True, slots=True)
class FieldError:
    """One problem with one field, in Kubernetes ``field.Error`` terms.

    ``path`` is the JSON path in Kubernetes notation (map keys in brackets:
    ``spec.pytorchReplicaSpecs[Master].replicas``), ``type`` one of ``Required``, ``Invalid``,
    ``Forbidden``, ``NotSupported``, ``Duplicate``, ``NotFound``, ``TooLong``, ``TooMany``,
    ``Internal`` (or the matching cause reason, ``FieldValueInvalid``...); ``detail`` a human
    sentence; ``value`` the bad value kube prints for the types that show one (``Invalid``,
    ``NotSupported``, ``Duplicate``, ``NotFound``, ``TooMany``), ``OMITTED`` when the detail
    carries it already or there is none to show.

    ``str()`` is kube's ``field.Error.Error()``: ``<path>: <body>`` (see ``body``).
    """

    path: str
    type: str
    detail: str
    value: object = OMITTED

    @property
    def reason(self) -> str:
        """The ``details.causes[].reason`` kube-apiserver sends for this error."""
        kind = _BY_REASON.get(self.type, self.type)
        return _PHRASES[kind][1] if kind in _PHRASES else "FieldValueInvalid"

    def body(self) -> str:
        """The error without its path, as kube's ``ErrorBody`` words it: the type's phrase
        (``Required value``, ``Invalid value``, ``Unsupported value``...), then the value for
        the types that show one, then the detail: ``Invalid value: -1: must be greater than or
        equal to 0``, ``Required value``. A detail that already starts with the phrase (written
        in kube's words where it was found) is the whole body, never doubled."""
        kind = _BY_REASON.get(self.type, self.type)
        phrase = _PHRASES[kind][0] if kind in _PHRASES else self.type
        if self.detail == phrase or self.detail.startswith(phrase + ": "):
            return self.detail
        shown = phrase
        if kind not in _VALUELESS and self.value is not OMITTED:
            shown += f": {go_value(self.value)}"
        return f"{shown}: {self.detail}" if self.detail else shown

    def __str__(self) -> str:
        return f"{self.path}: {self.body()}"


def aggregate(errors: Sequence[FieldError]) -> str:
    """Several field errors as kube prints a ``field.ErrorList``'s aggregate: one error alone,
    several as ``[e1, e2]``, an error listed twice shown once."""
    unique = list(dict.fromkeys(str(error) for error in errors))
    if len(unique) == 1:
        return unique[0]
    return "[" + ", ".join(unique) + "]" if unique else ""


class InvalidJobError(TrainopError):
    """A job failed parsing or validation; ``errors`` lists every problem found, not one."""

    def __init__(self, errors: Sequence[FieldError], *, source: str | None = None) -> None:
        self.errors: tuple[FieldError, ...] = tuple(errors)
        self.source = source
        prefix = f"{source}: " if source else ""
        super().__init__(prefix + "; ".join(str(e) for e in self.errors))


class ApiError(TrainopError):
    """A Kubernetes API call failed. ``status`` is the HTTP code, ``reason`` the Status reason,
    ``causes`` the field problems the server listed (``details.causes`` of a 422 Invalid)."""

    def __init__(
        self,
        message: str,
        *,
        status: int = 0,
        reason: str = "",
        causes: Sequence[FieldError] = (),
    ) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.causes: tuple[FieldError, ...] = tuple(causes)


class NotFoundError(ApiError):
    """The object does not exist (404 NotFound)."""


class AlreadyExistsError(ApiError):
    """An object with that name already exists (409 AlreadyExists)."""


class ConflictError(ApiError):
    """The write was based on a stale resourceVersion (409 Conflict)."""


class GoneError(ApiError):
    """The requested resourceVersion is too old for a watch (410 Gone)."""


class BrokenStreamError(ApiError):
    """A watch stream carried a line that is not a watch event (bad JSON, no type or object):
    events may have been lost, so a watcher lists afresh rather than trusting its position."""


class UnreachableError(ApiError):
    """The API server could not be reached (connection refused, DNS, TLS)."""


def json_type(value: object) -> str:
    """The JSON type of a decoded value, as kube names it in schema errors (``null``,
    ``boolean``, ``integer``, ``number``, ``string``, ``array``, ``object``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"
