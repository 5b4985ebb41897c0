"""Smoke test of ``benchmarks/controller.py``: a small run prints the four figures.

No timing is asserted (the machine is shared); only that the benchmark starts and stops its
processes and reports (a) to (d), and that the counts it can know exactly are what they must be.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.slow
def test_a_small_run_prints_the_four_figures() -> None:
    script = str(ROOT / "benchmarks/controller.py")
    done = subprocess.run(
        [sys.executable, script, "--jobs", "20", "--steady-seconds", "2"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert re.search(r"^\(a\) operator time / bare-client time: \d+\.\d+$", out, re.M), out
    assert re.search(r"^\(b\) writes per job .*= \d+\.\d{3}", out, re.M), out
    assert re.search(r"^\(c\) GET/LIST during .*: 0$", out, re.M), out
    assert re.search(r"^\(d\) operator RSS: \d+ MB", out, re.M), out
