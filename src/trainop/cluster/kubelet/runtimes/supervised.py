"""The supervised host runtime: container runs that outlive the kubelet (note 120).

Each container run is a host process group, as with ``host.HostRuntime``, but started by a
``supervisor`` process of its own (its own session, no parent-death signal, not watched by the
reaper), which writes the run's log and records its exit in the sandbox. So a SIGKILLed
``trainop local up`` daemon leaves its pods' containers running, and the next kubelet
``reattach``es to them. The kubelet talks to a supervisor over its abstract Unix socket
(``supervisor.address_of`` the run's ``containerID``): ``wait`` (its pid, then its exit),
``signal`` (SIGTERM, SIGKILL to the container's group), ``exec`` (a command in that group,
through ``python -I -S supervisor.py --exec``). A run with ``stdin`` or ``tty`` keeps a stdio
only a live kubelet can hold: it runs as a plain host process (``host``), and dies with the
kubelet. Only the persistent daemon uses this runtime (``KubeletConfig.keep_containers``);
``trainop run``'s containers die with it. Neighbours: ``runtime`` (the seam), ``host``,
``supervisor``, ``processes``, ``recovery``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import socket
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from trainop.cluster import privacy
from trainop.cluster.kubelet import recovery, supervisor
from trainop.cluster.kubelet.reaper import Reaper
from trainop.cluster.kubelet.runtimes import host, processes
from trainop.cluster.kubelet.runtimes.runtime import (
    NO_COMMAND,
    Exited,
    Launch,
    Report,
    Running,
    StartError,
    StartWarning,
    Target,
    no_report,
)
from trainop.cluster.kubelet.sandbox import Sandbox

SCRIPT = str(Path(supervisor.__file__).resolve())
LOST = -9  # a supervisor that vanished without recording an exit: reported as SIGKILLed


def run_id(target: Target) -> str:
    """A host run's ``containerID`` (as ``host``: pod uid, container, restart count)."""
    return f"process://{target.uid}/{target.container}/{target.restart}"


def exit_path(sandbox: Sandbox, container: str, restart: int) -> Path:
    """Where the supervisor of run ``restart`` of ``container`` records its exit."""
    record = sandbox.record(container)
    return record.with_name(f"{record.stem}.{restart}.exit.json")


def read_exit(path: Path) -> Exited | None:
    """The exit a supervisor recorded, or None."""
    try:
        data = json.loads(path.read_text())
        return Exited(int(data["returncode"]), str(data.get("finishedAt") or ""))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _send(address: str, request: dict[str, Any], timeout: float = 5.0) -> dict[str, Any]:
    """One request to a supervisor and its first answer ({} when it is gone)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(timeout)
        try:
            conn.connect("\0" + address)
            conn.sendall(supervisor.encode(request))
            line = conn.makefile("rb").readline()
            answer = supervisor.decode(line) if line else {}
        except (OSError, ValueError):
            return {}
    return answer if isinstance(answer, dict) else {}


def signal_run(container_id: str, signum: int) -> bool:
    """Signal a supervised run's container group; False when no supervisor answers."""
    return (
        _send(supervisor.address_of(container_id), {"op": "signal", "signum": int(signum)}).get(
            "ok"
        )
        is True
    )


def reap(sandbox: Path) -> int:
    """SIGKILL every live supervised run recorded in the pod sandbox ``sandbox`` (a pod no
    kubelet will follow again); how many there were."""
    killed = 0
    for path in sandbox.glob("runs/*.json"):
        record = recovery.read(path)
        if record is not None and record.ended is None and record.container_id:
            killed += signal_run(record.container_id, signal.SIGKILL)
    return killed


def reap_all(root: Path) -> int:
    """``reap`` every pod sandbox under the kubelet's ``root`` (``<ns>/<pod>/<uid>``): the
    session is gone for good (``trainop local down`` found no daemon to stop them)."""
    return sum(reap(sandbox) for sandbox in root.glob("*/*/*"))


class SupervisedProcess:
    """One supervised run, seen from the kubelet (a ``Running``)."""

    warnings: tuple[StartWarning, ...] = ()
    stdin_fd = -1  # no stdin: runs that need one are plain host processes

    def __init__(
        self,
        pid: int,
        container_id: str,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter | None,
        exited: Path,
    ) -> None:
        self.pid, self.container_id = pid, container_id
        self._reader, self._writer, self._exited = reader, writer, exited
        self._address = supervisor.address_of(container_id)
        self._oom_before = processes.oom_kills()
        self.stdout, self.stderr = _ended(), _ended()  # the supervisor writes the log

    def close_stdin(self) -> None:
        """Nothing to close: a supervised run has no stdin."""

    async def wait(self) -> int:
        try:
            line = await self._reader.readline()
            answer = supervisor.decode(line) if line else {}
        except (OSError, ValueError):
            answer = {}
        finally:
            if self._writer is not None:
                self._writer.close()
        if isinstance(answer, dict) and "returncode" in answer:
            return int(answer["returncode"])
        recorded = read_exit(self._exited)  # it ended between its answer and ours
        return recorded.returncode if recorded is not None else LOST

    def signal(self, signum: int) -> bool:
        return signal_run(self.container_id, signum)

    async def finish(self) -> None:
        """Nothing is left: the supervisor killed the group when its main process exited."""

    async def outcome(self, returncode: int, *, killed_by_kubelet: bool) -> tuple[int, str]:
        reason = processes.reason(
            returncode, killed_by_kubelet=killed_by_kubelet, oom_before=self._oom_before
        )
        return processes.exit_code(returncode), reason

    def exec_argv(self, command: list[str], *, tty: bool) -> tuple[list[str], int]:
        """The supervisor runs ``command`` in the container's group (another session's group
        cannot be joined from here), or, on a terminal, as the leader of that terminal's
        session (``--tty``): the client here only relays."""
        terminal = ["--tty"] if tty else []
        client = [sys.executable, "-I", "-S", SCRIPT, "--exec", self._address, *terminal, "--"]
        return [*client, *command], 0


