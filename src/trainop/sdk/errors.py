"""The SDK's branch of the error tree (``trainop.errors``).

Each class also derives from the builtin exception upstream ``kubeflow-training`` raises in
the same situation, so a script written for upstream that catches ``ValueError``,
``RuntimeError`` or ``TimeoutError`` keeps working::

    TrainopError
    └── SdkError
        ├── InvalidArgumentError (ValueError)     an argument the method cannot accept
        ├── JobFailedError       (RuntimeError)   the job Failed while waiting for other conditions
        └── WaitTimeoutError     (TimeoutError)   a wait or an API call ran past its timeout

API failures are not translated again here: they arrive as ``trainop.errors.ApiError``
subclasses (``NotFoundError``, ``UnreachableError`` ...), mapped once in ``trainop.kube``.
"""

from __future__ import annotations

from typing import Any

from trainop.errors import TrainopError


class SdkError(TrainopError):
    """Base of the errors the SDK raises itself."""


class InvalidArgumentError(SdkError, ValueError):
    """A method argument is missing, conflicting or out of range."""


class JobFailedError(SdkError, RuntimeError):
    """The job reached ``Failed`` while the caller waited for other conditions."""

    def __init__(self, message: str, *, job: Any = None) -> None:
        super().__init__(message)
        self.job = job


class WaitTimeoutError(SdkError, TimeoutError):
    """The job did not reach an expected condition (or an API call did not answer) in time."""
