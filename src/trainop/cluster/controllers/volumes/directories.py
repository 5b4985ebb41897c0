"""The claim directories: one per provisioned volume, under the session's private state.

``<state>/volumes/<volume>/`` holds the data of the volume ``<volume>`` (``pvc-<claim uid>``).
Names are untrusted even though the API server checks them: ``path_for`` accepts only one
lower-case DNS label of at most 63 characters (so never ``.``, ``..``, ``/`` or a NUL), and
every directory made or removed is checked again where it is used: ``create`` makes it 0700
(``cluster.privacy``) below a root that is itself private, refusing a name that exists as
anything but a directory of its own (a planted symlink is never followed); ``remove`` deletes
only a real directory (not a symlink) whose parent is the root, and only for a volume whose
``hostPath`` is exactly that directory, so a volume made by hand (any ``hostPath``, the
deliberate door out of note 080) is never touched. The state directory goes with an ephemeral
session (``trainop run``), and the claim directories with it.
Neighbours: ``provisioner`` (calls these), ``binding`` (names the volumes).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from trainop import errors
from trainop.cluster import privacy

_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


class DirectoryError(errors.TrainopError):
    """A volume's directory cannot be made or removed safely."""


def path_for(root: Path, volume: str) -> Path:
    """The directory of ``volume`` below ``root``; ``DirectoryError`` for a name that is not
    one DNS label (at most 63 characters of ``a-z``, ``0-9``, ``-``)."""
    if not _LABEL.match(volume):
        raise DirectoryError(f"volume name {volume!r} is not a DNS label: no directory for it")
    return root / volume


def create(root: Path, volume: str) -> Path:
    """Make (or find, made earlier) ``volume``'s directory, 0700, below the private ``root``."""
    path = path_for(root, volume)
    privacy.private_dirs(root)
    try:
        os.mkdir(path, privacy.DIR_MODE)
    except FileExistsError:
        if path.is_symlink() or not path.is_dir():
            raise DirectoryError(f"{path} exists and is not a directory") from None
    real_root = Path(os.path.realpath(root))
    if Path(os.path.realpath(path)).parent != real_root:
        raise DirectoryError(f"{path} does not resolve below {real_root}")
    return path


def owns(root: Path, volume: str, host_path: object) -> bool:
    """Whether ``host_path`` is exactly the directory this provisioner made for ``volume``."""
    try:
        return str(host_path) == str(path_for(root, volume))
    except DirectoryError:
        return False


def remove(root: Path, volume: str) -> bool:
    """Delete ``volume``'s directory and everything in it (links inside are unlinked, never
    followed); False when there was none. A symlink in its place is refused."""
    path = path_for(root, volume)
    if path.is_symlink():
        raise DirectoryError(f"{path} is a symlink: not removed")
    if not path.exists():
        return False
    if Path(os.path.realpath(path)).parent != Path(os.path.realpath(root)):
        raise DirectoryError(f"{path} does not resolve below {root}: not removed")
    _writable(path)
    shutil.rmtree(path)
    return True


def _writable(path: Path) -> None:
    """Let the owner delete below ``path``: a pod may have made a directory read-only."""
    for directory, subdirs, _ in os.walk(path):
        for name in [directory, *(os.path.join(directory, s) for s in subdirs)]:
            if not os.path.islink(name):
                os.chmod(name, 0o700)
