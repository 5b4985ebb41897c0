"""What every job command shares: cluster options, the SDK client, and one-line errors.

``--kubeconfig``, ``--context`` and ``-n/--namespace`` pick the cluster; with none given the
kubeconfig is ``$KUBECONFIG``, else the ``trainop local up`` cluster's when it runs, else
``~/.kube/config`` (``trainop.sdk.config``). ``cluster_command`` turns every ``TrainopError`` into
one line on stderr and a non-zero exit code (1; 124 for a timeout), never a traceback.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

import click

from trainop import errors
from trainop.api.kinds import KindInfo, kind_info
from trainop.sdk import TrainingClient, WaitTimeoutError

F = TypeVar("F", bound=Callable[..., Any])
EXIT_TIMEOUT = 124


def cluster_command(command: F) -> F:
    """Add the cluster options; pass a ``TrainingClient`` as ``client``; map errors to exits."""

    @click.option("--kubeconfig", default=None, help="Kubeconfig file (default: see trainop docs).")
    @click.option("--context", default=None, help="Kubeconfig context (default: the current one).")
    @click.option("-n", "--namespace", default=None, help="Namespace (default: the context's).")
    @functools.wraps(command)
    def wrapper(kubeconfig: str | None, context: str | None, **kwargs: Any) -> Any:
        try:
            with TrainingClient(config_file=kubeconfig, context=context) as client:
                kwargs["namespace"] = kwargs.get("namespace") or client.namespace
                return command(client=client, **kwargs)
        except WaitTimeoutError as exc:
            click.echo(f"Error: {exc}", err=True)
            raise SystemExit(EXIT_TIMEOUT) from exc
        except errors.TrainopError as exc:
            raise click.ClickException(one_line(exc)) from exc

    return wrapper  # type: ignore[return-value]


def one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def kind_of(kind: str) -> KindInfo:
    """The kind named on the command line (``pytorchjob``, ``pytorchjobs``, ``PyTorchJob``)."""
    try:
        return kind_info(kind)
    except errors.UnknownKindError as exc:
        raise click.ClickException(str(exc)) from exc


def age(timestamp: str | None, *, now: datetime | None = None) -> str:
    """``5s``, ``3m``, ``2h``, ``4d`` since an RFC 3339 timestamp (``?`` if there is none)."""
    if not timestamp:
        return "?"
    then = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    seconds = int(((now or datetime.now(UTC)) - then).total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{max(seconds, 0)}s"
