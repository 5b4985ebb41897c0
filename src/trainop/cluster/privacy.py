"""Local state is private to the user who owns it: directories 0700, files 0600.

The state directory holds the store (every Secret), the bearer token, the kubeconfig, the
pods' sandboxes (Secret volume files) and their logs; another local user must read none of it
(docs/design/080-local-trust-model.md). Two layers make sure of that:

- ``private_state_dir`` is called wherever a state directory is created or opened by a
  process that will write into it (``LocalCluster``, which ``trainop local serve`` and
  ``trainop run`` both go through, and ``trainop local up`` before it starts the daemon):
  it sets the process umask to 0o077 and creates the directory 0700 (an existing one owned by
  this user is narrowed to 0700), so whatever is created below is private by default;
- modules that create private files say so explicitly regardless of the umask
  (``private_dirs`` here, ``O_CREAT`` with 0o600 in ``store`` and ``apiserver.auth``, the
  kubelet's sandbox), so the guarantee does not rest on one call having happened first.

Container processes get the umask the user started trainop with (``inherited_umask``), not
0o077: what a user's own program writes is its business. Neighbours: ``cluster``, ``daemon``,
``store``, ``kubelet.sandbox``.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

PRIVATE_UMASK = 0o077
DIR_MODE = 0o700
FILE_MODE = 0o600

_inherited: int | None = None


def restrict_umask() -> None:
    """Set the process umask to 0o077 (idempotent); remember the one it replaced."""
    global _inherited
    previous = os.umask(PRIVATE_UMASK)
    if _inherited is None:
        _inherited = previous


def inherited_umask() -> int:
    """The umask this process had before ``restrict_umask`` (read once, then remembered)."""
    global _inherited
    if _inherited is None:
        _inherited = os.umask(PRIVATE_UMASK)
        os.umask(_inherited)
    return _inherited


def private_dirs(path: Path) -> Path:
    """Create ``path`` and its missing parents with mode 0700 (``mkdir -p -m 700``)."""
    missing: list[Path] = []
    probe = path
    while not os.path.lexists(probe) and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):
            os.mkdir(directory, DIR_MODE)
    return path


def private_state_dir(path: Path) -> Path:
    """Make ``path`` a private state directory (see the module docstring)."""
    restrict_umask()
    private_dirs(path)
    info = path.stat()
    if info.st_uid == os.geteuid() and info.st_mode & 0o777 != DIR_MODE:
        path.chmod(DIR_MODE)
    return path
