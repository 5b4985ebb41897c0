"""The simulation rules of one pod: kubelet defaults, overridden by pod annotations.

Every annotation is prefixed ``sim.trainop.dev/`` and overrides one field of the kubelet's
``defaults`` (a ``Rules``), so a benchmark can run pods with no annotations at all:

==========================  =========  ===================================================
annotation                  field      meaning
==========================  =========  ===================================================
``pending-seconds``         float ≥ 0  time from first sight to the containers' start
``run-seconds``             float ≥ 0  time a container runs before it exits
``exit-code``               0-255      the exit code of a failing run (every run, unless
                                       ``fail-times`` is set)
``fail-times``              int ≥ 0    only the first N runs end with ``exit-code`` (1 when
                                       ``exit-code`` is 0); later runs exit 0
``oom-killed``              bool       failing runs end ``OOMKilled`` with 137 (the default
                                       ``exit-code`` becomes 137)
``restart-delay-seconds``   float ≥ 0  back-off between an exit and the in-place restart
==========================  =========  ===================================================

Pure: ``rules_for`` takes annotations and defaults and returns ``Rules`` or an
``InvalidRule`` naming the annotation, which the kubelet reports on the pod.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

PREFIX = "sim.trainop.dev/"
OOM_EXIT_CODE = 137
# A restarting container spends at least this long per cycle, so ``restartPolicy: Always``
# with zero run time and zero back-off cannot spin the event loop.
MIN_RESTART_CYCLE = 1.0


@dataclass(frozen=True, slots=True)
class Rules:
    """How a pod's containers behave; see the module docstring for each field."""

    pending_seconds: float = 0.0
    run_seconds: float = 0.0
    exit_code: int = 0
    fail_times: int | None = None
    oom_killed: bool = False
    restart_delay_seconds: float = 10.0

    def exit_code_of(self, run: int) -> int:
        """The exit code of the ``run``-th run (0-based)."""
        if self.fail_times is None:
            return self.exit_code
        return (self.exit_code or 1) if run < self.fail_times else 0

    def reason_for(self, exit_code: int) -> str:
        """``containerStatuses[].state.terminated.reason`` for ``exit_code``."""
        if exit_code == 0:
            return "Completed"
        return "OOMKilled" if self.oom_killed and exit_code == OOM_EXIT_CODE else "Error"

    def restart_delay(self) -> float:
        """The back-off before an in-place restart, never letting a cycle take zero time."""
        return max(self.restart_delay_seconds, MIN_RESTART_CYCLE - self.run_seconds)


@dataclass(frozen=True, slots=True)
class InvalidRule:
    """An annotation whose value cannot be used; ``message`` names it."""

    message: str


def _seconds(text: str) -> float:
    value = float(text)
    if not math.isfinite(value) or value < 0:
        raise ValueError("must be a non-negative number of seconds")
    return value


def _exit_code(text: str) -> int:
    value = int(text)
    if not 0 <= value <= 255:
        raise ValueError("must be an integer from 0 to 255")
    return value


def _count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise ValueError("must be a non-negative integer")
    return value


def _boolean(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise ValueError('must be "true" or "false"')
    return lowered == "true"


_PARSERS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "pending-seconds": ("pending_seconds", _seconds),
    "run-seconds": ("run_seconds", _seconds),
    "exit-code": ("exit_code", _exit_code),
    "fail-times": ("fail_times", _count),
    "oom-killed": ("oom_killed", _boolean),
    "restart-delay-seconds": ("restart_delay_seconds", _seconds),
}


def rules_for(annotations: Mapping[str, str], defaults: Rules) -> Rules | InvalidRule:
    """``defaults`` with every ``sim.trainop.dev/`` annotation applied."""
    unknown = sorted(
        k for k in annotations if k.startswith(PREFIX) and k[len(PREFIX) :] not in _PARSERS
    )
    if unknown:
        return InvalidRule(f"unknown annotation {unknown[0]}: known are {', '.join(_PARSERS)}")
    changes: dict[str, Any] = {}
    for suffix, (field, parse) in _PARSERS.items():
        text = annotations.get(PREFIX + suffix)
        if text is None:
            continue
        try:
            changes[field] = parse(str(text))
        except ValueError as exc:
            return InvalidRule(f"annotation {PREFIX}{suffix}={text!r}: {_plain(exc)}")
    if changes.get("oom_killed") and "exit_code" not in changes:
        changes["exit_code"] = OOM_EXIT_CODE
    return dataclasses.replace(defaults, **changes)


def _plain(exc: ValueError) -> str:
    text = str(exc)
    return text if text.startswith("must") else "not a valid number"
