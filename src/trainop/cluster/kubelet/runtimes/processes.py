"""Container processes: start one (argv, never a shell), stop its group, explain its exit.

Every container process leads its own **process group** (``process_group=0``), so one
``killpg`` reaches everything it started (unless a descendant deliberately leaves the group
with ``setsid``: not covered). The group stays in the kubelet's session, which lets ``exec``
place commands in a running container's group. Orphans are prevented in three ways:

1. ``PR_SET_PDEATHSIG`` = SIGKILL, set in the child between ``fork`` and ``exec`` (through
   ``ctypes``; the kernel delivers it when the thread that forked the child dies, even when the
   kubelet is SIGKILLed). If the kubelet died before the ``prctl``, the child exits at once.
2. the ``reaper`` watchdog kills every registered group when the kubelet's pipe closes;
3. when a container's main process exits, its whole group is SIGKILLed (as a container's PID
   namespace dies with its init process), and so is the group on kubelet shutdown.

Exit reasons: 0 is ``Completed``; a process killed by SIGKILL that the kubelet did not send,
while the kernel's OOM-kill counter (``/proc/vmstat`` ``oom_kill``) went up, is ``OOMKilled``
(a heuristic: another process's OOM kill at the same moment is indistinguishable); anything
else is ``Error``. A signal N is reported as exit code 128+N, as container runtimes do.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import signal
from collections.abc import Callable, Mapping
from pathlib import Path

from trainop.cluster import privacy

PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(None, use_errno=True)
_PRCTL = _LIBC.prctl


def _die_with(parent: int, watch_fd: int | None) -> Callable[[], None]:
    def preexec() -> None:  # runs in the child: keep it to a few system calls
        _PRCTL(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:
            os._exit(137)
        if watch_fd is not None:  # the new group registers itself before anything runs in it
            with contextlib.suppress(OSError):  # the watchdog is gone: nothing to tell
                os.write(watch_fd, b"+%d\n" % os.getpid())  # one write < PIPE_BUF: atomic

    return preexec


async def start(
    argv: list[str],
    *,
    env: Mapping[str, str],
    cwd: Path,
    stdin: int | None = None,
    stdout: int | None = None,
    stderr: int | None = None,
    process_group: int = 0,
    watch_fd: int | None = None,
) -> asyncio.subprocess.Process:
    """Start ``argv`` (``OSError`` when it cannot be executed) in a new or given group.

    With the default ``None`` for a stream, the process gets a pipe (``stdin``: /dev/null).
    ``watch_fd``: the reaper's pipe; a new group (``process_group=0``) writes its ``+PGID``
    line there itself, between ``fork`` and ``exec``, so no process of it runs unwatched.
    """
    return await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL if stdin is None else stdin,
        stdout=asyncio.subprocess.PIPE if stdout is None else stdout,
        stderr=asyncio.subprocess.PIPE if stderr is None else stderr,
        env=dict(env),
        cwd=str(cwd),
        process_group=process_group,
        preexec_fn=_die_with(os.getpid(), watch_fd if process_group == 0 else None),
        close_fds=True,
        umask=privacy.inherited_umask(),  # the user's own, not the state directory's 0o077
    )


def signal_group(group: int, signum: int) -> bool:
    """Send ``signum`` to a process group; False when no process is left in it."""
    try:
        os.killpg(group, signum)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False  # the id was reused by a process that is not ours
    return True


def exit_code(returncode: int) -> int:
    """Kubernetes' exit code: the status, or 128 + N for a process killed by signal N."""
    return 128 - returncode if returncode < 0 else returncode


def oom_kills() -> int:
    """The kernel's count of OOM kills so far (0 where it cannot be read)."""
    try:
        for line in Path("/proc/vmstat").read_text().splitlines():
            if line.startswith("oom_kill "):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def reason(returncode: int, *, killed_by_kubelet: bool, oom_before: int) -> str:
    """``Completed``, ``OOMKilled`` or ``Error`` (see the module docstring)."""
    if returncode == 0:
        return "Completed"
    if returncode == -signal.SIGKILL and not killed_by_kubelet and oom_kills() > oom_before:
        return "OOMKilled"
    return "Error"


def describe_start_error(argv: list[str], exc: OSError) -> str:
    """The message a container that could not be started reports (with the OS error)."""
    what = exc.strerror or str(exc)
    return f'failed to start container process: exec: "{argv[0]}": {what}'
