"""The supervisor: one small process per container run that outlives the kubelet.

Why: ``trainop local up``'s daemon may die (SIGKILL, a crash) while its pods train; on a
cluster the runtime's shim (conmon, containerd's shim) keeps a container running through a
kubelet restart and keeps its exit code for the next kubelet. This is that shim for the
process kubelet (note 120). The kubelet (``runtimes.supervised``) starts it, in a session of
its own and without any parent-death signal, as ``python -I -S supervisor.py SPEC`` (the
standard library only, no ``json``: see note 120 for its cost); it forks once at once, so
that it is no child of the kubelet's (whose end it must not notice). It

1. reads the run's spec (``encode``d: argv, env, working directory, umask, log and exit paths, the
   sandbox to watch, its socket name) and removes the file (it holds the pod's secrets);
2. binds its Linux abstract socket ``@<address>``: the kernel drops the name when the process
   dies, so a connect that succeeds *is* a live supervisor (no pid is trusted);
3. starts the container in a new process group (parent-death signal: it dies with the
   supervisor, never alone), writes ``{"pid": N}`` (or ``{"error": ...}``) on its stdout;
4. writes the container's stdout and stderr to the run's log file in the CRI format the
   kubelet reads (``logfiles``), dropping and counting records it cannot write;
5. serves connections (own user only, ``SO_PEERCRED``), one ``encode``d line each:
   ``{"op": "wait"}`` answers ``{"pid": N}`` and, at the exit, ``{"returncode": R}``;
   ``{"op": "signal", "signum": S}`` signals the container's group; ``{"op": "exec", ...}``
   with three descriptors runs a command in the container's group (``exec_main`` is the
   command the kubelet's exec runs: a group of another session cannot be joined directly);
6. when the container's main process exits: SIGKILLs what is left of its group, drains its
   output, writes ``{"returncode": R, "finishedAt": T}`` atomically to the exit path, answers
   the waiters and exits. A supervisor whose sandbox directory was removed (the session is
   gone for good) SIGKILLs its container and exits the same way.
"""

from __future__ import annotations

import contextlib
import ctypes
import marshal
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from typing import Any

# An exec on a terminal: the command leads a new session whose controlling terminal is its
# stdin (the kubelet's exec server uses it too, for host processes it runs itself).
TERMINAL_LEADER = [
    sys.executable,
    "-I",
    "-S",
    "-c",
    "import fcntl, os, sys, termios\n"
    "os.setsid()\n"
    "fcntl.ioctl(0, termios.TIOCSCTTY, 0)\n"
    "try:\n"
    "    os.execvp(sys.argv[1], sys.argv[1:])\n"
    "except OSError as exc:\n"
    "    sys.stderr.write(f'exec: {sys.argv[1]!r}: {exc.strerror}\\n')\n"
    "    sys.exit(127)\n",
]

LINE_LIMIT = 64 * 1024
WATCH_INTERVAL = 1.0
PREFIX = "trainop-run-"


def address_of(container_id: str) -> str:
    """The abstract socket name of a run's supervisor (the run's ``containerID``)."""
    import hashlib  # the kubelet's side only: the supervisor is told its address

    digest = hashlib.sha256(container_id.encode()).hexdigest()[:40]
    return f"{PREFIX}{os.getuid()}-{digest}"


def encode(message: Any) -> bytes:
    """One message of the supervisor's protocol: a line (``marshal``, in hex). Not JSON:
    importing ``json`` (and ``re``) would be a third of the supervisor's start-up; both ends
    are the same interpreter, and a peer is this user's own (``SO_PEERCRED``)."""
    return marshal.dumps(message).hex().encode() + b"\n"


def decode(line: bytes) -> Any:
    """A message ``encode`` made (``ValueError`` when it is not one)."""
    try:
        return marshal.loads(bytes.fromhex(line.decode().strip()))
    except (EOFError, TypeError, UnicodeDecodeError) as exc:
        raise ValueError(str(exc)) from exc


def stamp() -> str:
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1e6):06d}Z"


