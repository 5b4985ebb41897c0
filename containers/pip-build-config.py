"""This machine's pip configuration, for a ``podman build`` whose ``pip install`` must use it.

Usage: ``python3 pip-build-config.py OUT.conf`` writes one pip configuration file holding what
``pip config list`` reports here (the files' settings and the ``PIP_*`` environment, the
environment winning, as pip itself applies them) and prints one ``-v HOST:HOST:ro`` podman
option per existing absolute path those settings name (the CA bundle, constraint files,
``find-links`` directories, ``file://`` indexes), plus ``-v OUT.conf:/etc/pip.conf:ro``.
Mounted so, pip inside the build reaches the index exactly as it does here (no other
network); nothing of it stays in the image: build-time mounts are not layers. Standard
library only (it runs under the host's ``python3``, before any virtual environment exists).
"""

from __future__ import annotations

import configparser
import os
import re
import subprocess
import sys
from pathlib import Path

_LINE = re.compile(r"^(?P<section>[^.]*)\.(?P<key>[^=]+)=(?P<value>.*)$")


def settings(listing: str) -> dict[tuple[str, str], str]:
    """``(section, key) -> value`` from ``pip config list``; ``:env:`` entries are ``global``."""
    found: dict[tuple[str, str], str] = {}
    env: dict[tuple[str, str], str] = {}
    for line in listing.splitlines():
        match = _LINE.match(line.strip())
        if match is None:
            continue
        value = match["value"].strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        section = match["section"]
        target = env if section == ":env:" else found
        target[("global" if section == ":env:" else section, match["key"])] = value
    return {**found, **env}


def named_paths(values: dict[tuple[str, str], str]) -> list[str]:
    """Every existing absolute path the settings name; for a ``file://`` index, the folder
    above it, since an index's pages link to files beside it (``../../files/...``)."""
    paths: set[str] = set()
    for value in values.values():
        for word in value.split():
            path = word.removeprefix("file://").rstrip("/")
            if word.startswith("file://"):
                path = os.path.dirname(path)
            if path.startswith("/") and os.path.exists(path):
                paths.add(path)
    return sorted(paths)


def write_config(values: dict[tuple[str, str], str], out: Path) -> None:
    parser = configparser.ConfigParser(interpolation=None)
    for (section, key), value in sorted(values.items()):
        if not parser.has_section(section):
            parser.add_section(section)
        parser.set(section, key, value)
    with out.open("w", encoding="utf-8") as handle:
        parser.write(handle)


def main(out: Path) -> int:
    listing = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"],
        capture_output=True,
        text=True,
        check=False,
    )
    values = settings(listing.stdout) if listing.returncode == 0 else {}
    write_config(values, out)
    out.chmod(0o644)
    options = [f"-v {path}:{path}:ro" for path in named_paths(values)]
    options.append(f"-v {out}:/etc/pip.conf:ro")
    sys.stdout.write(" ".join(options) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
