"""A persistent local cluster in the background: ``trainop local up | down | status``.

``up`` starts ``trainop local serve`` as a detached process (its own session, output to
``STATE_DIR/trainop.log``) and waits until it writes ``STATE_DIR/ready``; ``down`` sends it
SIGTERM and waits until it has stopped its pods and exited; ``status`` reports whether it runs.
The daemon's host containers outlive a crash of it under their supervisors (note 120): the
next ``up`` re-attaches to them, and a ``down`` that finds no daemon stops them.
The state — the API server's SQLite store, the kubeconfig, the pods' sandboxes — stays in
``STATE_DIR`` across ``down``/``up``, so finished jobs are still listed after a restart.

Files in ``STATE_DIR``: ``trainop.pid`` (the serving process's pid, and its lock), ``ready``
(written once the controller's caches have synced, or once the cluster serves with
``--no-operator``; removed on stop), ``kubeconfig``, ``trainop.log``.

The pid rule (note 070): the serving process holds an exclusive ``flock`` on ``trainop.pid``
for its whole life and writes its pid into it only after taking the lock. A pid is believed
only while that lock is held — and, where ``/proc/locks`` tells, held by that very pid — so a
stale file left by a crashed daemon never gets an unrelated process signalled. Two daemons on
one state directory cannot run: the second fails to take the lock.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from trainop.cluster import privacy
from trainop.cluster.kubelet.runtimes import containercli, containers, options, supervised
from trainop.errors import TrainopError

PID_FILE, READY_FILE, LOG_FILE = "trainop.pid", "ready", "trainop.log"
PODS_DIR = "pods"  # the kubelet's root (``session.machine_cluster``)
MIN_FREE_BYTES = 16 * 1024 * 1024  # the store, the kubeconfig and the first logs


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
    """Whether a daemon serves ``state_dir``: its lock is held and the pid file names it."""
    pid = verified_pid(state_dir)
    return Status(running=pid is not None, pid=pid, state_dir=state_dir)


def hold_lock(state_dir: Path) -> int:
    """Take the daemon lock for this process and record its pid (the fd must stay open).

    Raises ``TrainopError`` when another process holds it.
    """
    fd = os.open(state_dir / PID_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, privacy.FILE_MODE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        holder = verified_pid(state_dir)
        raise TrainopError(
            f"a local cluster already runs on {state_dir} (pid {holder or 'starting'})"
        ) from None
    os.ftruncate(fd, 0)
    os.write(fd, str(os.getpid()).encode())
    return fd


def verified_pid(state_dir: Path) -> int | None:
    """The daemon's pid when its lock is held by that pid; None otherwise (never a guess)."""
    try:
        fd = os.open(state_dir / PID_FILE, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _read_pid(fd)
            holders = _lock_holders(fd)
            if pid is None or (holders is not None and pid not in holders):
                return None
            return pid if is_running(pid) else None
        return None  # nobody holds the lock: whatever the file says is stale
    finally:
        os.close(fd)  # closing also drops a shared lock taken above


def up(
    state_dir: Path, *, port: int = 0, timeout: float = 60.0, serve_args: Sequence[str] = ()
) -> Status:
    """Start the background cluster (a no-op when it already runs); ``serve_args`` are more
    ``trainop local serve`` options (working directory, node resources, gang scheduler,
    ``--no-operator``).

    Raises ``TrainopError`` with one line of reason (no space, exited at start, not ready in
    time). When interrupted (KeyboardInterrupt, or any exception) while waiting, the started
    process is stopped before the exception propagates.
    """
    current = status(state_dir)
    if current.running:
        return current
    try:
        privacy.private_state_dir(state_dir)  # umask 077: daemon.log and the pid file too
        _check_space(state_dir)
        (state_dir / READY_FILE).unlink(missing_ok=True)
        process = _spawn(state_dir, port, serve_args)
    except OSError as exc:
        raise TrainopError(_os_reason(state_dir, exc)) from exc
    try:
        _until_ready(state_dir, process, timeout)
    except BaseException:
        _stop_child(process)
        raise
    return status(state_dir)


def down(state_dir: Path, *, timeout: float = 60.0) -> bool:
    """Stop the background cluster; False when none was running (nothing is signalled)."""
    pid = verified_pid(state_dir)
    if pid is None:
        _reap(state_dir)  # containers a crashed daemon left running (note 120)
        return False
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while verified_pid(state_dir) == pid:
        if time.monotonic() > deadline:
            if verified_pid(state_dir) == pid:
                os.kill(pid, signal.SIGKILL)
            break
        time.sleep(0.05)
    (state_dir / READY_FILE).unlink(missing_ok=True)
    if verified_pid(state_dir) is None:
        _reap(state_dir)  # what a daemon killed after the timeout could not stop
    return True


def _reap(state_dir: Path) -> None:
    """Stop the containers no daemon follows any more (note 120): supervised host processes,
    and the Podman or Docker containers of this state directory."""
    with contextlib.suppress(OSError):
        supervised.reap_all(state_dir / PODS_DIR)
    for kind, cli in containercli.CLIS.items():
        if (state_dir / kind).is_dir() and shutil.which(kind):
            runtime = containers.ContainerRuntime(cli(state_dir / kind), session="")
            with contextlib.suppress(OSError):
                asyncio.run(runtime.reap(by=options.STATE_LABEL, value=str(state_dir / kind)))


def mark_ready(state_dir: Path) -> None:
    (state_dir / READY_FILE).write_text(str(os.getpid()))


def clear_ready(state_dir: Path) -> None:
    (state_dir / READY_FILE).unlink(missing_ok=True)


def _spawn(state_dir: Path, port: int, serve_args: Sequence[str]) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "trainop.cli.main", "local", "serve"]
    command += ["--state-dir", str(state_dir), "--port", str(port), *serve_args]
    if "--workdir" not in serve_args:  # pods start where ``up`` was called, as in trainop run
        command += ["--workdir", str(Path.cwd())]
    with (state_dir / LOG_FILE).open("ab") as log:
        return subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=state_dir,
        )


