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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


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


@dataclass(frozen=True, slots=True)
class FieldError:
    """One problem with one field, in Kubernetes ``field.Error`` terms.

    ``path`` is the JSON path in Kubernetes notation (map keys in brackets:
    ``spec.pytorchReplicaSpecs[Master].replicas``), ``type`` one of ``Required``, ``Invalid``,
    ``Forbidden``, ``NotSupported``, ``Duplicate``, ``TooLong``; ``detail`` a human sentence.
    """

    path: str
    type: str
    detail: str

    def __str__(self) -> str:
        return f"{self.path}: {self.type}: {self.detail}"


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
