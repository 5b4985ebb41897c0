"""The container runtime: each container run is an OCI container run by Podman or Docker
(note 095).

Talks to the runtime through its CLI and only through its machine-readable output (JSON,
exit statuses); never by reading human-readable text. What the two CLIs say differently is
their dialect (``containercli``: global flags, listings, ``info``, ``--entrypoint``);
everything else is shared and written in podman's terms. Every podman call carries
``--runtime runc --cgroup-manager cgroupfs`` and runs with ``CONTAINERS_CONF`` pointing at a
file in the session's state directory whose ``[containers] default_ulimits`` is empty (the
default ulimits and crun fail on these machines); docker calls use the daemon's defaults.

One run of a container is ``podman run`` in the foreground (no ``--rm``): its output is the
container's, SIGTERM to the client is proxied into the container, and after it ends
``podman inspect`` gives the exit code and ``OOMKilled``; the container is removed with its
pod, once the pod is released, in one background call with the pod's holder (``removals``).
``--cidfile`` gives the run's id (``podman://<id>`` or ``docker://<id>``, the status's
``containerID``). The client's stdio is ``stdio.Stdio``'s: with ``stdin``/``tty`` it runs
``--interactive`` (``--tty``) on the kubelet's pipe or terminal, so ``attach -i`` works as for
a process.
What the pod resolved is used as a cluster would, each part in its own module: the image,
its pull and its entrypoint and cmd combined with ``command``/``args`` (``images``); the
pod's env (not the host's), ``workingDir``, its volumes bind-mounted at their real
``mountPath``s and ``resources.limits`` as ``--memory`` and ``--cpus`` where podman can use
those cgroup controllers, else a ``StartWarning`` (``options``); the GPUs the run holds as CDI
devices (``cdi``); the ``securityContext`` and DNS settings (``podoptions``); the session
network, the pod's holder and its address (``network``).

Exec: every container has ``EXEC_MOUNT`` bind-mounted, a directory with a socket the kubelet's
exec server also listens on and the standard-library exec and ssh clients, so an MPI launcher's
rsh agent starts its ranks in the worker containers (``podman exec`` run by the kubelet).

Everything created carries the session's labels (``options``); ``open`` removes what an
earlier session left (one in the same state directory, or one whose process is gone: a
SIGKILLed session), ``close`` removes what this one made. With ``keep`` (``trainop local
up``'s daemon, note 120) ``open`` adopts the earlier session of its state directory instead,
and ``reattach`` finds its containers again (``containerreattach``).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from trainop.cluster.kubelet.exec import execclient, sshclient
from trainop.cluster.kubelet.runtimes import (
    cdi,
    containercli,
    containerreattach,
    containerrun,
    images,
    options,
    podoptions,
    processes,
    removals,
)
from trainop.cluster.kubelet.runtimes.network import SessionNetwork
from trainop.cluster.kubelet.runtimes.options import EXEC_MOUNT, EXEC_SOCKET
from trainop.cluster.kubelet.runtimes.runtime import (
    Exited,
    Launch,
    Report,
    Running,
    StartError,
    Target,
    no_report,
)
from trainop.cluster.kubelet.runtimes.stdio import Stdio

_SOCKET_PATH_LIMIT = 100  # a Unix socket's path is at most 107 bytes


def exec_command() -> str:
    """The rsh agent's command inside a container (``kubectl exec`` on a cluster): the exec
    client bind-mounted at ``EXEC_MOUNT``, run by the image's ``python3``."""
    return f"python3 -I -S {EXEC_MOUNT}/execclient.py"


def ssh_command() -> str:
    """MPIJob v2beta1's remote shell inside a container (``ssh`` on a cluster)."""
    return f"{EXEC_MOUNT}/ssh"


