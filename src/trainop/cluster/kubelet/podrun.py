"""One pod's life as processes: refuse, recover, configure, init containers, containers, stop.

``PodRun.run`` (one task per pod) does, in order:

1. refuse a pod it can never run: names or paths that break Kubernetes' rules (the sandbox
   boundary, ``sandbox.invalid``) fail it at once with ``CreateContainerConfigError``; more
   GPUs than the machine has with ``UnexpectedAdmissionError``;
2. recover what an earlier kubelet left of the pod (``recovery``: a container that ended is
   not run again unless its policy says so; one whose run goes on under its supervisor is
   re-attached, one that ended meanwhile takes the exit its supervisor recorded (note 120);
   one whose process was lost is ``ContainerStatusUnknown``, 137, and counted as a restart);
3. prepare: the runtime makes what the pod's containers share (its address is the pod's
   ``podIP``); configure (``podconfig``: ConfigMaps, Secrets, sandbox, volumes, every
   container's env, argv and working directory, retried until ``config_timeout``);
4. init containers one after the other; then every container at once, each until it is done
   for good (``crashloop``: in-place restarts per ``restartPolicy`` after kubelet's
   CrashLoopBackOff; one run at a time by ``podprocesses``: start, logs, exit);
5. phase: ``Pending`` until a container runs, ``Running``, then ``Succeeded`` when every
   container is done with exit code 0, else ``Failed`` (``reason``/``message`` name a
   container that could not start or was lost).

Every start and exit is recorded in the sandbox before the status is sent (``recovery``), and
kubelet's Events (``Created``, ``Started``, ``Failed``, ``BackOff``, ``Killing``) go to
``events``. ``stop(grace)`` (deletion, kubelet shutdown): no more starts or restarts; SIGTERM
to every container's process group, SIGKILL to the groups still alive after ``grace`` seconds.
Every change calls ``on_change``; the kubelet writes the status once per loop turn.
Neighbours: ``kubelet`` (owns the runs), ``podcontext`` (what the parts share), ``podconfig``,
``crashloop``, ``podprocesses``, ``sandbox``, ``runtime`` (the seam), ``podstate``,
``recovery``, ``kube.events``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import signal
from collections.abc import Callable

from trainop.cluster.kubelet import gpus, recovery, sandbox
from trainop.cluster.kubelet.crashloop import CrashLoop
from trainop.cluster.kubelet.logfiles import LogFiles
from trainop.cluster.kubelet.podconfig import Configuration
from trainop.cluster.kubelet.podcontext import (
    CannotRun,
    PodContext,
    Raw,
    Settings,
    containers_of,
)
from trainop.cluster.kubelet.podprocesses import ContainerProcesses
from trainop.cluster.kubelet.podstate import ContainerState, PodState
from trainop.cluster.kubelet.reaper import Reaper
from trainop.cluster.kubelet.runtimes import host, processes, runtime
from trainop.cluster.kubelet.runtimes.runtime import Launch, Running
from trainop.cluster.kubelet.status import restartpolicy
from trainop.cluster.kubelet.status.render import Termination
from trainop.kube.client import Client
from trainop.kube.clock import Clock, LoopClock
from trainop.kube.events import EventRecorder

log = logging.getLogger(__name__)


class PodRun:
    """Runs one pod (see the module docstring)."""

    def __init__(
        self,
        pod: Raw,
        *,
        settings: Settings,
        client: Client,
        logs: LogFiles,
        reaper: Reaper,
        pool: gpus.GpuPool,
        now: Callable[[], str],
        on_change: Callable[[PodRun], None],
        clock: Clock | None = None,
        events: EventRecorder | None = None,
        container_runtime: runtime.Runtime | None = None,
    ) -> None:
        self.pod = pod
        self.state = initial_state(pod, now())
        self.sandbox = sandbox.Sandbox.of(
            settings.root, self.state.namespace, self.state.name, self.state.uid
        )
        self._ctx = PodContext(
            pod=pod,
            state=self.state,
            sandbox=self.sandbox,
            settings=settings,
            clock=clock or LoopClock(),
            now=now,
            on_change=lambda: on_change(self),
            events=events,
        )
        self._logs, self._pool = logs, pool
        self._runtime = container_runtime or host.HostRuntime(reaper)
        self._config = Configuration(self._ctx, client)
        self._processes = ContainerProcesses(self._ctx, container_runtime=self._runtime, logs=logs)
        self._loop = CrashLoop(self._ctx, self._processes, pool)
        self.lost: list[str] = []  # containers whose process an earlier kubelet lost
        self.task: asyncio.Task[None] | None = None

    @property
    def stopping(self) -> bool:
        return self._ctx.is_stopping

    def start(self) -> None:
        """Start the pod's task."""
        self.task = asyncio.get_running_loop().create_task(self.run())

    async def run(self) -> None:
        """The pod's whole life (see the module docstring)."""
        self._logs.register(self.state.namespace, self.state.name, self.sandbox)
        self._ctx.changed()
        try:
            _refuse_unrunnable(self.pod, self._pool)
            await self._recover()
            await self._prepare()
            if await self._config.configure() and await self._run_init_containers():
                await self._run_containers()
        except CannotRun as exc:
            await self._fail(exc)
        finally:
            for adopted in self._processes.adopted.values():  # never followed: stop them
                adopted.signal(signal.SIGKILL)
            await self._release()
        if self.stopping and not self.state.is_terminal:
            self.state.phase = "Failed"  # stopped before its containers could finish
        if self.state.phase == "Failed" and not self.state.reason:
            self._explain_failure()
        self._ctx.changed()

    async def stop(self, grace: float) -> None:
        """Stop everything: SIGTERM now, SIGKILL after ``grace``; return when all is done."""
        await self._halt(grace)
        if self.task is not None:
            await asyncio.gather(self.task, return_exceptions=True)

    def exec_target(self, container: str) -> tuple[Launch, Running] | None:
        """The launch settings and the run of a running container, for ``exec``."""
        process = self._processes.running(container)
        launch = self._config.launches.get(container)
        if process is None or launch is None:
            return None
        return launch, process

    async def _prepare(self) -> None:
        """Before any container: the runtime makes what the pod's containers share; the
        pod's own address (if it has one) is its ``podIP`` and its downward API's."""
        first = self.state.all_containers()[0]
        report = self._ctx.reporter(first.name)
        target = self._ctx.target(first)
        try:
            address = await self._runtime.prepare(target, self.pod["spec"], report)
        except Exception:  # the runtime could not: each container starts on its own as before
            log.exception("could not prepare pod %s", self._ctx.pod_id)
            address = ""
        self.state.pod_ip = address

    async def _release(self) -> None:
        """Every container has ended: the runtime frees what it held for the pod."""
        try:
            await self._runtime.release(self.state.uid)
        except Exception:  # a runtime's failure to clean up must not end the kubelet's task
            log.exception("could not release pod %s", self._ctx.pod_id)

    async def _recover(self) -> None:
        """Take over what an earlier kubelet left of this pod (``recovery``)."""
        status = self.pod.get("status") or {}
        reported = {
            str(s.get("name")): s
            for s in [
                *(status.get("initContainerStatuses") or []),
                *(status.get("containerStatuses") or []),
            ]
        }
        now = self._ctx.now()
        for container in self.state.all_containers():
            record = recovery.read(self.sandbox.record(container.name))
            if record is not None and record.ended is None:
                record = await self._reattach(container, record)
                if record is None:  # its run goes on: followed by ``crashloop``
                    continue
            if recovery.recover(container, reported.get(container.name), record, now):
                self.lost.append(container.name)
        if any(c.current is not None or c.is_running for c in self.state.containers):
            self.state.initialized_at = now  # its containers ran: the init containers are done

    async def _reattach(
        self, container: ContainerState, record: recovery.Record
    ) -> recovery.Record | None:
        """A run an earlier kubelet started and saw no end of (note 120): None when it still
        runs (``container`` is running, the run waits in ``adopted``); else the record with
        the exit its supervisor recorded, or unchanged (lost) when there is none."""
        if not isinstance(self._runtime, runtime.Reattaching):
            return record
        target = dataclasses.replace(self._ctx.target(container), restart=record.restart_count)
        log = self.sandbox.logs(container.name) / f"{record.restart_count}.log"
        found = await self._runtime.reattach(target, record.container_id, log)
        if found is None:
            return record
        if isinstance(found, runtime.Exited):
            code, reason = processes.exit_code(found.returncode), _reason(found.returncode)
            ended = Termination(
                code,
                reason,
                record.started_at,
                found.finished_at or self._ctx.now(),
                container_id=record.container_id,
            )
            with contextlib.suppress(OSError):
                recovery.write_ended(
                    self.sandbox.record(container.name), record.restart_count, ended
                )
            return dataclasses.replace(record, ended=ended)
        container.restart_count = record.restart_count
        container.run(record.started_at, found.pid, found.container_id)
        self._processes.adopted[container.name] = found
        return None

    async def _halt(self, grace: float) -> None:
        self._ctx.stopping.set()
        await self._processes.halt(grace)

    async def _run_init_containers(self) -> bool:
        if self.state.initialized_at:  # recovered: its containers ran already
            return True
        for container in self.state.init_containers:
            if not await self._run_container(container, init=True):
                if not self.state.is_terminal:
                    self.state.phase = "Failed"
                return False
        self.state.initialized_at = self._ctx.now()
        for container in self.state.containers:
            container.wait("ContainerCreating")
        self._ctx.changed()
        return True

    async def _run_containers(self) -> None:
        results = await asyncio.gather(
            *(self._run_container(c, init=False) for c in self.state.containers)
        )
        if not self.state.is_terminal:
            self.state.phase = restartpolicy.phase_when_done(results)

    async def _run_container(self, container: ContainerState, *, init: bool) -> bool:
        launch = self._config.launches[container.name]
        return await self._loop.run(container, launch, init=init)

    async def _fail(self, failure: CannotRun) -> None:
        self.state.fail(failure.reason, str(failure))
        for name in failure.containers:
            container = self.state.container(name)
            if container is not None and not container.is_running:
                message = container.waiting_message or str(failure)
                container.end(self._ctx.never_ran(failure.reason, message))
        await self._halt(grace_of(self.pod))

    def _explain_failure(self) -> None:
        """The pod failed: name the first container that could not start or was lost."""
        for container in self.state.all_containers():
            ended = container.current
            if ended is not None and ended.reason in _EXPLAINED:
                message = f"container {container.name}: {ended.message or ended.reason}"
                self.state.reason, self.state.message = ended.reason, message
                return


