"""Shared by the tests that drive a real ``trainop local`` daemon through the CLI."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest


def trainop(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Runs ``trainop local <args> --state-dir <state>`` to its end."""
    command = [sys.executable, "-m", "trainop.cli.main", "local", *args, "--state-dir", str(state)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture
def state(tmp_path: Path) -> Iterator[Path]:
    """A daemon's state directory; ``trainop local down`` on it afterwards."""
    directory = tmp_path / "local"
    yield directory
    trainop(directory, "down")
