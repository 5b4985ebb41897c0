"""SIGINT and SIGTERM for long-running commands: an orderly stop and the shell's exit codes.

A command that runs a local cluster (``trainop run``, ``trainop local serve``) must stop every
process it started whichever way it is told to stop — Ctrl-C in a terminal, SIGTERM from a
service manager or to its whole process group — and then exit as a shell reports a process
ended by that signal: 130 for SIGINT, 143 for SIGTERM (128 + the signal number), with one line
and no traceback. ``StopSignals`` turns the first such signal into cancellation of the task
that installed it, so the ``async with`` blocks of that task unwind (the kubelet stops its
containers), and remembers which signal it was. Later signals are ignored: the stop in progress
is the one that cleans up. ``terminating`` does the same for synchronous code (``local up``):
SIGTERM raises ``Terminated`` like Ctrl-C raises ``KeyboardInterrupt``.

Exit codes of every command are listed in docs/cli.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Iterator
from types import FrameType

EXIT_INTERRUPTED = 128 + signal.SIGINT  # 130
EXIT_TERMINATED = 128 + signal.SIGTERM  # 143
HANDLED = (signal.SIGINT, signal.SIGTERM)


class Terminated(BaseException):
    """SIGTERM arrived in synchronous code (a ``BaseException``, like ``KeyboardInterrupt``)."""


class StopSignals:
    """Cancels the installing task on the first SIGINT/SIGTERM and remembers which one."""

    def __init__(self) -> None:
        self.received: int | None = None

    def install(self) -> None:
        """Handle both signals on the running loop, cancelling the current task."""
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        for signum in HANDLED:
            loop.add_signal_handler(signum, self._on_signal, signum, task)

    @property
    def exit_code(self) -> int | None:
        """128 + the signal received; None when no signal stopped the command."""
        return None if self.received is None else 128 + self.received

    def _on_signal(self, signum: int, task: asyncio.Task[object] | None) -> None:
        if self.received is not None:
            return
        self.received = signum
        if task is not None:
            task.cancel()


@contextlib.contextmanager
def terminating() -> Iterator[None]:
    """Within the block, SIGTERM raises ``Terminated`` (the previous handler is restored)."""

    def raise_terminated(signum: int, frame: FrameType | None) -> None:
        del signum, frame
        raise Terminated

    previous = signal.signal(signal.SIGTERM, raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
