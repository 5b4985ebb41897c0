"""One pod's life as processes: configure, init containers in order, containers, stop.

``PodRun.run`` (one task per pod) does, in order:

1. refuse a pod it can never run: names or paths that break Kubernetes' rules (the sandbox
   boundary, ``sandbox.invalid``) fail it at once with ``CreateContainerConfigError``; more
   GPUs than the machine has with ``UnexpectedAdmissionError``;
2. recover what an earlier kubelet left of the pod (``recovery``: a container that ended is
   not run again unless its policy says so; one whose process was lost is
   ``ContainerStatusUnknown``, 137, and counted as a restart);
3. configure: fetch the ConfigMaps and Secrets the pod reads, build the sandbox and volumes,
   resolve every container's env, argv and working directory. A ``ConfigError`` shows the
   container(s) ``waiting: CreateContainerConfigError`` with kubelet's message and is retried
   every ``config_retry`` seconds; after ``config_timeout`` the pod fails with that reason
   (Kubernetes would wait forever; a local run must end);
4. init containers one after the other; then every container at once. Each container's
   loop starts the process, pumps its output to the log, waits for it, kills what is left of
   its process group, and restarts it **in place** per ``restartPolicy`` after a back-off
   (``CrashLoopBackOff``; 10 s doubling to 300 s by default, reset after 10 minutes of
   running, timed by the injected clock), incrementing ``restartCount``. A process that
   cannot be started (no ``command``: ``ContainerCannotRun``; not executable:
   ``StartError``) ends ``terminated`` 128 with the reason and is treated like any exit: it
   backs off and retries under ``OnFailure``/``Always`` and fails the pod under ``Never``.
   An image that cannot be had (``StartError.image``: ``ErrImagePull``,
   ``ErrImageNeverPull``) is not a run: the container only waits with that reason and the
   runtime's message (then ``ImagePullBackOff``) and is tried again after the back-off
   whatever the policy, as kubelet does; the pod stays ``Pending``;
5. phase: ``Pending`` until a container runs, ``Running``, then ``Succeeded`` when every
   container is done with exit code 0, else ``Failed`` (``reason``/``message`` name a
   container that could not start or was lost).

Every start and exit is recorded in the sandbox before the status is sent (``recovery``), and
kubelet's Events (``Created``, ``Started``, ``Failed``, ``BackOff``, ``Killing``) go to
``events``. ``stop(grace)`` (deletion, kubelet shutdown): no more starts or restarts; SIGTERM
to every container's process group, SIGKILL to the groups still alive after ``grace`` seconds.
Every change calls ``on_change``; the kubelet writes the status once per loop turn.
Neighbours: ``kubelet`` (owns the runs), ``sandbox``, ``environment``, ``runtime`` (the seam),
``logfiles``, ``gpus``, ``podstate``, ``recovery``, ``events``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import signal
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainop import errors
from trainop.cluster.kubelet import environment, gpus, overlay, recovery, sandbox
from trainop.cluster.kubelet.environment import ConfigError, Node, Sources
from trainop.cluster.kubelet.logfiles import LogFiles, pump
from trainop.cluster.kubelet.podstate import ContainerState, PodState
from trainop.cluster.kubelet.reaper import Reaper
from trainop.cluster.kubelet.runtimes import host, runtime
from trainop.cluster.kubelet.runtimes.runtime import Launch, Report, Running, StartError
from trainop.cluster.kubelet.status.render import Termination
from trainop.kube.client import Client
from trainop.kube.clock import Clock, LoopClock
from trainop.kube.podevents import PodEvents, PodRef
from trainop.kube.resources import CONFIGMAPS, SECRETS

log = logging.getLogger(__name__)

Raw = dict[str, Any]
CANNOT_RUN_EXIT_CODE = 128  # what container runtimes report for a container never started
NO_COMMAND = runtime.NO_COMMAND
# After a start failed, the container shows kubelet's error reason (RunContainerError,
# CreateContainerError) this long, then CrashLoopBackOff for the rest of the back-off: a
# kubelet shows the error until its next pod sync finds the container backing off.
SYNC_PERIOD = 1.0
NEVER_PULL = "ErrImageNeverPull"


@dataclass(frozen=True, slots=True)
class Backoff:
    """Delay before restarting a container that exited (kubelet's CrashLoopBackOff)."""

    initial: float = 10.0
    maximum: float = 300.0
    reset_after: float = 600.0

    def delay(self, failures: int) -> float:
        return float(min(self.initial * 2 ** max(failures - 1, 0), self.maximum))


@dataclass(frozen=True, slots=True)
class Settings:
    """What every pod run of one kubelet shares."""

    root: Path
    node: Node
    working_dir: Path
    base_env: Mapping[str, str]
    backoff: Backoff = field(default_factory=Backoff)
    config_timeout: float = 30.0
    config_retry: float = 1.0
    exec_address: str = ""


class CannotRun(errors.TrainopError):
    """The pod can never run: it fails with ``reason`` and the message; ``containers`` (not
    started) end ``terminated`` with that reason."""

    def __init__(self, reason: str, message: str, containers: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.reason = reason
        self.containers = containers


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
        events: PodEvents | None = None,
        container_runtime: runtime.Runtime | None = None,
    ) -> None:
        self.pod = pod
        self.state = initial_state(pod, now())
        self.sandbox = sandbox.Sandbox.of(
            settings.root, self.state.namespace, self.state.name, self.state.uid
        )
        self._settings, self._client, self._logs = settings, client, logs
        self._reaper, self._pool, self._now, self._on_change = reaper, pool, now, on_change
        self._clock = clock or LoopClock()
        self._events = events
        self._runtime = container_runtime or host.HostRuntime(reaper)
        self._ref = PodRef(self.state.namespace, self.state.name, self.state.uid)
        self._init_names = {c.name for c in self.state.init_containers}
        self.lost: list[str] = []  # containers whose process an earlier kubelet lost
        self._start_errors: dict[str, StartError] = {}  # waiting after a failed start
        self._launches: dict[str, Launch] = {}
        self._overlay: overlay.Overlay | None = None
        self._processes: dict[str, Running] = {}
        self._stopping = asyncio.Event()
        self._exited: set[str] = set()  # main process ended, run being finished
        self._idle = asyncio.Event()
        self._idle.set()
        self.task: asyncio.Task[None] | None = None

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def start(self) -> None:
        """Start the pod's task."""
        self.task = asyncio.get_running_loop().create_task(self.run())

    async def run(self) -> None:
        """The pod's whole life (see the module docstring)."""
        self._logs.register(self.state.namespace, self.state.name, self.sandbox)
        self._changed()
        try:
            _refuse_unrunnable(self.pod, self._pool)
            self._recover()
            await self._prepare()
            if await self._configure() and await self._run_init_containers():
                await self._run_containers()
        except CannotRun as exc:
            await self._fail(exc)
        finally:
            await self._release()
        if self.stopping and not self.state.is_terminal:
            self.state.phase = "Failed"  # stopped before its containers could finish
        if self.state.phase == "Failed" and not self.state.reason:
            self._explain_failure()
        self._changed()

    async def _prepare(self) -> None:
        """Before any container: the runtime makes what the pod's containers share; the
        pod's own address (if it has one) is its ``podIP`` and its downward API's."""
        first = self.state.all_containers()[0]
        report = self._reporter(first.name)
        try:
            address = await self._runtime.prepare(self._target(first), self.pod["spec"], report)
        except Exception:  # the runtime could not: each container starts on its own as before
            log.exception("could not prepare pod %s", self._ref)
            address = ""
        self.state.pod_ip = address

    async def _release(self) -> None:
        """Every container has ended: the runtime frees what it held for the pod."""
        try:
            await self._runtime.release(self.state.uid)
        except Exception:  # a runtime's failure to clean up must not end the kubelet's task
            log.exception("could not release pod %s", self._ref)

    def _recover(self) -> None:
        """Take over what an earlier kubelet left of this pod (``recovery``)."""
        status = self.pod.get("status") or {}
        reported = {
            str(s.get("name")): s
            for s in [
                *(status.get("initContainerStatuses") or []),
                *(status.get("containerStatuses") or []),
            ]
        }
        now = self._now()
        for container in self.state.all_containers():
            record = recovery.read(self.sandbox.record(container.name))
            if recovery.recover(container, reported.get(container.name), record, now):
                self.lost.append(container.name)
        if any(c.current is not None for c in self.state.containers):
            self.state.initialized_at = now  # its containers ran: the init containers are done

    async def stop(self, grace: float) -> None:
        """Stop everything: SIGTERM now, SIGKILL after ``grace``; return when all is done."""
        await self._halt(grace)
        if self.task is not None:
            await asyncio.gather(self.task, return_exceptions=True)

    async def _halt(self, grace: float) -> None:
        self._stopping.set()
        for name, process in list(self._processes.items()):
            self._event(name, "Normal", "Killing", f"Stopping container {name}")
            process.signal(signal.SIGTERM)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._idle.wait(), timeout=max(grace, 0.0))
        for process in list(self._processes.values()):
            process.signal(signal.SIGKILL)
        await self._idle.wait()

    def exec_target(self, container: str) -> tuple[Launch, Running] | None:
        """The launch settings and the run of a running container, for ``exec``."""
        process = self._processes.get(container)
        launch = self._launches.get(container)
        if process is None or launch is None or container in self._exited:
            return None
        return launch, process

    # --- configuration -------------------------------------------------------------------

    async def _configure(self) -> bool:
        deadline = time.monotonic() + self._settings.config_timeout
        while True:
            problems = await self._try_configure()
            if not problems:
                return True
            for container in self.state.all_containers():
                if container.name in problems:
                    container.wait("CreateContainerConfigError", problems[container.name])
            self._changed()
            if time.monotonic() >= deadline:
                message = "; ".join(f"container {n}: {m}" for n, m in problems.items())
                raise CannotRun("CreateContainerConfigError", message, tuple(problems))
            if await self._stopped_within(self._settings.config_retry):
                return False

    async def _try_configure(self) -> dict[str, str]:
        config_maps, secrets = await self._fetch()
        sources = Sources(
            config_maps={k: _maybe(environment.config_map_data, v) for k, v in config_maps.items()},
            secrets={k: _maybe(environment.decode_secret, v) for k, v in secrets.items()},
        )
        every = [c["name"] for c in _containers(self.pod)]
        try:
            volumes = sandbox.prepare(self.sandbox, self.pod, config_maps, secrets)
        except ConfigError as exc:
            return dict.fromkeys(every, str(exc))
        if self._overlay is None:  # the pod's own Python environment (pip never writes ours)
            self._overlay = await asyncio.to_thread(overlay.prepare, self.sandbox.path)
        problems = {}
        for container in _containers(self.pod):
            try:
                self._launches[container["name"]] = self._launch(container, sources, volumes)
            except ConfigError as exc:
                problems[container["name"]] = str(exc)
        return problems

    async def _fetch(self) -> tuple[dict[str, Raw | None], dict[str, Raw | None]]:
        wanted_maps, wanted_secrets = environment.referenced(self.pod)
        namespace = self.state.namespace
        found: list[dict[str, Raw | None]] = [{}, {}]
        for table, resource, names in ((0, CONFIGMAPS, wanted_maps), (1, SECRETS, wanted_secrets)):
            for name in names:
                try:
                    found[table][name] = await self._client.get(
                        resource, name=name, namespace=namespace
                    )
                except errors.NotFoundError:
                    found[table][name] = None
        return found[0], found[1]

    def _launch(self, container: Raw, sources: Sources, volumes: dict[str, Path]) -> Launch:
        extra = sandbox.variables(self.sandbox, container, volumes)
        extra["HOSTNAME"] = str(self.pod["spec"].get("hostname") or self.state.name)
        extra["TRAINOP_NAMESPACE"] = self.state.namespace  # kubectl's in-cluster namespace
        if self._settings.exec_address:
            extra["TRAINOP_EXEC_ADDRESS"] = self._settings.exec_address
        node = dataclasses.replace(self._settings.node, pod_ip=self.state.pod_ip)
        own = environment.resolve(self.pod, container, sources, node, injected=extra)
        visible = {**extra, **own}
        sandbox.mount(self.sandbox, container, volumes)
        return Launch(
            argv=environment.argv(container, visible) if container.get("command") else [],
            env={**self._settings.base_env, **self._overlay_env(), **visible},
            cwd=sandbox.working_dir(self.sandbox, container, self._settings.working_dir),
            gpus=gpus.wanted(container),
            command=environment.argv({"command": container.get("command")}, visible),
            args=environment.argv({"args": container.get("args")}, visible),
            volumes=dict(volumes),
            spec=container,
            pod_env={"HOSTNAME": extra["HOSTNAME"], **own},
            pod_spec=self.pod["spec"],
        )

    def _overlay_env(self) -> dict[str, str]:
        return self._overlay.environment(dict(self._settings.base_env)) if self._overlay else {}

    # --- running ---------------------------------------------------------------------------

    async def _run_init_containers(self) -> bool:
        if self.state.initialized_at:  # recovered: its containers ran already
            return True
        for container in self.state.init_containers:
            if not await self._run_container(container, init=True):
                if not self.state.is_terminal:
                    self.state.phase = "Failed"
                return False
        self.state.initialized_at = self._now()
        for container in self.state.containers:
            container.wait("ContainerCreating")
        self._changed()
        return True

    async def _run_containers(self) -> None:
        results = await asyncio.gather(
            *(self._run_container(c, init=False) for c in self.state.containers)
        )
        if not self.state.is_terminal:
            self.state.phase = "Succeeded" if all(results) else "Failed"

    async def _run_container(self, container: ContainerState, *, init: bool) -> bool:
        """Run until done for good; True when it ended with exit code 0."""
        if container.current is not None:  # recovered from an earlier kubelet
            code = container.current.exit_code
            if not _restarts(self.pod, code, init=init):
                return code == 0
            if container.current.reason == recovery.LOST_REASON:
                container.last, container.current = container.current, None  # counted already
        launch = self._launches[container.name]
        devices = await self._take_gpus(container, launch.gpus)
        if devices is None:
            return False
        launch = dataclasses.replace(launch, devices=self._pool.present_of(devices))
        env = {**launch.env, **self._pool.variables(devices)}
        try:
            failures = pulls = 0
            while not self.stopping:
                ran = await self._run_once(container, launch, env, init=init)
                if ran is None:  # no image, or refused: nothing ran, no restart policy applies
                    pulls += 1
                    if await self._pull_backed_off(container, self._settings.backoff.delay(pulls)):
                        return False
                    continue
                code, ran_for = ran
                pulls = 0
                if self.stopping or not _restarts(self.pod, code, init=init):
                    return code == 0
                failures = 1 if ran_for > self._settings.backoff.reset_after else failures + 1
                delay = self._settings.backoff.delay(failures)
                start_error = self._start_errors.get(container.name)
                shown = min(SYNC_PERIOD, delay) if start_error else 0.0
                if start_error:  # kubelet's first status after it: the error itself
                    container.wait(start_error.waiting, str(start_error))
                    self._changed()
                    if await self._backed_off(shown):
                        return False
                event = (
                    f"Back-off restarting failed container {container.name} in pod {_pod_id(self)}"
                )
                container.wait("CrashLoopBackOff", _backoff_message(self, container, delay))
                self._event(container.name, "Warning", "BackOff", event)
                self._changed()
                if await self._backed_off(delay - shown):
                    return False
            return False
        finally:
            self._pool.give_back(devices)

    async def _pull_backed_off(self, container: ContainerState, delay: float) -> bool:
        """Wait ``delay`` before trying the image again (kubelet's image pull back-off):
        ``ErrImagePull`` for a sync period, then ``ImagePullBackOff``; ``ErrImageNeverPull``
        throughout (that one is not backed off by kubelet, only tried again). True when the
        pod was stopped meanwhile."""
        failed = self._start_errors[container.name]
        if failed.reason == NEVER_PULL or failed.config:
            return await self._backed_off(delay)
        shown = min(SYNC_PERIOD, delay)
        if await self._backed_off(shown):
            return True
        message = f'Back-off pulling image "{failed.image}"'
        container.wait("ImagePullBackOff", message)
        self._event(container.name, "Normal", "BackOff", message)
        self._event(container.name, "Warning", "Failed", "Error: ImagePullBackOff")
        self._changed()
        return await self._backed_off(delay - shown)

    async def _run_once(
        self, container: ContainerState, launch: Launch, env: dict[str, str], *, init: bool
    ) -> tuple[int, float] | None:
        """One run: its exit code and how long it ran; None when its image could not be had
        (the container was never created)."""
        began = self._clock.now()
        self._start_errors.pop(container.name, None)
        try:
            process = await self._runtime.start(
                self._target(container), launch, env, self._reporter(container.name)
            )
        except StartError as exc:
            if exc.image or exc.config:
                self._pull_failed(container, exc)
                return None
            return self._start_failed(container, exc), 0.0
        self._processes[container.name] = process
        self._idle.clear()
        container.run(self._now(), process.pid, process.container_id)
        self._record(container, None)
        self._event(container.name, "Normal", "Created", f"Created container {container.name}")
        self._event(container.name, "Normal", "Started", f"Started container {container.name}")
        for warning in process.warnings:  # what the runtime could not honour in this start
            self._event(container.name, "Warning", warning.reason, warning.message)
        if self.state.phase == "Pending" and not init:
            self.state.phase = "Running"
        self._changed()
        if self.stopping:  # stop() came while the process was starting
            process.signal(signal.SIGKILL)
        returncode = await self._wait(container, process)
        code, reason = await process.outcome(returncode, killed_by_kubelet=self.stopping)
        ended = Termination(
            code, reason, container.running_since, self._now(), container_id=container.container_id
        )
        container.end(ended)
        self._record(container, ended)
        self._changed()
        return code, (self._clock.now() - began).total_seconds()

    def _target(self, container: ContainerState) -> runtime.Target:
        hostname = str(self.pod["spec"].get("hostname") or self.state.name)
        state = self.state
        return runtime.Target(
            state.namespace,
            state.name,
            state.uid,
            container.name,
            hostname,
            container.next_run,
            subdomain=str(self.pod["spec"].get("subdomain") or ""),
        )

    def _start_failed(self, container: ContainerState, exc: StartError) -> int:
        """A container that could not be started: ``terminated`` 128 with the reason, as a
        container runtime reports a container whose start failed; the policy then decides."""
        reason, message = exc.reason, str(exc)
        self._start_errors[container.name] = exc
        ended = self._never_ran(reason, message)
        container.start_failed(ended)
        self._record(container, ended)
        self._event(container.name, "Warning", "Failed", f"Error: {message}")
        self._changed()
        return CANNOT_RUN_EXIT_CODE

    def _pull_failed(self, container: ContainerState, exc: StartError) -> None:
        """The container's image could not be pulled (or is absent under ``Never``), or the
        runtime refused to create it (``StartError.config``): kubelet never created the
        container, so it only waits, with the runtime's message: no run, no
        ``restartCount``, no ``lastState`` from it (a previous run stays ``lastState``)."""
        self._start_errors[container.name] = exc
        container.wait(exc.waiting, str(exc))
        if exc.config:  # kubelet's event for a container it refuses to create
            self._event(container.name, "Warning", "Failed", f"Error: {exc}")
            self._changed()
            return
        if exc.reason == NEVER_PULL:
            self._event(container.name, "Warning", NEVER_PULL, str(exc))
        else:
            message = f'Failed to pull image "{exc.image}": {exc}'
            self._event(container.name, "Warning", "Failed", message)
        self._event(container.name, "Warning", "Failed", f"Error: {exc.waiting}")
        self._changed()

    def _record(self, container: ContainerState, ended: Termination | None) -> None:
        """Write the run's start or end to the sandbox (what a restarted kubelet reads)."""
        path = self.sandbox.record(container.name)
        try:
            if ended is None:
                recovery.write_started(
                    path, container.restart_count, container.running_since, container.container_id
                )
            else:
                recovery.write_ended(path, container.restart_count, ended)
        except OSError as exc:  # a full disk must not stop the pod
            log.warning("cannot record container %s of %s: %s", container.name, self._ref, exc)

    def _reporter(self, container: str) -> Report:
        """The runtime's reports during one start of ``container``, as its Events."""

        def report(type_: str, reason: str, message: str) -> None:
            self._event(container, type_, reason, message)

        return report

    def _event(self, container: str, type_: str, reason: str, message: str) -> None:
        if self._events is not None:
            init = container in self._init_names
            self._events.record(self._ref, container, type_, reason, message, init=init)

    def _explain_failure(self) -> None:
        """The pod failed: name the first container that could not start or was lost."""
        for container in self.state.all_containers():
            ended = container.current
            if ended is not None and ended.reason in _EXPLAINED:
                message = f"container {container.name}: {ended.message or ended.reason}"
                self.state.reason, self.state.message = ended.reason, message
                return

    async def _wait(self, container: ContainerState, process: Running) -> int:
        path = self.sandbox.logs(container.name) / f"{container.restart_count}.log"
        sink = self._logs.open(path)
        pumps = [
            asyncio.ensure_future(pump(self._logs, path, sink, "stdout", process.stdout)),
            asyncio.ensure_future(pump(self._logs, path, sink, "stderr", process.stderr)),
        ]
        try:
            returncode = await process.wait()
        finally:
            self._exited.add(container.name)
            await process.finish()  # what the process left behind
            await asyncio.gather(*pumps, return_exceptions=True)
            self._logs.close(path, sink)
            del self._processes[container.name]
            self._exited.discard(container.name)
            if not self._processes:
                self._idle.set()
        return returncode

    async def _take_gpus(self, container: ContainerState, count: int) -> list[str] | None:
        while (devices := self._pool.take(count)) is None:
            free, total = self._pool.free, len(self._pool.devices)
            container.wait(
                "ContainerCreating", f"waiting for {count} {gpus.RESOURCE}: {free} of {total} free"
            )
            self._changed()
            released = asyncio.ensure_future(self._pool.released())
            stopped = asyncio.ensure_future(self._stopping.wait())
            await asyncio.wait([released, stopped], return_when=asyncio.FIRST_COMPLETED)
            released.cancel()
            stopped.cancel()
            if self.stopping:
                return None
        return devices

    # --- helpers ---------------------------------------------------------------------------

    async def _fail(self, failure: CannotRun) -> None:
        self.state.fail(failure.reason, str(failure))
        for name in failure.containers:
            container = self.state.container(name)
            if container is not None and not container.is_running:
                message = container.waiting_message or str(failure)
                container.end(self._never_ran(failure.reason, message))
        await self._halt(grace_of(self.pod))

    def _never_ran(self, reason: str, message: str) -> Termination:
        now = self._now()
        return Termination(CANNOT_RUN_EXIT_CODE, reason, now, now, message)

    async def _stopped_within(self, seconds: float) -> bool:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), timeout=seconds)
        return self.stopping

    async def _backed_off(self, seconds: float) -> bool:
        """Wait ``seconds`` of the injected clock; True when the pod was stopped meanwhile."""
        slept = asyncio.ensure_future(self._clock.sleep(seconds))
        stopped = asyncio.ensure_future(self._stopping.wait())
        try:
            await asyncio.wait([slept, stopped], return_when=asyncio.FIRST_COMPLETED)
        finally:
            slept.cancel()
            stopped.cancel()
        return self.stopping

    def _changed(self) -> None:
        self._on_change(self)


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


