"""No orphans: SIGKILL the process that hosts the kubelet; every container process dies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests import polling
from tests.integration.cluster.kubelet.harness import DEADLINE, is_alive, kill_all, wait_dead

REPO = Path(__file__).resolve().parents[4]


def _wait_for(path: Path, process: subprocess.Popen[bytes]) -> list[int]:
    """The pids written to ``path`` (failing at once if ``process`` ended first)."""

    def written() -> bool:
        assert process.poll() is None, process.stderr.read() if process.stderr else ""
        return path.exists()

    polling.wait_for(written, timeout=DEADLINE, what=f"{path} to appear", interval=0.02)
    return [int(p) for p in path.read_text().split()]


def test_no_process_survives_a_sigkilled_kubelet(tmp_path: Path) -> None:
    host = subprocess.Popen(
        [sys.executable, "-m", "tests.integration.cluster.kubelet.orphan_host", str(tmp_path)],
        cwd=REPO,
        stderr=subprocess.PIPE,
    )
    pids: list[int] = []
    try:
        pids = _wait_for(tmp_path / "pids", host)
        pids += _wait_for(tmp_path / "reaper", host)
        container, grandchild, reaper = pids
        assert all(is_alive(p) for p in pids)
        assert os.getpgid(grandchild) == container, "the grandchild is in the container's group"
        host.send_signal(signal.SIGKILL)
        host.wait(timeout=DEADLINE)
        wait_dead([container, grandchild, reaper])
    finally:
        host.kill()
        host.wait(timeout=DEADLINE)
        kill_all(pids)
