"""Small jobs of every kind whose replicas print who they are, for the SDK and CLI tests."""

from __future__ import annotations

import sys
from typing import Any

from trainop.api.kinds import KINDS, kind_info
from trainop.sdk import Container, build_job

# A replica layout per kind that the kind accepts.
LAYOUTS: dict[str, dict[str, int]] = {
    "TFJob": {"Chief": 1, "Worker": 1},
    "PyTorchJob": {"Master": 1, "Worker": 1},
    "XGBoostJob": {"Master": 1, "Worker": 1},
    "MPIJob": {"Launcher": 1, "Worker": 1},
    "PaddleJob": {"Worker": 2},
    "JAXJob": {"Worker": 2},
    "MXJob": {"Scheduler": 1, "Server": 1, "Worker": 1},
    # Partitioner (derived, the launcher's command), then the worker, then the launcher.
    "DGLJob": {"Launcher": 1, "Worker": 1},
}
ALL_KINDS = [info.kind for info in KINDS]
HELLO = "import os; print('hello from', os.environ.get('HOSTNAME', '?'), flush=True)"


def printing_job(kind: str, name: str, *, code: str = HELLO, **spec: Any) -> dict[str, Any]:
    """A job of ``kind`` whose every replica runs ``python -c code`` on this host."""
    return build_job(
        info=kind_info(kind),
        name=name,
        replicas=LAYOUTS[kind],
        container=Container(image="python:3.11", command=[sys.executable, "-c", code]),
        spec_fields=spec or None,
    )
