"""Containers an earlier session of the same state directory left running (note 120): the
container runtime's half of surviving a crash of ``trainop local up``'s daemon.

A container outlives its foreground ``podman run`` client: conmon keeps it, its output and its
exit code. A keeping session (``ContainerRuntime(keep=True)``) adopts the earlier session of its
state directory (``previous_session``: its id, so its network, pod holders and container
names), and ``reattach`` finds a run by its name: still running, it is ``Followed`` (its whole
output copied again into the run's log by ``podman logs --follow``, which ends when the
container does; signals through ``podman kill``); ended, its ``ExitCode`` is taken (its output
copied into the log first) and the container removed. Neighbours: ``containers`` (the
runtime), ``containerrun`` (``Followed`` is a ``Container``), ``options`` (names, labels).
"""

from __future__ import annotations

import asyncio
import signal
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from trainop.cluster import privacy
from trainop.cluster.kubelet.runtimes import containercli, containerrun, options, processes
from trainop.cluster.kubelet.runtimes.runtime import Exited
from trainop.cluster.kubelet.runtimes.stdio import Stdio


async def previous_session(cli: containercli.Cli) -> str:
    """The session whose containers of this state directory are still there ("" if none);
    the one with most containers where several are."""
    label = f"label={options.STATE_LABEL}={cli.state_dir}"
    found = Counter(
        str(labels.get(options.SESSION_LABEL) or "") for _, labels in await cli.containers(label)
    )
    found.pop("", None)
    return found.most_common(1)[0][0] if found else ""


class Followed(containerrun.Container):
    """A running container an earlier session started: its output is ``podman logs -f``'s,
    which ends when the container does; a signal is ``podman kill``'s."""

    def signal(self, signum: int) -> bool:
        if self._process.returncode is not None:
            return False
        kill = ("kill", "--signal", str(int(signum)), self.name)
        asyncio.get_running_loop().create_task(self._cli.call(*kill))
        return True


async def reattach(cli: containercli.Cli, name: str, log: Path) -> Followed | Exited | None:
    """The container ``name`` as an earlier session left it: running (``Followed``), ended
    (``Exited``; removed), or gone (None)."""
    found = containercli.first_object(await cli.json(*cli.inspect_words(name)))
    state = found.get("State")
    if not isinstance(state, dict):
        return None
    privacy.private_dirs(log.parent)
    log.write_bytes(b"")  # podman kept the whole output: copied again below
    if str(state.get("Status") or "").lower() == "running":
        client = await processes.start(
            cli.argv("logs", "--follow", name), env=cli.env(), cwd=cli.workdir()
        )
        return Followed(cli, client, name, Stdio({}), container_id=str(found.get("Id") or ""))
    await _copy_logs(cli, name, log)
    await cli.call(*cli.remove_words(name))
    code = int(state.get("ExitCode") or 0)
    returncode = -signal.SIGKILL if state.get("OOMKilled") else code
    return Exited(returncode, str(state.get("FinishedAt") or ""))


async def _copy_logs(cli: containercli.Cli, name: str, log: Path) -> None:
    """The output of the ended container ``name`` into ``log`` (CRI records, stdout first)."""
    reply = await cli.call("logs", name)
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    records = [
        f"{stamp} {stream} F {line}\n"
        for stream, text in (("stdout", reply.out), ("stderr", reply.err))
        for line in text.splitlines()
    ]
    log.write_text("".join(records))