class ContainerRuntime:
    """Containers as Podman or Docker containers (see the module docstring)."""

    def __init__(
        self,
        cli: containercli.Cli,
        *,
        session: str,
        network: bool = True,
        cdi_dirs: Sequence[Path] = cdi.CDI_DIRS,
        keep: bool = False,
    ) -> None:
        self._cli = cli
        self._keep = keep  # adopt what an earlier session of this state directory left
        self._cdi_dirs = tuple(cdi_dirs)
        self.session = session
        self._want_network = network
        self._network = SessionNetwork(cli, session=session)
        self._removals = removals.Removals(cli)  # ended pods' containers and holders
        self.exec_dir: Path | None = None  # mounted at EXEC_MOUNT (``open`` makes it)
        self._opened = False
        self._controllers: frozenset[str] | None = None  # ``cgroup_controllers``
        self._controllers_asked = False
        self._controllers_lock = asyncio.Lock()
        self._named: set[str] = set()  # container names this session has run
        # Variables every container gets unless its own env names them (``trainop run``'s
        # OMP_NUM_THREADS share of the CPUs, as for host processes).
        self.default_env: dict[str, str] = {}
        self._closed = False  # ``close`` ran and no container started since

    @property
    def network(self) -> str:
        """The session's network, "" for the host's."""
        return self._network.name

    @network.setter
    def network(self, name: str) -> None:
        self._network.name = name

    @property
    def exec_socket(self) -> Path | None:
        """Where the kubelet's exec server also listens, for containers (see ``EXEC_MOUNT``)."""
        return self.exec_dir / EXEC_SOCKET if self.exec_dir is not None else None

    @property
    def addresses_by_name(self) -> bool:
        """Whether pods reach each other by name on the manifest's ports (the session's
        network); False under the host network: loopback ports as the process kubelet."""
        return bool(self.network)

    async def open(self) -> None:
        """Write the configuration, reap an earlier session's leftovers, make the network
        (once: ``runtimes.choose`` opens it before the cluster, to know its addressing)."""
        if self._opened:
            return
        self._opened = True
        self._cli.write_conf()
        adopted = await containerreattach.previous_session(self._cli) if self._keep else ""
        if adopted:  # its containers may still run: they are re-attached (note 120)
            self.session = self._network.session = adopted
            self._network.adopting = True
        await self.reap_stale()
        self.exec_dir = _exec_dir(self._cli.state_dir, keep=bool(adopted))
        if self._want_network:
            await self._network.create()

    async def close(self) -> None:
        """Remove every container and the network of this session (once: the kubelet and the
        session both close it, and nothing can start between), once the released pods'
        removals have ended."""
        await self._removals.drain()
        if self._closed:
            return
        await self.reap(by=options.SESSION_LABEL, value=self.session)
        self._closed = True
        if self.exec_dir is not None:
            shutil.rmtree(self.exec_dir, ignore_errors=True)

    async def reap_stale(self) -> None:
        """Remove what sessions that are gone (or used this state directory) left; a crashed
        daemon's (``_kept``) stay for the next ``local up`` on its state directory."""
        label = f"label={options.SESSION_LABEL}"
        boxes, nets = await asyncio.gather(self._cli.containers(label), self._cli.networks(label))
        found = [*boxes, *nets]
        stale = set()
        for _, labels in found:
            state = str(labels.get(options.STATE_LABEL) or "")
            if state == str(self._cli.state_dir) or not (
                _alive(labels.get(options.OWNER_LABEL, "")) or _kept(state)
            ):
                stale.add(str(labels.get(options.SESSION_LABEL)))
        stale.discard(self.session)
        for session in sorted(stale):
            await self.reap(by=options.SESSION_LABEL, value=session)

    async def reap(self, *, by: str, value: str) -> None:
        """Remove the containers, then the networks, labelled ``by=value``."""
        label = f"label={by}={value}"  # both listings at once, then containers before networks
        boxes, nets = await asyncio.gather(self._cli.containers(label), self._cli.networks(label))
        if ids := [found for found, _ in boxes]:
            await self._cli.call(*self._cli.remove_words(*ids))
        for name, _ in nets:
            await self._cli.call(*self._cli.network_remove_words(name))

    async def reattach(
        self, target: Target, container_id: str, log: Path
    ) -> Running | Exited | None:
        """Run ``target.restart`` as an earlier session of this state directory left it
        (``containerreattach``); None where this session adopted none (note 120)."""
        del container_id  # the container's name says which run it is
        if not self._network.adopting:
            return None
        name = options.container_name(self.session, target)
        return await containerreattach.reattach(self._cli, name, log)

    async def prepare(self, target: Target, pod_spec: Mapping[str, Any], report: Report) -> str:
        """The pod's holder, made before its first container (``network.SessionNetwork``):
        the pod's address, "" where it has none of its own."""
        self._closed = False
        await self._removals.settled(options.holder_name(self.session, target))
        return await self._network.prepare(target, pod_spec, report)

    async def release(self, uid: str) -> None:
        """The pod has ended: its containers and holder are removed in the background
        (``removals``; ``close`` waits for them)."""
        self._removals.release(uid, self._network.release(uid))

    async def start(
        self, target: Target, launch: Launch, env: Mapping[str, str], report: Report = no_report
    ) -> Running:
        del env  # the host's environment stays on the host: the pod's own env goes in
        self._closed = False
        image = str(launch.spec.get("image") or "")
        argv, user = await self._resolve(image, launch, target, report)
        await self._check_devices(launch.devices)
        controllers = await self.cgroup_controllers()
        holder = self._network.holder(target.uid)  # ``prepare`` made it
        if not holder:  # a holder's quiet ``run`` started the network's DNS server already
            await self._network.hold_dns(image, argv)
        name = options.container_name(self.session, target)
        await self._removals.settled(name)
        if self._network.adopting or name in self._named:  # a leftover of an earlier run
            await self._cli.call(*self._cli.remove_words(name))
        self._named.add(name)  # a fresh session's names are new: no ``rm`` before the first
        cidfile = self._cidfile(name)
        stdio = Stdio(launch.spec)  # the client relays it: ``-i`` a pipe, ``-i -t`` a terminal
        words = [
            *self._run_options(target, launch, name, user=user, holder=holder),
            *(["--interactive"] if stdio.stdin else []),
            *(["--tty"] if stdio.tty else []),
            "--cidfile",
            str(cidfile),
            *self._cli.entrypoint_words(argv, image),
        ]
        process = await self._launch(words, launch, stdio)
        try:
            container_id = await containerrun.started(self._cli, process, cidfile)
        except BaseException:
            stdio.failed()
            processes.signal_group(process.pid, signal.SIGKILL)
            raise
        run = containerrun.Container(
            self._cli,
            process,
            name,
            stdio,
            container_id=container_id,
            cidfile=cidfile,
            ended=lambda: self._removals.ended(target.uid, name),
        )
        run.warnings = tuple(options.limits(launch.spec, controllers, self._cli.name)[1])
        return run

    async def _resolve(
        self, image: str, launch: Launch, target: Target, report: Report
    ) -> tuple[list[str], str]:
        """Have the image (kubelet's image events) and check the container against it: the
        argv to run and the image's user (``StartError`` for a refusal or no command)."""
        policy = images.pull_policy(launch.spec)
        found = await images.inspect(self._cli, image)  # {}: not here (what ``image exists`` says)
        pulled_in = await images.ensure(self._cli, image, policy, report, present=bool(found))
        if pulled_in is not None:
            found = await images.inspect(self._cli, image)
        config = images.config_of(found)
        if pulled_in is not None:  # kubelet's event once the pulled image is there
            message = images.pulled_message(image, pulled_in, images.size_of(found))
            report("Normal", "Pulled", message)
        user = podoptions.image_user(config)
        pod_id = f"{target.namespace}/{target.pod}"
        if refused := podoptions.refusal(launch.pod_spec, launch.spec, user, pod_id):
            error = podoptions.CONFIG_ERROR
            raise StartError(error, error, refused, config=True)
        argv = images.combine(config, command=launch.command, args=launch.args)
        if not argv:
            raise StartError("ContainerCannotRun", "CreateContainerError", "no command specified")
        return argv, user

    async def _launch(
        self, words: list[str], launch: Launch, stdio: Stdio
    ) -> asyncio.subprocess.Process:
        """Start the foreground ``run`` client on the container's stdio."""
        stdin, stdout, stderr = stdio.streams()
        try:
            return await processes.start(
                self._cli.argv(*words),
                env=self._cli.env(launch.pod_env),
                cwd=self._cli.workdir(),
                stdin=stdin,
                stdout=stdout,
                stderr=stderr,
                process_group=0,
            )
        except OSError as exc:
            stdio.failed()
            message = processes.describe_start_error([self._cli.binary], exc)
            raise StartError("StartError", "RunContainerError", message) from exc

    async def _check_devices(self, devices: Sequence[str]) -> None:
        """``cdi.check_devices``, and where the runtime cannot inject CDI devices at all
        (docker before 25, or without CDI enabled) a start error that says so."""
        if not devices:
            return
        problem = self._cli.device_problem(await self._cli.info())
        if problem:
            message = f"CDI device injection failed: {problem}"
            raise StartError("ContainerCannotRun", "CreateContainerError", message)
        await asyncio.to_thread(cdi.check_devices, devices, self._cdi_dirs)  # reads spec files

    async def cgroup_controllers(self) -> frozenset[str] | None:
        """The cgroup controllers podman can use on this machine (``podman info``'s
        ``host.cgroupControllers``), asked once per session; None where it does not say."""
        async with self._controllers_lock:
            if not self._controllers_asked:
                info = await self._cli.info()  # ``works`` asked already, as a rule
                self._controllers = self._cli.controllers(info)
                self._controllers_asked = True
        return self._controllers

    def _cidfile(self, name: str) -> Path:
        """Where ``podman run --cidfile`` writes the container's id (none there yet)."""
        folder = self._cli.workdir() / "cid"
        folder.mkdir(mode=0o700, exist_ok=True)
        path = folder / name
        path.unlink(missing_ok=True)
        return path

    def _run_options(
        self, target: Target, launch: Launch, name: str, *, user: str = "", holder: str = ""
    ) -> list[str]:
        """The ``run`` words but the stdio and the command; ``user`` is the image's user
        (``podoptions.image_user``); ``holder`` the pod's holder, whose network and hostname
        the container joins (``prepare``), "" for a network identity of its own."""
        pod = options.pod_options(self.session, self._cli.state_dir, target)
        words = ["run", "--name", name, *pod, "--sig-proxy=true"]
        if holder:  # the pod's network, names, DNS settings and hostname: the holder's
            words += ["--network", f"container:{holder}", "--uts", f"container:{holder}"]
        else:
            words += self._network.identity_options(target, launch.pod_spec)
        if spec_dir := launch.spec.get("workingDir"):
            words += ["--workdir", str(spec_dir)]
        for variable, value in self.default_env.items():
            if variable not in launch.pod_env:
                words += ["--env", f"{variable}={value}"]
        for variable in launch.pod_env:  # values from the client's environment, not argv
            words += ["--env", variable]
        for mount in options.mounts(launch):
            words += ["--mount", mount]
        if self.exec_dir is not None:
            words += options.exec_options(self.exec_dir, target.namespace)
        security = podoptions.security_options(launch.pod_spec, launch.spec, user)
        if "--read-only" in security:
            security += self._cli.read_only_words
        limited = options.limits(launch.spec, self._controllers)[0]
        return [*words, *security, *limited, *cdi.device_options(launch.devices)]