class Log:
    """The run's log file: CRI records, one ``write`` each; records that cannot be written
    are dropped and counted, and a marker precedes the next one that can (``logfiles``)."""

    def __init__(self, path: str) -> None:
        self._path, self._fd, self._lock = path, -1, threading.Lock()
        self._dropped, self._error = 0, ""

    def put(self, stream: str, text: bytes, *, full: bool = True) -> None:
        head = f"{stamp()} {stream} {'F' if full else 'P'} ".encode()
        with self._lock:
            try:
                if self._fd < 0:
                    self._fd = os.open(self._path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                if self._dropped:
                    note = f"[trainop] {self._dropped} log lines dropped: {self._error}"
                    os.write(self._fd, f"{stamp()} stderr F {note}\n".encode())
                    self._dropped, self._error = 0, ""
                os.write(self._fd, head + text + b"\n")
            except OSError as exc:
                self._dropped += 1
                self._error = self._error or exc.strerror or str(exc)

    def pump(self, stream: str, fd: int) -> None:
        """Copy ``fd`` to the log line by line until end-of-file."""
        pending = b""
        while chunk := _read(fd):
            pending += chunk
            while (end := pending.find(b"\n")) >= 0 or len(pending) >= LINE_LIMIT:
                if 0 <= end < LINE_LIMIT:
                    self.put(stream, pending[:end])
                    pending = pending[end + 1 :]
                else:
                    self.put(stream, pending[:LINE_LIMIT], full=False)
                    pending = pending[LINE_LIMIT:]
        if pending:
            self.put(stream, pending)
        os.close(fd)


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, 65536)
    except OSError:
        return b""


def _die_with_parent() -> None:  # in the container, between fork and exec
    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() == 1:
        os._exit(137)