def _ended() -> asyncio.StreamReader:
    reader = asyncio.StreamReader()
    reader.feed_eof()
    return reader


async def attach(container_id: str, exited: Path) -> SupervisedProcess | None:
    """Connect to the live supervisor of ``container_id``; None when there is none."""
    address = supervisor.address_of(container_id)
    try:
        reader, writer = await asyncio.open_unix_connection("\0" + address)
    except OSError:
        return None
    try:
        writer.write(supervisor.encode({"op": "wait"}))
        line = await reader.readline()
        pid = int(supervisor.decode(line)["pid"]) if line else 0
    except (OSError, ValueError, KeyError, TypeError):
        pid = 0
    if not pid:
        writer.close()
        return None
    return SupervisedProcess(pid, container_id, reader, writer, exited)


class SupervisedRuntime(host.HostRuntime):
    """Containers as supervised host processes (see the module docstring): the host runtime's
    pods (the host's network, nothing prepared or held per pod), each run under a supervisor."""

    def __init__(self, root: Path, reaper: Reaper) -> None:
        super().__init__(reaper)
        self._root = root

    async def start(
        self, target: Target, launch: Launch, env: Mapping[str, str], report: Report = no_report
    ) -> Running:
        if launch.spec.get("stdin") is True or launch.spec.get("tty") is True:
            return await super().start(target, launch, env, report)
        if not launch.argv:
            raise StartError("ContainerCannotRun", "CreateContainerError", NO_COMMAND)
        sandbox = Sandbox.of(self._root, target.namespace, target.pod, target.uid)
        container_id = run_id(target)
        exited = exit_path(sandbox, target.container, target.restart)
        if (left := await self._left(container_id, exited)) is not None:
            return left
        started = await self._spawn(sandbox, target, launch, env, container_id, exited)
        if "pid" not in started:
            error = OSError(int(started.get("errno") or 0), str(started.get("error") or "?"))
            message = processes.describe_start_error(launch.argv, error)
            raise StartError("StartError", "RunContainerError", message)
        running = await attach(container_id, exited)
        if running is None:  # it ended already: nobody to wait on, its record says how
            reader = asyncio.StreamReader()
            reader.feed_eof()
            return SupervisedProcess(int(started["pid"]), container_id, reader, None, exited)
        return running

    async def _left(self, container_id: str, exited: Path) -> Running | None:
        """This very run, started by a kubelet that died before it could record the start:
        followed (or its recorded exit taken) rather than run a second time."""
        running = await attach(container_id, exited)
        if running is not None or read_exit(exited) is None:
            return running
        reader = asyncio.StreamReader()
        reader.feed_eof()
        return SupervisedProcess(0, container_id, reader, None, exited)

    async def reattach(
        self, target: Target, container_id: str, log: Path
    ) -> Running | Exited | None:
        """An earlier kubelet's run: live (its ``Running``), ended meanwhile (its ``Exited``),
        or lost (None: no supervisor, no exit recorded). The supervisor writes ``log``."""
        del log
        sandbox = Sandbox.of(self._root, target.namespace, target.pod, target.uid)
        exited = exit_path(sandbox, target.container, target.restart)
        ended = read_exit(exited)
        if ended is not None:  # recorded before the supervisor exits: final, even while it lingers
            return ended
        running = await attach(container_id or run_id(target), exited)
        if running is not None:
            return running
        return read_exit(exited)  # it ended between the two looks

    async def _spawn(
        self,
        sandbox: Sandbox,
        target: Target,
        launch: Launch,
        env: Mapping[str, str],
        container_id: str,
        exited: Path,
    ) -> dict[str, Any]:
        log = sandbox.logs(target.container) / f"{target.restart}.log"
        privacy.private_dirs(log.parent)
        privacy.private_dirs(exited.parent)
        spec = {
            "argv": launch.argv,
            "env": dict(env),
            "cwd": str(launch.cwd),
            "umask": privacy.inherited_umask(),
            "log": str(log),
            "exit": str(exited),
            "watch": str(sandbox.path),
            "address": supervisor.address_of(container_id),
        }
        spec_path = exited.with_name(f".{target.container}.{target.restart}.spec")
        supervisor.write_atomically(str(spec_path), supervisor.encode(spec))
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-I",
            "-S",
            SCRIPT,
            str(spec_path),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            start_new_session=True,  # not in the kubelet's session: a kill of it spares this
            close_fds=True,
        )
        assert process.stdout is not None
        line = await process.stdout.readline()
        await process.stdout.read()  # its end is closed right after that line
        await process.wait()  # it forked: the supervisor itself is nobody's child
        with contextlib.suppress(ValueError):
            answer = supervisor.decode(line)
            if isinstance(answer, dict):
                return answer
        return {"error": "the supervisor did not start"}
