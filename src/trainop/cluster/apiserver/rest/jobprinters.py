"""kube-apiserver's printed columns for batch/v1 Jobs (``kubectl get jobs``).

As kube's own Job printer (Kubernetes 1.30+): ``Status`` is the first of ``Complete``,
``Failed``, ``Terminating`` (a deletion timestamp), ``Suspended``, ``FailureTarget`` whose
condition holds, else ``Running``; ``Completions`` is ``<succeeded>/<completions>`` (without
``completions``: ``<succeeded>/1``, or ``<succeeded>/1 of <parallelism>`` when more than one
pod runs at once); ``Duration`` runs from ``startTime`` to ``completionTime`` (or to now while
the Job runs, empty before it starts). ``-o wide`` adds the template's container names and
images and the selector in label-selector syntax. ``tables`` looks this printer up beside
``printers``'.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from trainop.cluster.apiserver.rest.printers import (
    AGE,
    NAME,
    NONE,
    Cells,
    Column,
    RowFunction,
    age,
    human_duration,
    parse_time,
)
from trainop.cluster.apiserver.rest.printers import column as _column


def _holds(conditions: object, kind: str) -> bool:
    found = conditions if isinstance(conditions, list) else []
    return any(
        isinstance(c, dict) and c.get("type") == kind and c.get("status") == "True" for c in found
    )


def job_status(obj: dict[str, Any]) -> str:
    """The ``Status`` cell of one Job."""
    conditions = (obj.get("status") or {}).get("conditions")
    for kind in ("Complete", "Failed"):
        if _holds(conditions, kind):
            return kind
    if (obj.get("metadata") or {}).get("deletionTimestamp"):
        return "Terminating"
    for kind in ("Suspended", "FailureTarget"):
        if _holds(conditions, kind):
            return kind
    return "Running"


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def completions(obj: dict[str, Any]) -> str:
    """The ``Completions`` cell of one Job."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    succeeded = _int(status.get("succeeded")) or 0
    wanted = _int(spec.get("completions"))
    if wanted is not None:
        return f"{succeeded}/{wanted}"
    parallelism = _int(spec.get("parallelism")) or 0
    return f"{succeeded}/1 of {parallelism}" if parallelism > 1 else f"{succeeded}/1"


def duration(obj: dict[str, Any], now: datetime) -> str:
    """The ``Duration`` cell of one Job."""
    status = obj.get("status") or {}
    start = parse_time(status.get("startTime"))
    if start is None:
        return ""
    end = parse_time(status.get("completionTime")) or now
    return human_duration((end - start).total_seconds())


def selector_text(selector: object) -> str:
    """A label selector in kube's selector syntax (``a=b,c in (d,e),!f``), ``<none>`` if empty."""
    given = selector if isinstance(selector, dict) else {}
    terms: list[tuple[str, str]] = []
    labels = given.get("matchLabels")
    for key, value in (labels if isinstance(labels, dict) else {}).items():
        terms.append((str(key), f"{key}={value}"))
    expressions = given.get("matchExpressions")
    for item in expressions if isinstance(expressions, list) else []:
        if not isinstance(item, dict):
            continue
        key, operator = str(item.get("key", "")), item.get("operator")
        values = item.get("values")
        listed = ",".join(sorted(str(v) for v in values)) if isinstance(values, list) else ""
        text = {
            "In": f"{key} in ({listed})",
            "NotIn": f"{key} notin ({listed})",
            "Exists": key,
            "DoesNotExist": f"!{key}",
        }.get(str(operator))
        if text is not None:
            terms.append((key, text))
    return ",".join(text for _, text in sorted(terms)) or NONE


def _job_row(obj: dict[str, Any], now: datetime) -> Cells:
    meta = obj.get("metadata") or {}
    pod_spec = (((obj.get("spec") or {}).get("template") or {}).get("spec")) or {}
    containers = [c for c in pod_spec.get("containers") or [] if isinstance(c, dict)]
    return [
        meta.get("name", ""),
        job_status(obj),
        completions(obj),
        duration(obj, now),
        age(obj, now),
        ",".join(str(c.get("name", "")) for c in containers),
        ",".join(str(c.get("image", "")) for c in containers),
        selector_text((obj.get("spec") or {}).get("selector")),
    ]


JOB_COLUMNS: list[Column] = [
    NAME,
    _column("Status", "Status of the job."),
    _column("Completions", "The number of pods which reached phase Succeeded."),
    _column("Duration", "Time required to complete the job."),
    AGE,
    _column("Containers", "Names of each container in the template.", priority=1),
    _column("Images", "Images referenced by each container in the template.", priority=1),
    _column("Selector", "Query over pods that should match the pod count.", priority=1),
]

BUILTIN: dict[str, tuple[list[Column], RowFunction]] = {"batch/jobs": (JOB_COLUMNS, _job_row)}
