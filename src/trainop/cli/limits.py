"""``--max-replicas-per-job`` and ``--max-pods``: the local cluster's admission ceilings.

One decorator, ``limit_options``, gives a command both flags and hands it one ``limits``
argument (a ``cluster.apiserver.Limits``); ``serve_args`` turns that back into flags for the
``local serve`` process that ``local up`` starts. What the ceilings do: the embedded API
server refuses a job with more replicas (422) and a pod beyond the count (403) before anything
is allocated (``cluster.apiserver.admission.limits``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import click

from trainop.cluster.apiserver import Limits
from trainop.cluster.apiserver.admission.limits import (
    DEFAULT_MAX_PODS,
    DEFAULT_MAX_REPLICAS_PER_JOB,
)


def limit_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add both flags to ``command``, which receives them as ``limits``."""

    @functools.wraps(command)
    def wrapper(*args: Any, max_replicas_per_job: int, max_pods: int, **kwargs: Any) -> Any:
        limits = Limits(max_replicas_per_job=max_replicas_per_job, max_pods=max_pods)
        return command(*args, limits=limits, **kwargs)

    options = [
        click.option(
            "--max-replicas-per-job",
            type=click.IntRange(min=1),
            default=DEFAULT_MAX_REPLICAS_PER_JOB,
            show_default=True,
            help="Refuse jobs with more replicas than this (422), before anything is allocated.",
        ),
        click.option(
            "--max-pods",
            type=click.IntRange(min=1),
            default=DEFAULT_MAX_PODS,
            show_default=True,
            help="Refuse pods beyond this many in the local cluster (403 exceeded quota).",
        ),
    ]
    decorated: Callable[..., Any] = wrapper
    for option in reversed(options):
        decorated = option(decorated)
    return decorated


def serve_args(limits: Limits) -> list[str]:
    """The flags that give a ``local serve`` process the same ``limits``."""
    args: list[str] = []
    if limits.max_replicas_per_job is not None:
        args += ["--max-replicas-per-job", str(limits.max_replicas_per_job)]
    if limits.max_pods is not None:
        args += ["--max-pods", str(limits.max_pods)]
    return args
