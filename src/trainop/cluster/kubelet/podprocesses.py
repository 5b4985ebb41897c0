"""The processes of one pod's containers: one run of a container, from start to exit, and stop.

``ContainerProcesses.run_once`` starts one run of a container through the runtime (the seam),
records the start in the sandbox (``recovery``) before the status shows it, records kubelet's
``Created``/``Started`` Events (and the runtime's warnings), pumps its output to the log
(``logfiles``), waits for it, lets the runtime collect what is left of it and records the
exit. A start that fails ends the container ``terminated`` 128 with the runtime's reason
(``ContainerCannotRun``, ``StartError``: a run, which the restart policy then judges); an image
that cannot be had, or a container the runtime refuses to create, is no run at all: the
container only waits with the runtime's reason and message (``ErrImagePull``,
``ErrImageNeverPull``, ...) and ``run_once`` returns None. ``start_errors`` keeps the last
failed start of each container for the back-off that follows (``crashloop``).

``halt(grace)``: SIGTERM to every running container (kubelet's ``Killing`` Event), SIGKILL to
those still alive after ``grace`` seconds; returns once none runs. Neighbours: ``podrun``,
``crashloop``, ``runtimes.runtime``, ``logfiles``, ``recovery``, ``podcontext``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal

from trainop.cluster.kubelet import recovery
from trainop.cluster.kubelet.logfiles import LogFiles, pump
from trainop.cluster.kubelet.podcontext import CANNOT_RUN_EXIT_CODE, PodContext
from trainop.cluster.kubelet.podstate import ContainerState
from trainop.cluster.kubelet.runtimes import runtime
from trainop.cluster.kubelet.runtimes.runtime import Launch, Running, StartError
from trainop.cluster.kubelet.status.render import Termination

log = logging.getLogger(__name__)

NEVER_PULL = "ErrImageNeverPull"


class ContainerProcesses:
    """Runs of one pod's containers (see the module docstring)."""

    def __init__(self, ctx: PodContext, *, container_runtime: runtime.Runtime, logs: LogFiles):
        self._ctx, self._runtime, self._logs = ctx, container_runtime, logs
        self._processes: dict[str, Running] = {}
        self._exited: set[str] = set()  # main process ended, run being finished
        self._idle = asyncio.Event()
        self._idle.set()
        self.start_errors: dict[str, StartError] = {}  # waiting after a failed start
        self.adopted: dict[str, Running] = {}  # runs an earlier kubelet started, still alive

    def running(self, container: str) -> Running | None:
        """The run of ``container`` while its main process runs."""
        if container in self._exited:
            return None
        return self._processes.get(container)

    async def run_once(
        self, container: ContainerState, launch: Launch, env: dict[str, str], *, init: bool
    ) -> tuple[int, float] | None:
        """One run: its exit code and how long it ran; None when its image could not be had
        (the container was never created)."""
        ctx = self._ctx
        began = ctx.clock.now()
        self.start_errors.pop(container.name, None)
        try:
            process = await self._runtime.start(
                ctx.target(container), launch, env, ctx.reporter(container.name)
            )
        except StartError as exc:
            if exc.image or exc.config:
                self._pull_failed(container, exc)
                return None
            return self._start_failed(container, exc), 0.0
        self._started(container, process, init=init)
        code = await self._until_exit(container, process)
        return code, (ctx.clock.now() - began).total_seconds()

    async def resume(self, container: ContainerState, process: Running, *, init: bool) -> int:
        """Follow a run an earlier kubelet started (``recovery``, note 120) to its exit, as if
        this kubelet had started it; its exit code."""
        self._processes[container.name] = process
        self._idle.clear()
        if self._ctx.state.phase == "Pending" and not init:
            self._ctx.state.phase = "Running"
        self._ctx.changed()
        return await self._until_exit(container, process)

    async def _until_exit(self, container: ContainerState, process: Running) -> int:
        ctx = self._ctx
        if ctx.is_stopping:  # stop() came while the process was starting
            process.signal(signal.SIGKILL)
        ended = await self._wait(container, process)
        container.end(ended)
        ctx.changed()
        return ended.exit_code

    async def halt(self, grace: float) -> None:
        """SIGTERM now, SIGKILL after ``grace``; return once no container runs."""
        for name, process in list(self._processes.items()):
            self._ctx.event(name, "Normal", "Killing", f"Stopping container {name}")
            process.signal(signal.SIGTERM)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._idle.wait(), timeout=max(grace, 0.0))
        for process in list(self._processes.values()):
            process.signal(signal.SIGKILL)
        await self._idle.wait()

    def _started(self, container: ContainerState, process: Running, *, init: bool) -> None:
        ctx, name = self._ctx, container.name
        self._processes[name] = process
        self._idle.clear()
        container.run(ctx.now(), process.pid, process.container_id)
        self._record(container, None)
        ctx.event(name, "Normal", "Created", f"Created container {name}")
        ctx.event(name, "Normal", "Started", f"Started container {name}")
        for warning in process.warnings:  # what the runtime could not honour in this start
            ctx.event(name, "Warning", warning.reason, warning.message)
        if ctx.state.phase == "Pending" and not init:
            ctx.state.phase = "Running"
        ctx.changed()

    def _start_failed(self, container: ContainerState, exc: StartError) -> int:
        """A container that could not be started: ``terminated`` 128 with the reason, as a
        container runtime reports a container whose start failed; the policy then decides."""
        reason, message = exc.reason, str(exc)
        self.start_errors[container.name] = exc
        ended = self._ctx.never_ran(reason, message)
        container.start_failed(ended)
        self._record(container, ended)
        self._ctx.event(container.name, "Warning", "Failed", f"Error: {message}")
        self._ctx.changed()
        return CANNOT_RUN_EXIT_CODE

    def _pull_failed(self, container: ContainerState, exc: StartError) -> None:
        """The container's image could not be pulled (or is absent under ``Never``), or the
        runtime refused to create it (``StartError.config``): kubelet never created the
        container, so it only waits, with the runtime's message: no run, no
        ``restartCount``, no ``lastState`` from it (a previous run stays ``lastState``)."""
        ctx, name = self._ctx, container.name
        self.start_errors[name] = exc
        container.wait(exc.waiting, str(exc))
        if exc.config:  # kubelet's event for a container it refuses to create
            ctx.event(name, "Warning", "Failed", f"Error: {exc}")
            ctx.changed()
            return
        if exc.reason == NEVER_PULL:
            ctx.event(name, "Warning", NEVER_PULL, str(exc))
        else:
            ctx.event(name, "Warning", "Failed", f'Failed to pull image "{exc.image}": {exc}')
        ctx.event(name, "Warning", "Failed", f"Error: {exc.waiting}")
        ctx.changed()

    def _record(self, container: ContainerState, ended: Termination | None) -> None:
        """Write the run's start or end to the sandbox (what a restarted kubelet reads)."""
        path = self._ctx.sandbox.record(container.name)
        try:
            if ended is None:
                recovery.write_started(
                    path, container.restart_count, container.running_since, container.container_id
                )
            else:
                recovery.write_ended(path, container.restart_count, ended)
        except OSError as exc:  # a full disk must not stop the pod
            pod = self._ctx.pod_id
            log.warning("cannot record container %s of %s: %s", container.name, pod, exc)

    async def _wait(self, container: ContainerState, process: Running) -> Termination:
        """Follow the run to its exit; its termination, recorded in the sandbox *before*
        ``finish`` removes what the runtime kept of it (a container's exit code): a kubelet
        killed in between finds the exit in the record, not a lost run."""
        ctx = self._ctx
        path = ctx.sandbox.logs(container.name) / f"{container.restart_count}.log"
        sink = self._logs.open(path)
        pumps = [
            asyncio.ensure_future(pump(self._logs, path, sink, "stdout", process.stdout)),
            asyncio.ensure_future(pump(self._logs, path, sink, "stderr", process.stderr)),
        ]
        try:
            returncode = await process.wait()
            code, reason = await process.outcome(returncode, killed_by_kubelet=ctx.is_stopping)
            ended = Termination(
                code,
                reason,
                container.running_since,
                ctx.now(),
                container_id=container.container_id,
            )
            self._record(container, ended)
        finally:
            self._exited.add(container.name)
            await process.finish()  # what the process left behind
            await asyncio.gather(*pumps, return_exceptions=True)
            self._logs.close(path, sink)
            del self._processes[container.name]
            self._exited.discard(container.name)
            if not self._processes:
                self._idle.set()
        return ended