def initial_state(pod: Raw, now: str) -> PodState:
    """A pod as first seen: scheduled now, containers waiting (restart counts carried over)."""
    meta, spec = pod["metadata"], pod.get("spec") or {}
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    counts = {s.get("name"): int(s.get("restartCount") or 0) for s in statuses}
    inits = spec.get("initContainers") or []
    first = "PodInitializing" if inits else "ContainerCreating"
    return PodState(
        namespace=meta.get("namespace", ""),
        name=meta["name"],
        uid=str(meta.get("uid", "")),
        scheduled_at=now,
        start_time=now,
        init_containers=[
            ContainerState(c["name"], str(c.get("image") or ""), waiting_reason="PodInitializing")
            for c in inits
        ],
        containers=[
            ContainerState(
                c["name"],
                str(c.get("image") or ""),
                restart_count=counts.get(c["name"], 0),
                waiting_reason=first,
            )
            for c in spec.get("containers") or []
        ],
    )


def _refuse_unrunnable(pod: Raw, pool: gpus.GpuPool) -> None:
    if problems := sandbox.invalid(pod):  # names and paths the sandbox cannot hold
        names = tuple(str(c.get("name")) for c in containers_of(pod))
        raise CannotRun("CreateContainerConfigError", problems, names)
    for container in containers_of(pod):
        wanted = gpus.wanted(container)
        if pool.devices and wanted > len(pool.devices):
            raise CannotRun(
                "UnexpectedAdmissionError",
                f"container {container['name']}: requested {wanted} {gpus.RESOURCE}, "
                f"this machine has {len(pool.devices)}",
            )


def _reason(returncode: int) -> str:
    """The reason of an exit no kubelet watched (an OOM kill cannot be told any more)."""
    return "Completed" if returncode == 0 else "Error"


def grace_of(pod: Raw) -> float:
    """The pod's ``terminationGracePeriodSeconds`` (30 when unset)."""
    return float((pod.get("spec") or {}).get("terminationGracePeriodSeconds", 30))


_EXPLAINED = ("ContainerCannotRun", "StartError", recovery.LOST_REASON)