def _containers(pod: Raw) -> list[Raw]:
    spec = pod.get("spec") or {}
    return [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]


def _refuse_unrunnable(pod: Raw, pool: gpus.GpuPool) -> None:
    if problems := sandbox.invalid(pod):  # names and paths the sandbox cannot hold
        names = tuple(str(c.get("name")) for c in _containers(pod))
        raise CannotRun("CreateContainerConfigError", problems, names)
    for container in _containers(pod):
        wanted = gpus.wanted(container)
        if pool.devices and wanted > len(pool.devices):
            raise CannotRun(
                "UnexpectedAdmissionError",
                f"container {container['name']}: requested {wanted} {gpus.RESOURCE}, "
                f"this machine has {len(pool.devices)}",
            )


def grace_of(pod: Raw) -> float:
    """The pod's ``terminationGracePeriodSeconds`` (30 when unset)."""
    return float((pod.get("spec") or {}).get("terminationGracePeriodSeconds", 30))


def _restarts(pod: Raw, code: int, *, init: bool) -> bool:
    policy = (pod.get("spec") or {}).get("restartPolicy") or "Always"
    if init:
        return policy != "Never" and code != 0
    return policy == "Always" or (policy == "OnFailure" and code != 0)


def _backoff_message(run: PodRun, container: ContainerState, delay: float) -> str:
    return f"back-off {delay:g}s restarting failed container={container.name} pod={_pod_id(run)}"


def _pod_id(run: PodRun) -> str:
    state = run.state
    return f"{state.name}_{state.namespace}({state.uid})"


_EXPLAINED = ("ContainerCannotRun", "StartError", recovery.LOST_REASON)


def _maybe(convert: Callable[[Raw], dict[str, str]], obj: Raw | None) -> dict[str, str] | None:
    return None if obj is None else convert(obj)
