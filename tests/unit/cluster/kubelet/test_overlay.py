"""A pod's pip install lands in its own overlay, never in trainop's environment."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

from trainop.cluster.kubelet import overlay


def _wheel(directory: Path, version: str) -> Path:
    """A minimal pure-Python wheel of the distribution ``probe``."""
    path = directory / f"probe-{version}-py3-none-any.whl"
    info = f"probe-{version}.dist-info"
    files = {
        "probe.py": f"VERSION = {version!r}\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: probe\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    with zipfile.ZipFile(path, "w") as wheel:
        for name, text in files.items():
            wheel.writestr(name, text)
        wheel.writestr(f"{info}/RECORD", "".join(f"{n},,\n" for n in [*files, f"{info}/RECORD"]))
    return path


def _installed_host(site: Path, version: str) -> None:
    """``probe`` ``version`` installed in a host site directory, as pip would leave it."""
    info = site / f"probe-{version}.dist-info"
    info.mkdir(parents=True)
    (site / "probe.py").write_text(f"VERSION = {version!r}\n")
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: probe\nVersion: {version}\n")
    (info / "RECORD").write_text("probe.py,,\n")
    (info / "INSTALLER").write_text("pip\n")


def test_pip_by_any_interpreter_installs_into_the_overlay_and_leaves_the_host_alone(
    tmp_path: Path,
) -> None:
    host = tmp_path / "host-site"
    _installed_host(host, "1.0")
    made = overlay.prepare(tmp_path / "sandbox", site_dirs=[str(host), *overlay.host_site_dirs()])
    env = {**os.environ, **made.environment(dict(os.environ))}
    env.pop("PIP_CONFIG_FILE", None)

    def run(*argv: str) -> str:
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout.strip()

    # The host has probe 1.0; the overlay's python sees it as installed.
    assert run("python", "-c", "import probe; print(probe.VERSION)") == "1.0"
    # trainop's own interpreter, by absolute path (as the SDK's local command runs pip):
    run(
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--no-index",
        str(_wheel(tmp_path, "2.0")),
    )
    assert (host / "probe-1.0.dist-info").is_dir(), "the host's copy was not uninstalled"
    assert (host / "probe.py").read_text() == "VERSION = '1.0'\n"
    assert (made.site_packages / "probe-2.0.dist-info").is_dir()
    assert run("python", "-c", "import probe; print(probe.VERSION)") == "2.0"
    assert run(sys.executable, "-c", "import probe; print(probe.VERSION)") == "2.0"
    assert run("pip", "--version").endswith(
        f"(python {sys.version_info.major}.{sys.version_info.minor})"
    )
    # Nothing reached trainop's own environment.
    for site in overlay.host_site_dirs():
        assert not (Path(site) / "probe.py").exists()
    # Packages trainop has stay importable in the overlay (editable installs included).
    assert run("python", "-c", "import trainop, pip; print('ok')") == "ok"


def test_preparing_twice_keeps_the_overlay(tmp_path: Path) -> None:
    first = overlay.prepare(tmp_path)
    marker = first.site_packages / "installed-by-the-pod.txt"
    marker.write_text("x")
    assert overlay.prepare(tmp_path) == first
    assert marker.exists()
