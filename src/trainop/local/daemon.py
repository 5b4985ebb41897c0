"""A persistent local cluster in the background: ``trainop local up | down | status``.

``up`` starts ``trainop local serve`` as a detached process (its own session, output to
``STATE_DIR/trainop.log``) and waits until it writes ``STATE_DIR/ready``; ``down`` sends it
SIGTERM and waits until it has stopped its pods and exited; ``status`` reports whether it runs.
The state — the API server's SQLite store, the kubeconfig, the pods' sandboxes — stays in
``STATE_DIR`` across ``down``/``up``, so finished jobs are still listed after a restart.

Files in ``STATE_DIR``: ``trainop.pid`` (the serving process), ``ready`` (written once the
controller's caches have synced; removed on stop), ``kubeconfig``, ``trainop.log``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from trainop.errors import TrainopError
from trainop.local import privacy

PID_FILE, READY_FILE, LOG_FILE = "trainop.pid", "ready", "trainop.log"


def default_state_dir() -> Path:
    """``$TRAINOP_HOME``, else ``$XDG_DATA_HOME/trainop/local``, else ``~/.local/share/...``."""
    if home := os.environ.get("TRAINOP_HOME"):
        return Path(home)
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "trainop" / "local"


@dataclass(frozen=True, slots=True)
class Status:
    running: bool
    pid: int | None
    state_dir: Path

    @property
    def kubeconfig(self) -> Path:
        return self.state_dir / "kubeconfig"


def status(state_dir: Path) -> Status:
    pid = _read_pid(state_dir)
    running = pid is not None and _alive(pid)
    return Status(running=running, pid=pid if running else None, state_dir=state_dir)


def up(
    state_dir: Path, *, port: int = 0, timeout: float = 60.0, serve_args: Sequence[str] = ()
) -> Status:
    """Start the background cluster (a no-op when it already runs); ``serve_args`` are more
    ``trainop local serve`` options (working directory, node resources, gang scheduler)."""
    current = status(state_dir)
    if current.running:
        return current
    privacy.private_state_dir(state_dir)  # umask 077: daemon.log and the pid file too
    (state_dir / READY_FILE).unlink(missing_ok=True)
    command = [
        sys.executable,
        "-m",
        "trainop.cli.main",
        "local",
        "serve",
        "--state-dir",
        str(state_dir),
        "--port",
        str(port),
        *serve_args,
    ]
    with (state_dir / LOG_FILE).open("ab") as log:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=state_dir,
        )
    (state_dir / PID_FILE).write_text(str(process.pid))
    deadline = time.monotonic() + timeout
    while not (state_dir / READY_FILE).exists():
        if process.poll() is not None:
            raise TrainopError(f"the local cluster exited at start; see {state_dir / LOG_FILE}")
        if time.monotonic() > deadline:
            process.terminate()
            raise TrainopError(f"the local cluster was not ready in {timeout:.0f}s")
        time.sleep(0.05)
    return status(state_dir)


def down(state_dir: Path, *, timeout: float = 60.0) -> bool:
    """Stop the background cluster; False when none was running."""
    current = status(state_dir)
    if not current.running or current.pid is None:
        (state_dir / PID_FILE).unlink(missing_ok=True)
        return False
    os.kill(current.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while _alive(current.pid):
        if time.monotonic() > deadline:
            os.kill(current.pid, signal.SIGKILL)
            break
        time.sleep(0.05)
    (state_dir / PID_FILE).unlink(missing_ok=True)
    (state_dir / READY_FILE).unlink(missing_ok=True)
    return True


def mark_ready(state_dir: Path) -> None:
    (state_dir / READY_FILE).write_text(str(os.getpid()))


def clear_ready(state_dir: Path) -> None:
    (state_dir / READY_FILE).unlink(missing_ok=True)


def _read_pid(state_dir: Path) -> int | None:
    with contextlib.suppress(OSError, ValueError):
        return int((state_dir / PID_FILE).read_text().strip())
    return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie (exited, not yet reaped by its parent) is not running.
    with contextlib.suppress(OSError):
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return fields[0] != "Z"
    return True