class Supervisor:
    """One run (see the module docstring)."""

    def __init__(self, spec: dict[str, Any], listener: socket.socket) -> None:
        self.spec, self.listener = spec, listener
        self.group = 0
        self.returncode: int | None = None
        self.done = threading.Event()
        self.waiters: list[socket.socket] = []
        self.lock = threading.Lock()

    def start(self) -> subprocess.Popen[bytes]:
        spec = self.spec
        process = subprocess.Popen(
            spec["argv"],
            env=spec["env"],
            cwd=spec["cwd"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            process_group=0,
            preexec_fn=_die_with_parent,
            umask=int(spec.get("umask", 0o022)),
            close_fds=True,
        )
        self.group = process.pid
        return process

    def run(self, process: subprocess.Popen[bytes]) -> None:
        log = Log(self.spec["log"])
        assert process.stdout is not None
        assert process.stderr is not None
        pumps = [
            _thread(log.pump, "stdout", os.dup(process.stdout.fileno())),
            _thread(log.pump, "stderr", os.dup(process.stderr.fileno())),
        ]
        process.stdout.close()
        process.stderr.close()
        _thread(self.accept)
        _thread(self.watch, process)
        returncode = process.wait()
        with contextlib.suppress(OSError):
            os.killpg(self.group, signal.SIGKILL)  # what it left, as its PID namespace would
        for pump in pumps:
            pump.join()
        self.finish(returncode)

    def finish(self, returncode: int) -> None:
        import json  # once, at the end: not on the start's path

        record = {"returncode": returncode, "finishedAt": stamp()}
        with contextlib.suppress(OSError):  # the sandbox is gone: nobody will ask
            write_atomically(self.spec["exit"], json.dumps(record).encode(), sync=True)
        with self.lock:
            self.returncode = returncode
            waiters, self.waiters = self.waiters, []
        for conn in waiters:
            _reply(conn, {"returncode": returncode})
            conn.close()
        self.done.set()

    def watch(self, process: subprocess.Popen[bytes]) -> None:
        """The session is gone for good (its sandbox removed): kill the container."""
        while not self.done.wait(WATCH_INTERVAL):
            if not os.path.isdir(self.spec["watch"]):
                with contextlib.suppress(OSError):
                    os.killpg(self.group, signal.SIGKILL)
                return

    def accept(self) -> None:
        while True:
            conn, _ = self.listener.accept()
            creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            if struct.unpack("3i", creds)[1] != os.getuid():
                conn.close()
                continue
            _thread(self.serve, conn)

    def serve(self, conn: socket.socket) -> None:
        try:
            message, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
            while message and not message.endswith(b"\n"):  # a long request, in parts
                if not (more := conn.recv(1 << 20)):
                    break
                message += more
            request = decode(message)
            if not isinstance(request, dict):
                raise ValueError("not a request")
        except (OSError, ValueError):
            conn.close()
            return
        op = request.get("op")
        if op == "exec" and len(fds) == 3:
            self.exec(conn, request, fds)
        elif op == "signal":
            _reply(conn, {"ok": self.signal(int(request.get("signum") or signal.SIGTERM))})
            conn.close()
        else:
            with self.lock:
                _reply(conn, {"pid": self.group})
                if self.returncode is None:
                    self.waiters.append(conn)
                    return
            _reply(conn, {"returncode": self.returncode})
            conn.close()

    def signal(self, signum: int) -> bool:
        try:
            os.killpg(self.group, signum)
        except OSError:
            return False
        return True

    def exec(self, conn: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
        """Run a command in the container's group with the caller's stdio; SIGKILL it when
        the caller hangs up. With ``"tty": true`` the command instead leads a session of its
        own whose controlling terminal is its stdin (the caller's pseudo terminal), so ^C and
        job control reach it, and it is killed as a group."""
        tty = request.get("tty") is True
        try:
            argv = list(request["argv"])
            command = subprocess.Popen(
                [*TERMINAL_LEADER, *argv] if tty else argv,
                env=request.get("env"),
                cwd=request.get("cwd"),
                stdin=fds[0],
                stdout=fds[1],
                stderr=fds[2],
                process_group=None if tty else self.group,
                close_fds=True,
            )
        except (OSError, KeyError, TypeError) as exc:
            _reply(conn, {"error": str(exc)})
            conn.close()
            return
        finally:
            for fd in fds:
                os.close(fd)
        _thread(_kill_on_hang_up, conn, command, tty)
        _reply(conn, {"exitCode": _exit_code(command.wait())})
        conn.close()


def _kill_on_hang_up(conn: socket.socket, command: subprocess.Popen[bytes], group: bool) -> None:
    with contextlib.suppress(OSError):
        conn.recv(1)
    if command.poll() is None:
        with contextlib.suppress(OSError):
            if group:  # a terminal's session: the command leads its own group
                os.killpg(command.pid, signal.SIGKILL)
            else:
                command.kill()


def _exit_code(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode


def _reply(conn: socket.socket, data: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):
        conn.sendall(encode(data))


def _thread(target: Any, *args: Any) -> threading.Thread:
    thread = threading.Thread(target=target, args=args, daemon=True)
    thread.start()
    return thread


def write_atomically(path: str, data: bytes, *, sync: bool = False) -> None:
    """Write ``path`` whole or not at all (``sync``: on disk before it is renamed)."""
    staged = f"{path}.tmp"
    fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(staged, path)


def _tell(answer: dict[str, Any]) -> None:
    """The one line the kubelet reads on the supervisor's stdout: started, or why not."""
    os.write(1, encode(answer))


def main(spec_path: str) -> int:
    """Supervise the run ``spec_path`` describes (see the module docstring)."""
    with open(spec_path, "rb") as source:
        spec = decode(source.read())
    os.unlink(spec_path)
    if os.fork() > 0:  # the kubelet reaps this parent at once; the supervisor is nobody's child
        os._exit(0)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind("\0" + spec["address"])
    except OSError as exc:  # this run has a supervisor already
        _tell({"error": f"supervisor: {exc}"})
        return 1
    listener.listen(16)
    supervisor = Supervisor(spec, listener)
    try:
        process = supervisor.start()
    except OSError as exc:
        _tell({"error": exc.strerror or str(exc), "errno": exc.errno})
        return 0
    _tell({"pid": process.pid})
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)  # the kubelet's pipe ends here: it may be gone long before the run
    os.close(null)
    supervisor.run(process)
    return 0


def exec_main(address: str, argv: list[str], *, tty: bool = False) -> int:
    """Run ``argv`` in the container whose supervisor listens at ``address``, with this
    process's stdio, environment and working directory (``tty``: stdin is a terminal the
    command is to lead); exit with its exit code."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect("\0" + address)
        request = {
            "op": "exec",
            "argv": argv,
            "env": dict(os.environ),
            "cwd": os.getcwd(),
            "tty": tty,
        }
        socket.send_fds(conn, [encode(request)], [0, 1, 2])
        answer = decode(conn.makefile("rb").readline())
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"exec: the container's supervisor is gone: {exc}\n")
        return 1
    if "error" in answer:
        sys.stderr.write(f"exec: {answer['error']}\n")
        return 1
    return int(answer.get("exitCode", 1))


if __name__ == "__main__":
    # A terminal's Ctrl-C is the kubelet's to judge: caught, not ignored, since an ignored
    # signal stays ignored across exec and the container and exec'd commands must get it.
    signal.signal(signal.SIGINT, lambda _signum, _frame: None)
    if sys.argv[1:2] == ["--exec"]:  # --exec ADDRESS [--tty] -- COMMAND...
        words = sys.argv[3:]
        terminal = words[:1] == ["--tty"]
        sys.exit(exec_main(sys.argv[2], words[2:] if terminal else words[1:], tty=terminal))
    sys.exit(main(sys.argv[1]))
