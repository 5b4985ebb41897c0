"""A local session in one process: the embedded cluster (``trainop.cluster``) and the operator.

``LocalCluster`` is what ``trainop run`` and ``trainop local up`` start. Order: the API server
(state in ``state_dir``; a kubeconfig is written for any client), the job kinds' CRDs (installed or
updated), then the controller — the same ``Manager`` as ``trainop operator``, with the local
topology (loopback ports, ``local.topology``) — and a kubelet that runs pods: the kubelet
(host processes or containers) for real jobs, or the simulated one. ``async with
LocalCluster(...)`` returns once the controller's caches have synced; leaving stops the kubelet
first (its processes are terminated), then the controller, then the server. With
``ClusterConfig.operator`` off (``trainop local up --no-operator``) there is no controller: the
cluster serves an operator run elsewhere (``trainop operator``, its image), none racing it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

from trainop import errors
from trainop.api.trainer.constants import TRAINJOB
from trainop.cluster import privacy
from trainop.cluster.apiserver import ApiServer, Limits, ServerConfig
from trainop.cluster.controllers import jobs as batchjob
from trainop.cluster.controllers.jobset.controller import JobSetController
from trainop.cluster.controllers.volumes import LocalProvisioner
from trainop.cluster.kubelet import DEFAULT_NODE, Kubelet, KubeletConfig, LogFiles, gpus
from trainop.cluster.kubelet.exec import execclient, sshclient
from trainop.cluster.kubelet.runtimes import containers
from trainop.cluster.kubelet.runtimes.runtime import Runtime
from trainop.cluster.scheduler import scheduler as scheduler_module
from trainop.controller.manager import Manager, ManagerOptions
from trainop.controller.topologies import (
    ClusterTopologySource,
    ClusterTrainJobNetworks,
    TopologySource,
    TrainJobNetworks,
)
from trainop.frameworks.options import FrameworkOptions
from trainop.frameworks.registry import REGISTRY
from trainop.kube.client import Client
from trainop.kube.clock import Clock, LoopClock
from trainop.kube.http import HttpClient
from trainop.kube.podlogs import LogSource, MemoryLogSource
from trainop.kube.resources import CRDS
from trainop.local import crd_cache, ports, trainer_runtimes
from trainop.local.topology import LocalTopologySource
from trainop.local.trainjob_topology import LocalTrainJobNetworks


class Component(Protocol):
    async def run(self) -> None:
        """Run until cancelled; on cancellation, stop everything it started."""
        ...


class KubeletComponent(Component, Protocol):
    async def drained(self) -> None:
        """Return once everything the kubelet has decided so far is written to the API."""
        ...


KubeletFactory = Callable[[Client, Clock], KubeletComponent]
SchedulerFactory = Callable[[HttpClient], Component]  # anything with ``run`` until cancelled


@dataclass(frozen=True, slots=True)
class ClusterConfig:
    """Where state lives and what the controller runs."""

    state_dir: Path
    port: int = 0
    kubeconfig: Path | None = None
    manager: ManagerOptions = field(default_factory=ManagerOptions)
    ports: range | None = None  # replicas' loopback ports (default: $TRAINOP_LOCAL_PORTS)
    # Admission ceilings: replicas per job, pods in the cluster (--max-replicas-per-job ...).
    limits: Limits = field(default_factory=Limits)
    operator: bool = True  # False: no embedded controller (``local up --no-operator``)
    trainer_runtimes: bool = False  # install the shipped Trainer runtimes (note 133)
    # ``trainop run`` of a kubeflow.org/v1 job without ``--keep``: the job's kind, the one CRD
    # installed and the one kind the controller runs (nobody else uses the session: no
    # Trainer runtimes, no JobSet controller); "" for every kind (``run_kind``)
    job_kind: str = ""


class LocalCluster:
    """API server + controller + kubelet; use as an async context manager."""

    def __init__(
        self,
        config: ClusterConfig,
        *,
        kubelet: KubeletFactory,
        log_source: LogSource | None = None,
        clock: Clock | None = None,
        scheduler: SchedulerFactory | None = None,
        cluster_addressing: bool = False,
        container_runtime: Runtime | None = None,
    ) -> None:
        self._config = _narrowed(config)
        self._runtime = container_runtime  # closed on stop, also when the kubelet never ran
        self._cluster_addressing = cluster_addressing  # names and template ports (containers)
        self._kubelet_factory = kubelet
        self._scheduler_factory = scheduler
        self._clock = clock or LoopClock()
        privacy.private_state_dir(config.state_dir)  # umask 077, the directory 0700
        self.server = ApiServer(
            ServerConfig(
                state_dir=config.state_dir,
                port=config.port,
                kubeconfig=config.kubeconfig,
                log_source=log_source or MemoryLogSource(),
                limits=config.limits,
            )
        )
        self._tasks: list[asyncio.Task[None]] = []
        self._client: HttpClient | None = None
        self.manager: Manager | None = None
        self.kubelet: KubeletComponent | None = None  # tests await ``kubelet.drained()``

    @property
    def kubeconfig(self) -> Path:
        return self.server.kubeconfig_path

    @property
    def client(self) -> HttpClient:
        if self._client is None:
            raise errors.TrainopError("the local cluster is not started")
        return self._client

    async def __aenter__(self) -> LocalCluster:
        await self.server.start()
        try:
            self._client = HttpClient.from_kubeconfig(path=str(self.kubeconfig))
            await install_crds(self._client, kind=self._config.job_kind)
            if self._config.trainer_runtimes:
                await trainer_runtimes.install(self._client)
            if self._scheduler_factory is not None:
                await _install_each(self._client, scheduler_module.podgroup_crds())
            topologies: TopologySource = ClusterTopologySource()
            networks: TrainJobNetworks = ClusterTrainJobNetworks()
            if not self._cluster_addressing:  # one pool: no two jobs of any kind share a port
                pool = ports.PortPool(ports=self._config.ports)
                topologies = LocalTopologySource(client=self._client, pool=pool)
                launcher = mpi_launcher_env(self._config.manager.engine.frameworks)
                networks = LocalTrainJobNetworks(
                    client=self._client, pool=pool, launcher_env=launcher
                )
            kubelet = self.kubelet = self._kubelet_factory(self._client, self._clock)
            jobs = batchjob.LocalJobController(client=self._client, clock=self._clock)
            self._tasks = [
                asyncio.create_task(kubelet.run(), name="kubelet"),
                asyncio.create_task(jobs.run(), name="job-controller"),
                asyncio.create_task(self._provisioner().run(), name="provisioner"),
            ]
            if not self._config.job_kind:  # JobSets only where their CRD is installed
                jobsets = JobSetController(client=self._client, clock=self._clock)
                self._tasks.append(asyncio.create_task(jobsets.run(), name="jobset-controller"))
            if self._config.operator:
                self.manager = Manager(
                    client=self._client,
                    clock=self._clock,
                    options=self._config.manager,
                    topologies=topologies,
                    networks=networks,
                )
                self._tasks.insert(1, asyncio.create_task(self.manager.run(), name="controller"))
            if self._scheduler_factory is not None:
                scheduler = self._scheduler_factory(self._client)
                self._tasks.append(asyncio.create_task(scheduler.run(), name="scheduler"))
            await self._until_ready()
        except BaseException:
            await self._stop()
            raise
        return self

    def _provisioner(self) -> LocalProvisioner:
        """Claims bound to directories of the state, gone with it (note 132)."""
        root = self._config.state_dir / "volumes"
        return LocalProvisioner(client=self.client, clock=self._clock, root=root)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self._stop()

    async def _until_ready(self) -> None:
        """Wait for the controller's caches; a component that dies first raises its error."""
        synced = asyncio.create_task(self._synced(), name="caches")
        watched: list[asyncio.Task[None]] = [synced, *self._tasks]
        done, _ = await asyncio.wait(watched, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            if task is not synced:
                task.result()
                raise errors.TrainopError(f"the local {task.get_name()} stopped at start")

    async def _synced(self) -> None:
        informers = self.manager.informers() if self.manager is not None else []
        await asyncio.gather(*(i.synced.wait() for i in informers))

    async def _stop(self) -> None:
        for task in self._tasks:  # kubelet first: its processes must not outlive the session
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        if self._runtime is not None:
            await self._runtime.close()
        if self._client is not None:
            await self._client.close()
            self._client = None
        await self.server.stop()


async def install_crds(client: Client, *, kind: str = "") -> None:
    """Install the CRD of every kind, or bring an installed one up to this version's schema:
    the kubeflow.org/v1 kinds, Trainer v2's three and JobSet's (so clients can create
    TrainJobs and JobSets); with ``kind``, that kind's alone (``ClusterConfig.job_kind``:
    the 12 CRDs are 4 MB of schemas, ~1 s of the API server's time under load, issue 24).

    All at once: the server's group commit then makes the CRD writes durable together. The
    CRDs come from ``crd_cache`` (built once per version of the models, not at every session).
    """
    crds = crd_cache.session_crds()
    await _install_each(client, [c for c in crds if not kind or c["spec"]["names"]["kind"] == kind])


async def _install_each(client: Client, definitions: list[dict[str, Any]]) -> None:
    await asyncio.gather(*(_install_crd(client, crd) for crd in definitions))


async def _install_crd(client: Client, crd: dict[str, Any]) -> None:
    try:
        await client.create(CRDS, crd)
    except errors.AlreadyExistsError:
        current = await client.get(CRDS, name=crd["metadata"]["name"])
        crd["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        await client.replace(CRDS, crd)


def _narrowed(config: ClusterConfig) -> ClusterConfig:
    """``config`` for its ``job_kind`` alone (its controller, no Trainer runtimes), as is
    without one."""
    if not config.job_kind:
        return config
    manager = dataclasses.replace(config.manager, kinds=(config.job_kind,))
    return dataclasses.replace(config, manager=manager, trainer_runtimes=False)


def machine_cluster(
    config: ClusterConfig,
    *,
    working_dir: Path | None = None,
    clock: Clock | None = None,
    resources: NodeResources | None = None,
    container_runtime: Runtime | None = None,
    keep_containers: bool = False,
) -> LocalCluster:
    """A local cluster whose pods run as processes (``trainop run``, ``trainop local up``);
    ``clock`` (tests) times the controller and the kubelet's back-offs. ``keep_containers``
    (the persistent daemon, ``trainop local serve``): host containers outlive a crash of this
    process and the next one re-attaches to them (note 120); ``trainop run``'s die with it.

    The local scheduler binds pods that fit the node's resources (the machine's, or
    ``resources``' overrides); the kubelet runs only bound pods. With ``container_runtime``
    (``containers.ContainerRuntime``) the pods run as containers and reach each other by the
    names and ports a cluster uses (note 095)."""
    root = config.state_dir / "pods"
    wanted = resources or NodeResources()
    logs = LogFiles(root)
    engine = config.manager.engine
    ssh = config.state_dir / "bin" / "ssh"
    frameworks = dataclasses.replace(local_frameworks(engine.frameworks), mpi_ssh_command=str(ssh))
    if container_runtime is not None:  # no init container to wait for DNS: names resolve
        frameworks = container_frameworks(
            engine.frameworks, by_name=container_runtime.addresses_by_name
        )
    local_engine = dataclasses.replace(engine, frameworks=frameworks)
    kinds = config.manager.kinds or (*REGISTRY, TRAINJOB)  # TrainJobs too (note 133)
    config = dataclasses.replace(
        config,
        manager=dataclasses.replace(config.manager, engine=local_engine, kinds=kinds),
        trainer_runtimes=True,
    )

    def kubelet(client: Client, clock: Clock) -> KubeletComponent:
        settings = KubeletConfig(
            root=root,
            working_dir=working_dir,
            require_binding=True,
            gpus=_gpu_devices(wanted.gpus),
            cpus=math.ceil(wanted.cpus) if wanted.cpus else None,
            memory=wanted.memory,
            node_cpus=wanted.cpus,  # exact, for the Node object (``cpus`` is rounded up)
            keep_containers=keep_containers,
        )
        return Kubelet(
            client=client,
            config=settings,
            clock=clock,
            logs=logs,
            container_runtime=container_runtime,
        )

    def scheduler(client: HttpClient) -> Component:
        found = wanted.gpus if wanted.gpus is not None else len(gpus.detect()) or None
        allocatable = scheduler_module.machine_allocatable(
            cpus=wanted.cpus, memory=wanted.memory, gpus=found
        )
        return scheduler_module.LocalScheduler(
            client=client, allocatable=allocatable, node_name=DEFAULT_NODE
        )

    cluster = LocalCluster(
        config,
        kubelet=kubelet,
        log_source=logs,
        clock=clock,
        scheduler=scheduler,
        cluster_addressing=container_runtime is not None and container_runtime.addresses_by_name,
        container_runtime=container_runtime,
    )
    _write_ssh_wrapper(ssh)
    return cluster


def _write_ssh_wrapper(path: Path) -> None:
    """One executable for MPIJob v2beta1 launchers' remote shell (``sshclient``): Intel MPI's
    and MPICH's Hydra take a path, not a command line (design note 100)."""
    path.parent.mkdir(mode=0o700, exist_ok=True)
    path.write_text(f'#!/bin/sh\nexec {sshclient.shell_command()} "$@"\n', encoding="utf-8")
    path.chmod(0o700)


@dataclass(frozen=True, slots=True)
class NodeResources:
    """Overrides of what the local node offers (None: what the machine has)."""

    cpus: float | None = None
    memory: int | None = None  # bytes
    gpus: int | None = None


def _gpu_devices(count: int | None) -> tuple[str, ...] | None:
    """The devices the kubelet hands out: the first ``count`` found, padded with indices
    (a declared GPU the machine lacks is still a slot to hold); None: detect them all."""
    if count is None:
        return None
    found = gpus.detect()[:count]
    return (*found, *(str(i) for i in range(len(found), count)))


# Every pod of a process cluster is on this host: Open MPI's daemons and ranks talk over
# loopback, which its TCP components exclude by default (they expect one host per node).
_OPEN_MPI_LOOPBACK = (("OMPI_MCA_oob_tcp_if_include", "lo"), ("OMPI_MCA_btl_tcp_if_include", "lo"))


def container_frameworks(options: FrameworkOptions, *, by_name: bool = True) -> FrameworkOptions:
    """The plugin settings of a container cluster: names resolve (no DNS wait), paths are the
    manifest's; MPI's rsh agent (and v2beta1's ssh) and DGL's ``kubexec.sh`` use the exec
    client the container runtime mounts into every container, which reaches the kubelet's exec
    (``podman exec``); pods see their generated files as they were at start (DGL: no init
    containers, the launcher after the workers). When the pods reach each other ``by_name``
    (the session's network), a v2beta1 job whose workers run sshd keeps the image's ssh, as on
    a cluster (note 100)."""
    return dataclasses.replace(
        options,
        wait_for_peer_dns=False,
        exec_command=containers.exec_command(),
        pods_see_file_updates=False,
        dgl_init_container_template="[]",
        mpi_kubectl_delivery=False,
        mpi_ssh_command=containers.ssh_command(),
        mpi_real_ssh_to_sshd_workers=by_name,
    )


def mpi_launcher_env(options: FrameworkOptions) -> tuple[tuple[str, str], ...]:
    """What an MPI TrainJob's launcher needs in a process session (note 133), as v1 launchers
    get it: the remote shell through the kubelet's exec, the hostfile under the pod's root,
    Open MPI's TCP on loopback. Empty where no remote shell is set (not a machine cluster)."""
    if not options.mpi_ssh_command:
        return ()
    hostfile = f"{options.container_root}/etc/mpi/hostfile"
    return (
        ("OMPI_MCA_plm_rsh_agent", options.mpi_ssh_command),
        ("OMPI_MCA_orte_default_hostfile", hostfile),
        *options.mpi_launcher_env,
    )


def local_frameworks(options: FrameworkOptions) -> FrameworkOptions:
    """The plugin settings of a process cluster (the mode reaches plugins only as data): no
    waiting for peer DNS; paths under the sandbox's ``$(TRAINOP_ROOT)``; MPI's rsh agent and
    DGL's ``kubexec.sh`` exec through the kubelet (``execclient``) instead of a downloaded
    kubectl; pods see their generated files as they were at start (DGL: no init containers,
    whose images cannot run here; the launcher after the workers, note 060)."""
    return dataclasses.replace(
        options,
        wait_for_peer_dns=False,
        container_root="$(TRAINOP_ROOT)",
        exec_command=execclient.shell_command(),
        pods_see_file_updates=False,
        dgl_init_container_template="[]",
        mpi_kubectl_delivery=False,
        mpi_launcher_env=_OPEN_MPI_LOOPBACK,
        mpi_ssh_command=sshclient.shell_command(),
    )
