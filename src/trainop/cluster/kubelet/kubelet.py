"""``Kubelet``: runs the pods of the local node through its runtime (DESIGN §6).

One informer watches pods; every pod that is bound to ``node_name`` (or, unless
``require_binding``, unbound) and not yet finished is run here by a ``podrun.PodRun`` task.
This module wires events to runs and runs to
the shared ``status.writer.StatusWriter``: every change a run reports marks the pod dirty,
and one status patch per loop turn is queued if the rendered status differs from the last one
written, so a transition is one write and nothing is written twice.

Deletion: a pod the API server deletes gracefully (``deletionTimestamp`` set, bound to a node)
is stopped with its ``deletionGracePeriodSeconds`` (SIGTERM, then SIGKILL), its final status
written (``Succeeded`` only when every container exited 0, else ``Failed``) and then deleted
(a terminal pod is removed at once). A pod removed outright (unbound pods are) is stopped with
its ``terminationGracePeriodSeconds`` and forgotten; its sandbox is removed unless
``keep_sandboxes``. When the kubelet stops (``run`` cancelled) it stops every pod with
``shutdown_grace`` and writes nothing more. Pods are never resurrected: writes carry the pod's
uid and are dropped once the kubelet no longer tracks that uid.
Neighbours: ``kube.informer``, ``podrun``, ``logfiles`` (the API's ``LogSource``),
``execserver``, ``reaper``, ``status``.
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

from trainop.cluster.kubelet import gpus, node, podrun
from trainop.cluster.kubelet.environment import Node
from trainop.cluster.kubelet.exec import execserver
from trainop.cluster.kubelet.logfiles import LogFiles
from trainop.cluster.kubelet.podrun import Backoff, PodRun, Settings
from trainop.cluster.kubelet.podstate import HOST_IP
from trainop.cluster.kubelet.reaper import Reaper
from trainop.cluster.kubelet.runtimes.runtime import Launch, Running, Runtime
from trainop.cluster.kubelet.status.render import TERMINAL
from trainop.cluster.kubelet.status.writer import Key, StatusWriter
from trainop.kube.client import Client, Obj
from trainop.kube.clock import Clock, LoopClock
from trainop.kube.informer import Handlers, Informer, key_of
from trainop.kube.podevents import PodEvents
from trainop.kube.resources import PODS

log = logging.getLogger(__name__)

DEFAULT_NODE = "trainop-local"
_HIDDEN = ("CUDA_VISIBLE_DEVICES",)  # managed per container (``gpus``)


@dataclass(frozen=True, slots=True)
class KubeletConfig:
    """How the process kubelet runs pods (see note 060)."""

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


class Kubelet:
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
        self._client = client
        self._runtime = container_runtime  # None: host processes (``runtime.HostRuntime``)
        self._config = config
        self._clock = clock or LoopClock()
        self.logs = logs or LogFiles(config.root)
        self._runs: dict[Key, PodRun] = {}
        self._uids: dict[Key, str] = {}
        self._dirty: set[Key] = set()
        self._written: dict[Key, dict[str, Any]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._informer = Informer(
            client,
            PODS,
            namespace=namespace,
            label_selector=label_selector,
            handlers=[Handlers(self._on_change)],
        )
        self.writer = StatusWriter(
            client, self._clock, is_wanted=self._is_wanted, max_concurrent=max_concurrent_writes
        )
        self.events = PodEvents(client, self._clock, node=config.node_name)
        self._settings: Settings | None = None
        self._reaper: Reaper | None = None
        self._pool = gpus.GpuPool(())
        self._exec: execserver.ExecServer | None = None
        self.node: node.NodeStatus | None = None  # the Node object's heartbeat (``node``)
        self._next_change = asyncio.Event()  # set (and replaced) whenever a run changes

    @property
    def synced(self) -> asyncio.Event:
        """Set once the first list of pods has been handled."""
        return self._informer.synced

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

    async def run(self) -> None:
        """Run pods until cancelled; then stop them all (``shutdown_grace``)."""
        config = self._config
        found = await asyncio.to_thread(gpus.detect)
        devices = config.gpus if config.gpus is not None else found
        self._pool = gpus.GpuPool(devices, present=found)
        self._reaper = Reaper()
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
        try:
            await self._informer.run()
        finally:
            await self._shutdown()

    async def drained(self) -> None:
        """Return once every status write queued so far has been sent."""
        await asyncio.sleep(0)  # let this turn's dirty pods be flushed
        await self.writer.drained()
        await self.events.drained()

    async def _shutdown(self) -> None:
        runs = list(self._runs.values())
        await asyncio.gather(
            *(r.stop(self._config.shutdown_grace) for r in runs), return_exceptions=True
        )
        if self._runtime is not None:
            await self._runtime.close()
        for task in list(self._tasks):
            task.cancel()
        self.writer.cancel()
        self.events.cancel()
        if self._exec is not None:
            await self._exec.close()
        if self._reaper is not None:
            self._reaper.close()

    # --- events ---------------------------------------------------------------------------

    def _on_change(self, old: Obj | None, new: Obj | None) -> None:
        if new is None:
            assert old is not None
            self._gone(key_of(old), _uid(old), old)
            return
        key = key_of(new)
        known = self._uids.get(key)
        if known is not None and known != _uid(new):
            self._gone(key, known, new)  # replaced by a new pod of the same name
            known = None
        if new["metadata"].get("deletionTimestamp"):
            self._terminate(key, new)
        elif known is None and self._is_mine(new):
            self._admit(key, new)

    def _is_mine(self, pod: Obj) -> bool:
        node = (pod.get("spec") or {}).get("nodeName") or ""
        phase = (pod.get("status") or {}).get("phase") or "Pending"
        accepted = (
            (self._config.node_name,)
            if self._config.require_binding
            else ("", self._config.node_name)
        )
        return node in accepted and phase not in TERMINAL

    def _is_wanted(self, key: Key, uid: str) -> bool:
        return self._uids.get(key) == uid

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
        self._runs[key], self._uids[key] = run, run.state.uid
        run.start()

    def _terminate(self, key: Key, pod: Obj) -> None:
        run = self._runs.get(key)
        if run is None:
            if not self._is_mine(pod) or self._uids.get(key):
                return
            self._uids[key] = _uid(pod)  # left running by an earlier kubelet: nothing runs
            state = podrun.initial_state(pod, self._now())
            state.phase = "Failed"
            self.writer.patch_status(key, state.uid, state.status())
            self.writer.delete(key, state.uid)
            return
        if run.stopping:
            return
        grace = float(pod["metadata"].get("deletionGracePeriodSeconds") or 0)
        self._spawn(self._finish_deletion(key, run, grace))

    async def _finish_deletion(self, key: Key, run: PodRun, grace: float) -> None:
        await run.stop(grace)
        self._flush(key)
        self.writer.delete(key, run.state.uid)

    def _gone(self, key: Key, uid: str, pod: Obj) -> None:
        if self._uids.get(key) != uid:
            return
        del self._uids[key]
        self._written.pop(key, None)
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
        key = (run.state.namespace, run.state.name)
        if key not in self._dirty:
            self._dirty.add(key)
            asyncio.get_running_loop().call_soon(self._flush, key)

    def _flush(self, key: Key) -> None:
        self._dirty.discard(key)
        run = self._runs.get(key)
        if run is None:
            return
        run.state.note_readiness(self._now())
        status = run.state.status()
        if status != self._written.get(key):
            self._written[key] = status
            self.writer.patch_status(key, run.state.uid, status)

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

    def _exec_lookup(
        self, namespace: str, name: str, container: str
    ) -> tuple[tuple[Launch, Running] | str, bool]:
        """The exec target or why not, and whether that may change (the pod is starting)."""
        run = self._runs.get((namespace, name))
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

    def _now(self) -> str:
        return self._clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")


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


def _uid(pod: Obj) -> str:
    return str(pod["metadata"].get("uid", ""))
