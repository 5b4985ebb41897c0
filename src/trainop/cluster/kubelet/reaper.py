"""The reaper: a tiny watchdog process that kills every container when the kubelet dies.

Why: a container's process may start children of its own (``torchrun`` workers, ``mpirun``'s
daemons). ``PR_SET_PDEATHSIG`` (see ``processes``) kills only the direct child when the
kubelet dies, and nothing at all can run in a process killed by SIGKILL. So the kubelet starts
this watchdog once, with a pipe on its stdin, and tells it ``+PGID`` / ``-PGID`` as container
process groups come and go. When the pipe reaches end-of-file — the kubelet exited or was
killed, by any signal, the kernel closes its end — the watchdog sends SIGKILL to every process
group still registered, and exits. It ignores SIGINT (Ctrl-C reaches the whole terminal
group; the kubelet then stops its pods itself) and treats SIGTERM like end-of-file.

The write end is the kubelet's alone: ``os.pipe`` descriptors are not inherited across
``exec``, and containers are started with ``close_fds``. Run as a script by path with
``python -I -S``: it imports the standard library only.

No window: a container's new group writes its own ``+PGID`` line to the pipe between its
``fork`` and its ``exec`` (``processes.start(watch_fd=...)``), so the watchdog knows the group
before any program runs in it; the kubelet's own ``watch`` afterwards repeats it (a set).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
from collections.abc import Iterable

PR_SET_PDEATHSIG = 1


def main(lines: Iterable[str]) -> None:
    """Track ``+PGID``/``-PGID`` lines until they end, then kill every group left."""
    groups: set[int] = set()
    try:
        for line in lines:
            sign, number = line[:1], line[1:].strip()
            if not number.isdigit():
                continue
            (groups.add if sign == "+" else groups.discard)(int(number))
    finally:
        for group in groups:
            with contextlib.suppress(OSError):  # already gone
                os.killpg(group, signal.SIGKILL)


def _on_sigterm(_signum: int, _frame: object) -> None:
    raise SystemExit(0)  # runs ``main``'s ``finally``


class Reaper:
    """The kubelet's handle on its watchdog process."""

    def __init__(self) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-I", "-S", __file__],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            close_fds=True,
            text=True,
        )

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def fileno(self) -> int | None:
        """The pipe's write end, for a new container group to register itself (None once
        closed)."""
        stdin = self._process.stdin
        return None if stdin is None or stdin.closed else stdin.fileno()

    def watch(self, group: int) -> None:
        """Kill ``group`` if the kubelet dies."""
        self._send(f"+{group}\n")

    def forget(self, group: int) -> None:
        """``group`` is gone (or about to be killed by the kubelet itself)."""
        self._send(f"-{group}\n")

    def close(self) -> None:
        """Stop the watchdog; it kills the groups still registered."""
        if self._process.stdin is not None and not self._process.stdin.closed:
            with contextlib.suppress(BrokenPipeError):  # the watchdog went first (SIGTERM)
                self._process.stdin.close()
        self._process.wait()

    def _send(self, line: str) -> None:
        stdin = self._process.stdin
        if stdin is None or stdin.closed:
            return
        try:
            stdin.write(line)
            stdin.flush()
        except BrokenPipeError:
            pass  # the watchdog is gone: nothing left to tell


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _on_sigterm)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)  # a second way to notice the kubelet's death
    main(sys.stdin)
