"""A container's stdio as both runtimes make it (``host`` and ``containers``, note 095).

``Stdio`` makes the stdio before the process starts, from the container's ``stdin``/``tty``:
a pseudo terminal, a pipe for stdin, or /dev/null. ``StdioRun`` is what every ``Running``
whose stdio is one local process's shares: its pid, its output streams (pipes, or a
terminal's readers) and the kubelet's end of its stdin, which ``attach -i`` copies. The
process is the container's own (host runtime) or the runtime's client that relays its stdio
(``podman run -i [-t]``). Neighbours: ``runtime`` (the seam), ``processes``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pty

from trainop.cluster.kubelet.runtimes.runtime import Raw


class Stdio:
    """A container's stdio, made before its process starts (``stdin``/``tty`` of the spec).

    ``tty: true``: a pseudo terminal is the process's stdin, stdout and stderr; the kubelet
    keeps its master side (the output read from it, a copy written by ``attach -i``).
    ``stdin: true`` alone: a pipe whose write end the kubelet keeps for ``attach -i``.
    Neither: stdin is /dev/null, stdout and stderr pipes. The process is the container's own
    (host runtime) or the runtime's client that relays its stdio (``podman run -i [-t]``)."""

    def __init__(self, spec: Raw) -> None:
        self.tty = spec.get("tty") is True
        self.stdin = self.tty or spec.get("stdin") is True
        self._mine, self._theirs = -1, -1
        if self.tty:
            self._mine, self._theirs = pty.openpty()
        elif self.stdin:
            self._theirs, self._mine = os.pipe()

    def streams(self) -> tuple[int | None, int | None, int | None]:
        """``processes.start``'s ``stdin``, ``stdout`` and ``stderr`` (None: its default)."""
        theirs = self._theirs if self._theirs >= 0 else None
        return theirs, theirs if self.tty else None, theirs if self.tty else None

    def started(self) -> tuple[int, tuple[asyncio.StreamReader, asyncio.StreamReader] | None]:
        """After the process started: close its ends here; the kubelet's stdin end and, with a
        terminal, the (stdout, stderr) readers of it (its stderr empty: one stream)."""
        self._close_theirs()
        if not self.tty:
            return self._mine, None
        empty = asyncio.StreamReader()
        empty.feed_eof()
        return os.dup(self._mine), (_terminal_reader(self._mine), empty)

    def failed(self) -> None:
        """The process could not be started: close everything."""
        self._close_theirs()
        if self._mine >= 0:
            os.close(self._mine)
            self._mine = -1

    def _close_theirs(self) -> None:
        if self._theirs >= 0:
            os.close(self._theirs)
            self._theirs = -1


class StdioRun:
    """What every ``Running`` whose stdio is one local process's shares: its pid, output
    streams (pipes, or a terminal's readers) and the kubelet's end of its stdin (``Stdio``)."""

    def __init__(self, process: asyncio.subprocess.Process, stdio: Stdio) -> None:
        self._process = process
        self.stdin_fd, self._terminal = stdio.started()

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def stdout(self) -> asyncio.StreamReader:
        if self._terminal is not None:
            return self._terminal[0]
        assert self._process.stdout is not None
        return self._process.stdout

    @property
    def stderr(self) -> asyncio.StreamReader:
        if self._terminal is not None:
            return self._terminal[1]
        assert self._process.stderr is not None
        return self._process.stderr

    def close_stdin(self) -> None:
        """Close the kubelet's end of the container's stdin: the container reads end-of-file
        once no attach holds it either (``stdinOnce``, or the run ended)."""
        if self.stdin_fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.stdin_fd)
            self.stdin_fd = -1


def _terminal_reader(fd: int) -> asyncio.StreamReader:
    """A reader of a terminal's master side: end-of-file once every slave user is gone (EIO),
    when the descriptor is closed too."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    os.set_blocking(fd, False)

    def readable() -> None:
        try:
            data = os.read(fd, 65536)
        except BlockingIOError:
            return
        except OSError:  # EIO: the last process using the terminal is gone
            data = b""
        if data:
            reader.feed_data(data)
            return
        loop.remove_reader(fd)
        os.close(fd)
        reader.feed_eof()

    loop.add_reader(fd, readable)
    return reader
