"""The pod's ``restartPolicy``, as kubelet applies it to a container that exited (pure).

One rule for both local kubelets (``podrun``'s crash loop and ``sim.podstate``): a container
restarts in place under ``Always`` whatever its exit code, under ``OnFailure`` when it failed,
never under ``Never``; an init container that failed restarts unless the policy is ``Never``
(one that succeeded is done). A pod none of whose containers restarts any more is
``Succeeded`` when every container ended with exit code 0, else ``Failed``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

DEFAULT = "Always"


def of(spec: Mapping[str, Any] | None) -> str:
    """The ``restartPolicy`` of a pod ``spec`` (``Always`` when unset)."""
    return str((spec or {}).get("restartPolicy") or DEFAULT)


def restarts(policy: str, exit_code: int, *, init: bool = False) -> bool:
    """Whether a container that exited with ``exit_code`` runs again under ``policy``."""
    if init:
        return policy != "Never" and exit_code != 0
    return policy == "Always" or (policy == "OnFailure" and exit_code != 0)


def phase_when_done(succeeded: Iterable[bool]) -> str:
    """The terminal phase once no container restarts: whether each ended with exit code 0."""
    return "Succeeded" if all(succeeded) else "Failed"
