"""Ctrl-C in the second the ``trainop`` command spends loading its modules: exit 130 with one
line, not a KeyboardInterrupt traceback (issue 10 §6: start-up interruptions)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from tests.polling import wait_for

ROOT = Path(__file__).resolve().parents[3]


def catches(pid: int, sig: int) -> bool:
    """Whether the process has a handler for ``sig`` (``SigCgt`` in /proc/<pid>/status)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (sig - 1) & 1)
    return False


def test_ctrl_c_while_the_command_loads_exits_130_without_a_traceback() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "trainop.cli.main", "run", "examples/pytorch/ddp.yaml"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # Python catches SIGINT from its own start; SIGTERM only once trainop's first handler is
    # in, which is the first thing the command module does, before its imports.

    def handled() -> bool:
        assert process.poll() is None, process.communicate()
        return catches(process.pid, signal.SIGTERM)

    wait_for(handled, timeout=30, what="a SIGTERM handler installed", interval=0.001)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, (out, err)
    assert "Traceback" not in err
    assert err == "trainop: interrupted while starting\n"
