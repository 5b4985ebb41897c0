"""A writable Python overlay per pod: ``pip install`` in a container never changes trainop's venv.

Containers run on the Python environment trainop runs on (note 060), so a job's
``pip install`` (the SDK's ``packages_to_install``, or any command that installs) would write
into trainop's own environment. Each pod instead gets a virtual environment of its own in its
sandbox, ``<sandbox>/pyenv``, created without pip and with one ``.pth`` that adds trainop's
site directories (processing their own ``.pth`` files, so editable installs resolve) after
its own. In every container of the pod:

- ``PATH`` starts with the overlay's ``bin``: ``python``, ``python3`` and ``pip``/``pip3``
  (small launchers) are the overlay's, so an install goes into the overlay, packages trainop
  already has count as installed (nothing is downloaded twice), and an upgrade installs the
  new version in the overlay without uninstalling trainop's ("outside environment");
- ``PIP_PYTHON`` names the overlay's interpreter, so ``pip`` run by any interpreter (trainop's
  own, by absolute path, as the SDK's local command does) re-runs itself there;
- ``PYTHONPATH`` starts with the overlay's site-packages, so interpreters that are not the
  overlay's (console scripts such as ``torchrun`` and the processes they spawn) import what
  the pod installed first.

A container's own ``env`` still wins. The overlay is part of the sandbox and is removed with it.
Neighbours: ``podrun`` (prepares it before the containers' launches), ``sandbox``.
"""

from __future__ import annotations

import os
import sys
import sysconfig
import venv
from dataclasses import dataclass
from pathlib import Path

_DIR = "pyenv"
_PTH = "trainop-host.pth"
_PIP = "import sys\nfrom pip._internal.cli.main import main\nsys.exit(main())\n"


@dataclass(frozen=True, slots=True)
class Overlay:
    """A pod's overlay environment."""

    root: Path

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    @property
    def python(self) -> Path:
        return self.bin / "python"

    @property
    def site_packages(self) -> Path:
        version = f"python{sys.version_info.major}.{sys.version_info.minor}"
        return self.root / "lib" / version / "site-packages"

    def environment(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """The variables that put the overlay first, given the base environment."""
        base = base or {}
        path = [str(self.bin), *(p for p in base.get("PATH", "").split(os.pathsep) if p)]
        python_path = [str(self.site_packages)]
        python_path += [p for p in base.get("PYTHONPATH", "").split(os.pathsep) if p]
        return {
            "PATH": os.pathsep.join(path),
            "PYTHONPATH": os.pathsep.join(python_path),
            "PIP_PYTHON": str(self.python),
        }


def host_site_dirs() -> list[str]:
    """The site directories of the interpreter trainop runs on, in ``sys.path`` order."""
    paths = sysconfig.get_paths()
    found = [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]
    found += [paths["purelib"], paths["platlib"]]
    return [p for p in dict.fromkeys(found) if os.path.isdir(p)]


def prepare(sandbox: Path, *, site_dirs: list[str] | None = None) -> Overlay:
    """Create the pod's overlay in ``sandbox`` (kept when it is there already)."""
    overlay = Overlay(sandbox / _DIR)
    if (overlay.root / "pyvenv.cfg").exists() and (overlay.site_packages / _PTH).exists():
        return overlay
    _Builder(symlinks=True, with_pip=False, clear=True).create(overlay.root)
    overlay.site_packages.mkdir(parents=True, exist_ok=True)
    lines = [f"import site; site.addsitedir({d!r})" for d in (site_dirs or host_site_dirs())]
    (overlay.site_packages / _PTH).write_text("\n".join(lines) + "\n")
    for name in ("pip", "pip3"):
        launcher = overlay.bin / name
        launcher.write_text(f"#!{overlay.python}\n{_PIP}")
    _private(overlay.root)
    for name in ("pip", "pip3"):
        (overlay.bin / name).chmod(0o700)
    return overlay


class _Builder(venv.EnvBuilder):
    """A venv without activation scripts (nothing sources them; they would be world-readable)."""

    def setup_scripts(self, context: object) -> None:
        return


def _private(root: Path) -> None:
    """Directories 0700, files 0600, like the rest of the sandbox (note 080)."""
    root.chmod(0o700)
    for directory, dirs, files in os.walk(root):
        for name in dirs:
            path = Path(directory) / name
            if not path.is_symlink():
                path.chmod(0o700)
        for name in files:
            path = Path(directory) / name
            if not path.is_symlink():
                path.chmod(0o600)