def _until_ready(state_dir: Path, process: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not (state_dir / READY_FILE).exists():
        if process.poll() is not None:
            raise TrainopError(_exit_reason(state_dir))
        if time.monotonic() > deadline:
            raise TrainopError(f"the local cluster was not ready in {timeout:.0f}s")
        time.sleep(0.05)


def _stop_child(process: subprocess.Popen[bytes]) -> None:
    """Stop a daemon that never became ready: SIGTERM its session, then SIGKILL."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def _check_space(state_dir: Path) -> None:
    free = shutil.disk_usage(state_dir).free
    if free < MIN_FREE_BYTES:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _os_reason(state_dir: Path, exc: OSError) -> str:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return (
            f"cannot start the local cluster: no space left on the device of {state_dir}"
            f" (at least {MIN_FREE_BYTES // (1024 * 1024)} MiB free needed)"
        )
    return f"cannot start the local cluster in {state_dir}: {exc.strerror or exc}"


def _exit_reason(state_dir: Path) -> str:
    """Why the daemon exited at start, in one line: the disk, else its last log line."""
    with contextlib.suppress(OSError):
        if shutil.disk_usage(state_dir).free < MIN_FREE_BYTES:
            return _os_reason(state_dir, OSError(errno.ENOSPC, "full"))
    last = ""
    with contextlib.suppress(OSError):
        lines = (state_dir / LOG_FILE).read_bytes()[-4096:].decode(errors="replace").splitlines()
        last = next((line.strip() for line in reversed(lines) if line.strip()), "")
    detail = f": {last}" if last else ""
    return f"the local cluster exited at start{detail} (see {state_dir / LOG_FILE})"


def _read_pid(fd: int) -> int | None:
    with contextlib.suppress(OSError, ValueError):
        return int(os.pread(fd, 32, 0).decode().strip())
    return None


def lock_holders(state_dir: Path) -> set[int] | None:
    """Pids holding the daemon lock per ``/proc/locks``; None where that cannot be told."""
    try:
        fd = os.open(state_dir / PID_FILE, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return _lock_holders(fd)
    finally:
        os.close(fd)


def _lock_holders(fd: int) -> set[int] | None:
    """Pids holding a FLOCK on ``fd``'s file per ``/proc/locks``; None where it cannot tell."""
    info = os.fstat(fd)
    device = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
    try:
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return None
    holders = set()
    for line in lines:
        fields = line.split()
        if "->" in fields or len(fields) < 6 or fields[1] != "FLOCK":
            continue  # "->" marks a waiter, not a holder
        if fields[5] == device:
            with contextlib.suppress(ValueError):
                holders.add(int(fields[4]))
    return holders or None


def is_running(pid: int) -> bool:
    """Whether ``pid`` is a live process (not a zombie)."""
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