def _exec_dir(state_dir: Path, *, keep: bool = False) -> Path:
    """A fresh directory with the exec and ssh clients, for ``EXEC_MOUNT``: under the state
    directory, or a private temporary one where the socket's path would be too long; ``keep``:
    the same directory, not emptied (re-attached containers have it mounted)."""
    path = state_dir / "exec"
    if len(str(path / EXEC_SOCKET)) > _SOCKET_PATH_LIMIT:
        path = Path(tempfile.mkdtemp(prefix="trainop-exec-"))
    if not keep:
        shutil.rmtree(path, ignore_errors=True)
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    for source in (Path(execclient.__file__), Path(sshclient.__file__)):  # run by python3
        shutil.copyfile(source, path / source.name)
    ssh = path / "ssh"
    ssh.write_text(f'#!/bin/sh\nexec python3 -I -S {EXEC_MOUNT}/sshclient.py "$@"\n')
    ssh.chmod(0o755)
    return path


def _kept(state: str) -> bool:
    """Whether a session's containers wait for the next ``trainop local up`` on its state
    directory (``<dir>/<runtime>``: the daemon's ``trainop.pid`` is there) to re-attach to
    them (note 120), though the process that made them is gone."""
    return bool(state) and (Path(state).parent / "trainop.pid").exists()


def _alive(pid: str) -> bool:
    """Whether the process ``pid`` (a label's text) still runs; unknown owners count as gone."""
    try:
        os.kill(int(pid), 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True
