"""``Kubelet``: runs the pods of the local node through its runtime (DESIGN §6).

The ``shell.KubeletShell`` watches pods; every pod that is bound to ``node_name`` (or, unless
``require_binding``, unbound) and not yet finished is run here by a ``podrun.PodRun`` task.
This module makes the shell's calls real (admit, terminate, gone) and reports runs' changes
to it: every change marks the pod dirty, and one status patch per loop turn is queued if the
rendered status differs from the last one written, so a transition is one write and nothing
is written twice. Kubelet's Events about pods go through one ``kube.events.EventRecorder``
(source ``kubelet`` on the node, repeats aggregated).

Deletion: a pod the API server deletes gracefully (``deletionTimestamp`` set, bound to a node)
is stopped with its ``deletionGracePeriodSeconds`` (SIGTERM at once, SIGKILL that many seconds
after, as kubelet counts from when it sees the deletion; a later DELETE that shortens the
period makes the SIGKILL come sooner), its final status
written (``Succeeded`` only when every container exited 0, else ``Failed``) and then deleted
(a terminal pod is removed at once). A pod removed outright (unbound pods are) is stopped with
its ``terminationGracePeriodSeconds`` and forgotten; its sandbox is removed unless
``keep_sandboxes``. When the kubelet stops (``run`` cancelled) it stops every pod with
``shutdown_grace`` and writes nothing more (with ``keep_containers``, containers run under
supervisors that a SIGKILL of the kubelet spares, and a restarted kubelet re-attaches to
them: note 120). Pods are never resurrected: writes carry the pod's
uid and are dropped once the kubelet no longer tracks that uid.
Neighbours: ``shell``, ``podrun``, ``logfiles`` (the API's ``LogSource``), ``execserver``,
``reaper``, ``status``, ``kube.events``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainop.cluster.kubelet import gpus, node, podrun, sandbox
from trainop.cluster.kubelet.environment import Node
from trainop.cluster.kubelet.exec import execserver
from trainop.cluster.kubelet.logfiles import LogFiles
from trainop.cluster.kubelet.podcontext import Backoff, Settings
from trainop.cluster.kubelet.podrun import PodRun
from trainop.cluster.kubelet.podstate import HOST_IP
from trainop.cluster.kubelet.reaper import Reaper
from trainop.cluster.kubelet.runtimes import supervised
from trainop.cluster.kubelet.runtimes.runtime import Launch, Running, Runtime
from trainop.cluster.kubelet.shell import KubeletShell
from trainop.cluster.kubelet.status.writer import Key
from trainop.kube.client import Client, Obj
from trainop.kube.clock import Clock, LoopClock
from trainop.kube.events import EventRecorder, Source

log = logging.getLogger(__name__)

DEFAULT_NODE = "trainop-local"
COMPONENT = "kubelet"  # the Events' source, as kubectl describe shows it under "From"
_HIDDEN = ("CUDA_VISIBLE_DEVICES",)  # managed per container (``gpus``)


@dataclass(frozen=True, slots=True)
class KubeletConfig:
    """How the kubelet runs pods (see notes 060 and 095)."""

    root: Path
    node_name: str = DEFAULT_NODE
    working_dir: Path | None = None  # default: the kubelet's working directory
    backoff: Backoff = field(default_factory=Backoff)
    config_timeout: float = 30.0
    config_retry: float = 1.0
    gpus: tuple[str, ...] | None = None  # None: detect with nvidia-smi
    keep_sandboxes: bool = False
    shutdown_grace: float = 5.0
    base_env: Mapping[str, str] | None = None  # default: the kubelet's own environment
    node_cpus: float | None = None  # the Node's exact cpu capacity (default: ``cpus``)
    exec_wait: float = 60.0  # how long exec waits for a pod or container still starting
    require_binding: bool = False  # run only pods bound to node_name (a scheduler binds them)
    cpus: int | None = None  # the node's CPUs (None: the machine's; ``local up --cpus``)
    memory: int | None = None  # the node's memory in bytes (None: the machine's)
    # host containers outlive the kubelet under supervisors, and a restarted kubelet
    # re-attaches to them (``runtimes.supervised``, note 120): ``trainop local up``'s daemon
    keep_containers: bool = False


class Kubelet(KubeletShell):
    """A kubelet whose containers are local processes (see the module docstring)."""

    def __init__(
        self,
        *,
        client: Client,
        config: KubeletConfig,
        namespace: str | None = None,
        label_selector: str = "",
        clock: Clock | None = None,
        logs: LogFiles | None = None,
        max_concurrent_writes: int = 32,
        container_runtime: Runtime | None = None,
    ) -> None:
        clock = clock or LoopClock()
        super().__init__(
            client=client,
            clock=clock,
            node_name=config.node_name,
            namespace=namespace,
            label_selector=label_selector,
            require_binding=config.require_binding,
            max_concurrent_writes=max_concurrent_writes,
        )
        self._client = client
        self._runtime = container_runtime  # None: host processes (``host.HostRuntime``)
        self._config = config
        self.logs = logs or LogFiles(config.root)
        self._runs: dict[Key, PodRun] = {}
        self._graces: dict[Key, float] = {}  # the grace period each deletion is stopping with
        self._tasks: set[asyncio.Task[None]] = set()
        source = Source(COMPONENT, host=config.node_name)
        self.events = EventRecorder(client=client, clock=clock, source=source, aggregate=True)
        self._settings: Settings | None = None
        self._reaper: Reaper | None = None
        self._pool = gpus.GpuPool(())
        self._exec: execserver.ExecServer | None = None
        self.node: node.NodeStatus | None = None  # the Node object's heartbeat (``node``)
        self._next_change = asyncio.Event()  # set (and replaced) whenever a run changes

    @property
    def exec_address(self) -> str:
        """Where ``execclient`` reaches this kubelet (set once ``run`` has started)."""
        return self._exec.address if self._exec is not None else ""

    @property
    def reaper_pid(self) -> int:
        """The watchdog process's id (0 before ``run``), for diagnostics and tests."""
        return self._reaper.pid if self._reaper is not None else 0

    def pod(self, namespace: str, name: str) -> PodRun | None:
        """The run of a pod this kubelet tracks, or None."""
        return self._runs.get((namespace, name))

    async def drained(self) -> None:
        """Return once every status write and Event queued so far has been sent."""
        await super().drained()
        await self.events.drained()

    async def _setup(self) -> None:
        config = self._config
        found = await asyncio.to_thread(gpus.detect)
        devices = config.gpus if config.gpus is not None else found
        self._pool = gpus.GpuPool(devices, present=found)
        self._reaper = Reaper()
        if self._runtime is None and config.keep_containers:
            self._runtime = supervised.SupervisedRuntime(config.root, self._reaper)
        self._exec = await execserver.ExecServer.start(self._exec_target)
        self._settings = _settings(config, self._exec.address)
        self.node = node.NodeStatus(
            self._client,
            name=config.node_name,
            capacity=node.Capacity(
                config.node_cpus or self._settings.node.cpus,
                self._settings.node.memory_bytes,
                len(devices),
            ),
            host_ip=HOST_IP,
            clock=self._clock,
            exec_address=self._exec.address,
        )
        self._spawn(self.node.run())
        if self._runtime is not None:
            await self._runtime.open()
            if (exec_socket := getattr(self._runtime, "exec_socket", None)) is not None:
                self._exec.listen(exec_socket)  # containers reach exec through a file

    async def _shutdown(self) -> None:
        runs = list(self._runs.values())
        await asyncio.gather(
            *(r.stop(self._config.shutdown_grace) for r in runs), return_exceptions=True
        )
        if self._runtime is not None:
            await self._runtime.close()
        for task in list(self._tasks):
            task.cancel()
        self.events.cancel()
        if self._exec is not None:
            await self._exec.close()
        if self._reaper is not None:
            self._reaper.close()

    # --- pods -----------------------------------------------------------------------------

    def _admit(self, key: Key, pod: Obj) -> None:
        assert self._settings is not None
        assert self._reaper is not None
        run = PodRun(
            pod,
            settings=self._settings,
            client=self._client,
            logs=self.logs,
            reaper=self._reaper,
            pool=self._pool,
            now=self._now,
            on_change=self._changed,
            clock=self._clock,
            events=self.events,
            container_runtime=self._runtime,
        )
        self._runs[key] = run
        run.start()

    def _terminate(self, key: Key, pod: Obj) -> None:
        run = self._runs.get(key)
        if run is None:
            if not self._adopt(key, pod):
                return
            state = podrun.initial_state(pod, self._now())  # left by an earlier kubelet
            state.phase = "Failed"  # nothing follows it: its supervised runs end now
            if self._config.keep_containers:
                pod_box = sandbox.Sandbox.of(
                    self._config.root, state.namespace, state.name, state.uid
                )
                self._spawn(asyncio.to_thread(supervised.reap, pod_box.path))
            self.writer.patch_status(key, state.uid, state.status())
            self.writer.delete(key, state.uid)
            return
        grace = float(pod["metadata"].get("deletionGracePeriodSeconds") or 0)
        if run.stopping:
            if grace < self._graces.get(key, grace):  # a later DELETE shortened it: kill sooner
                self._graces[key] = grace
                self._spawn(run.stop(grace))
            return
        self._graces[key] = grace
        self._spawn(self._finish_deletion(key, run, grace))

    async def _finish_deletion(self, key: Key, run: PodRun, grace: float) -> None:
        await run.stop(grace)
        self._graces.pop(key, None)
        self._flush(key)
        self.writer.delete(key, run.state.uid)

    def _gone(self, key: Key, uid: str, pod: Obj) -> None:
        self.events.forget(uid)
        run = self._runs.pop(key, None)
        if run is not None:
            self._spawn(self._discard(run, podrun.grace_of(pod)))

    async def _discard(self, run: PodRun, grace: float) -> None:
        await run.stop(grace)
        self.logs.forget(run.state.namespace, run.state.name, run.sandbox)
        if not self._config.keep_sandboxes:
            await asyncio.to_thread(run.sandbox.remove)

    def _spawn(self, work: Any) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("pod task failed", exc_info=task.exception())

    # --- status ---------------------------------------------------------------------------

    def _changed(self, run: PodRun) -> None:
        self._next_change.set()
        self._next_change = asyncio.Event()
        self._mark_changed((run.state.namespace, run.state.name))

    def _render(self, key: Key) -> tuple[str, dict[str, Any]] | None:
        run = self._runs.get(key)
        if run is None:
            return None
        run.state.note_readiness(self._now())
        return run.state.uid, run.state.status()

    # --- exec -----------------------------------------------------------------------------

    async def _exec_target(
        self, namespace: str, name: str, container: str
    ) -> tuple[Launch, Running] | str:
        """The container to exec into, waiting up to ``exec_wait`` while the pod is starting.
        Why: an MPI launcher may call before its workers' processes run (upstream's
        kubectl-delivery init container waited for them; local mode has none). The workers
        are created first, so this kubelet knows them by then: an unknown pod fails at once."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._config.exec_wait
        while True:
            change = self._next_change
            found, starting = self._exec_lookup(namespace, name, container)
            remaining = deadline - loop.time()
            if not starting or remaining <= 0:
                return found
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(change.wait(), timeout=remaining)

    def _by_hostname(self, namespace: str, hostname: str) -> PodRun | None:
        """The running pod whose ``spec.hostname`` is ``hostname``: an MPI TrainJob's hostfile
        names JobSet pods by hostname (``<tj>-node-0-0``), their pod names carry a suffix."""
        for (found_namespace, _), run in self._runs.items():
            spec = run.pod.get("spec") or {}
            same = found_namespace == namespace and spec.get("hostname") == hostname
            if same and not run.stopping and not run.state.is_terminal:
                return run
        return None

    def _exec_lookup(
        self, namespace: str, name: str, container: str
    ) -> tuple[tuple[Launch, Running] | str, bool]:
        """The exec target or why not, and whether that may change (the pod is starting)."""
        run = self._runs.get((namespace, name)) or self._by_hostname(namespace, name)
        if run is None:
            return f'pods "{name}" not found', False
        names = [c.name for c in run.state.all_containers()]
        chosen = container or (names[-1] if len(run.state.containers) == 1 else "")
        if not chosen:
            return (
                f"a container name must be specified for pod {name}, choose one of: {names}",
                False,
            )
        target = run.exec_target(chosen)
        if target is None:
            state = run.state.container(chosen)
            starting = state is not None and not run.stopping and not run.state.is_terminal
            return f"container {chosen} is not running in pod {name}", starting
        return target, False


def host_environment() -> dict[str, str]:
    """The kubelet's environment with its own interpreter's ``bin`` first on ``PATH``.

    Containers run on the host Python environment trainop runs in (DESIGN §6): ``python3``,
    ``torchrun`` or ``mpirun`` in a command resolve there first, also when the virtual
    environment is not activated in the shell that started trainop.
    """
    env = dict(os.environ)
    interpreter_bin = str(Path(sys.executable).parent)
    rest = [d for d in env.get("PATH", "").split(os.pathsep) if d and d != interpreter_bin]
    env["PATH"] = os.pathsep.join([interpreter_bin, *rest])
    return env


def _settings(config: KubeletConfig, exec_address: str) -> Settings:
    base = dict(config.base_env if config.base_env is not None else host_environment())
    for name in _HIDDEN:
        base.pop(name, None)
    page = config.memory or os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    cpus = config.cpus or os.cpu_count() or 1
    return Settings(
        root=config.root,
        node=Node(config.node_name, HOST_IP, cpus, page),
        working_dir=config.working_dir or Path.cwd(),
        base_env=base,
        backoff=config.backoff,
        config_timeout=config.config_timeout,
        config_retry=config.config_retry,
        exec_address=exec_address,
    )
