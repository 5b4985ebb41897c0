"""The container runtime: each container run is an OCI container run by Podman or Docker
(note 095).

Talks to the runtime through its CLI and only through its machine-readable output (JSON,
exit statuses); never by reading human-readable text. What the two CLIs say differently is
their dialect (``containercli``: global flags, listings, ``info``, ``--entrypoint``);
everything below is shared and written in podman's terms. Every podman call carries
``--runtime runc --cgroup-manager cgroupfs`` and runs with ``CONTAINERS_CONF`` pointing at a
file in the session's state directory whose ``[containers] default_ulimits`` is empty (the
default ulimits and crun fail on these machines); docker calls use the daemon's defaults.

One run of a container is ``podman run`` in the foreground (no ``--rm``): its output is the
container's, SIGTERM to the client is proxied into the container, and after it ends
``podman inspect`` gives the exit code and ``OOMKilled``; the container is then removed.
``--cidfile`` gives the run's id (``podman://<id>`` or ``docker://<id>``, the status's
``containerID``). The client's stdio is ``runtime.Stdio``'s: with ``stdin``/``tty`` it runs
``--interactive`` (``--tty``) on the kubelet's pipe or terminal, so ``attach -i`` works as for
a process.
What the pod resolved is used as a cluster would: the image's entrypoint and cmd combined
with ``command``/``args`` as kubelet does, ``workingDir``, the pod's env (not the host's), its
volumes bind-mounted at their real ``mountPath``s (``readOnly`` as ``ro``),
``imagePullPolicy`` with kubelet's waiting reasons, ``resources.limits`` as ``--memory`` and
``--cpus`` where podman can use those cgroup controllers (else a ``StartWarning``, a Warning
Event), and the GPUs the run holds as CDI devices
(``--device nvidia.com/gpu=<index>``; a held GPU no CDI spec defines is a start error that
names the fix). The pod's ``securityContext`` and DNS settings are run options too
(``podoptions``): ``--user``, ``--group-add``, ``--read-only``, capabilities, kubelet's
``runAsNonRoot`` refusal; the cluster's search path on the session's network.

Network: one bridge network per session (``trainop-<session>``, with Podman's DNS): each
container's hostname is its pod's hostname and the pod name (and ``<pod>.<ns>.svc``, and with
a ``subdomain`` ``<hostname>.<subdomain>.<ns>.svc``) are its aliases, so the operator's Service
names resolve and the manifest's ports are used as they are. Where no network can be created,
containers share the host's network.

Exec: every container has ``EXEC_MOUNT`` bind-mounted, a directory with a socket the kubelet's
exec server also listens on and the standard-library exec and ssh clients, so an MPI launcher's
rsh agent starts its ranks in the worker containers (``podman exec`` run by the kubelet).

Everything created carries the labels ``trainop.session=<id>`` and ``trainop.pod=<ns>/<name>``
(and the state directory and owning process id); ``open`` removes what an earlier session
left (one in the same state directory, or one whose process is gone: a SIGKILLed session),
``close`` removes what this one made.
"""

from __future__ import annotations

import asyncio
import contextlib
import csv
import io
import json
import logging
import os
import re
import shutil
import signal
import tarfile
import tempfile
import time
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from trainop.api import images
from trainop.cluster.kubelet import gpus
from trainop.cluster.kubelet.runtimes import containercli, podoptions, processes
from trainop.cluster.kubelet.runtimes.runtime import (
    Launch,
    Report,
    Running,
    StartError,
    StartWarning,
    Stdio,
    StdioRun,
    Target,
    no_report,
)
from trainop.engine import quantities

log = logging.getLogger(__name__)

SESSION_LABEL = "trainop.session"
POD_LABEL = "trainop.pod"
STATE_LABEL = "trainop.state"
OWNER_LABEL = "trainop.owner"  # the process id of the session that made it
HOLDER_LABEL = "trainop.holder"  # "true" on a pod's holder (``prepare``), like kubelet's sandbox
_SAFE = str.maketrans(dict.fromkeys("/:@ ", "-"))
# Where every container sees the kubelet's exec endpoint (a socket the exec server listens on)
# and the standard-library exec and ssh clients, so an MPI launcher's rsh agent (kubexec.sh)
# starts its ranks in the worker containers through the kubelet (``podman exec`` on the host).
EXEC_MOUNT = "/run/trainop"
EXEC_SOCKET = "exec.sock"
_SOCKET_PATH_LIMIT = 100  # a Unix socket's path is at most 107 bytes
CREATE_TIMEOUT = 60.0  # how long ``start`` waits for podman to create the container
_CREATE_POLL = 0.02
_CONTAINER_ID = re.compile(r"[0-9a-f]{64}")
# Podman (4.1 and later) injects a CDI device named on ``--device`` from the specs in these
# directories (4.3 reads only these two), as the NVIDIA Container Toolkit writes them; the
# toolkit's kind is the resource's name, its devices are named by index.
CDI_DIRS = (Path("/etc/cdi"), Path("/var/run/cdi"))
CDI_FIX = "nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml"
_CDI_SUFFIXES = (".yaml", ".json")
LIMITS_IGNORED = "ResourceLimitsIgnored"  # the Warning Event's reason (``limits``)
POD_NOT_SHARED = "PodNamespacesNotShared"  # the Warning Event's reason (``prepare``)
# A pod's holder runs ``catatonit -P`` (it only waits) from an image trainop imports from the
# machine's own binary: no registry, no pause image to pull.
PAUSE_BINARY = "catatonit"
PAUSE_PATHS = ("/usr/libexec/podman/catatonit", "/usr/libexec/catatonit/catatonit")
PAUSE_IMAGE = "localhost/trainop-pause:1"


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
        cdi_dirs: Sequence[Path] = CDI_DIRS,
    ) -> None:
        self._cli = cli
        self._cdi_dirs = tuple(cdi_dirs)
        self.session = session
        self._want_network = network
        self.network = ""  # the session's network, "" for the host's
        self._network_dns = ""  # its DNS server where ``--dns`` replaces it (``_find_dns``)
        self.exec_dir: Path | None = None  # mounted at EXEC_MOUNT (``open`` makes it)
        self._opened = False
        self._controllers: frozenset[str] | None = None  # ``cgroup_controllers``
        self._controllers_asked = False
        self._controllers_lock = asyncio.Lock()
        self._dns_held = False  # ``_hold_dns``
        self._dns_lock = asyncio.Lock()
        self._holders: dict[str, str] = {}  # pod uid -> its holder container (``prepare``)
        self._pause_lock = asyncio.Lock()  # the holders' image, made once
        self._pause: str | None = None  # the holders' image ("" where none can be made)

    @property
    def exec_socket(self) -> Path | None:
        """Where the kubelet's exec server also listens, for containers (see ``EXEC_MOUNT``)."""
        return self.exec_dir / EXEC_SOCKET if self.exec_dir is not None else None

    @property
    def network_name(self) -> str:
        return f"trainop-{self.session}"

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
        await self.reap_stale()
        self.exec_dir = _exec_dir(self._cli.state_dir)
        if not self._want_network:
            return
        reply = await self._cli.call(
            "network",
            "create",
            *self._labels(),
            self.network_name,
        )
        if reply.code == 0:
            self.network = self.network_name
            self._network_dns = await self._find_dns()
        else:
            log.warning("no container network (%s): containers use the host's", reply.message)

    async def _find_dns(self) -> str:
        """The session network's DNS server (its first gateway) where the runtime's ``--dns``
        replaces it in a container's resolv.conf (Podman), else "" (Docker's embedded
        server stays and forwards to the ``--dns`` servers)."""
        if not self._cli.replaces_network_dns:
            return ""
        found = first_object(await self._cli.json("network", "inspect", self.network_name))
        for subnet in found.get("subnets") or []:
            if isinstance(subnet, dict) and subnet.get("gateway"):
                return str(subnet["gateway"])
        return ""

    async def close(self) -> None:
        """Remove every container and the network of this session."""
        await self.reap(by=SESSION_LABEL, value=self.session)
        if self.exec_dir is not None:
            shutil.rmtree(self.exec_dir, ignore_errors=True)

    async def reap_stale(self) -> None:
        """Remove what sessions that are gone (or used this state directory) left."""
        label = f"label={SESSION_LABEL}"
        found = [*await self._cli.containers(label), *await self._cli.networks(label)]
        stale = set()
        for _, labels in found:
            if labels.get(STATE_LABEL) == str(self._cli.state_dir) or not _alive(
                labels.get(OWNER_LABEL, "")
            ):
                stale.add(str(labels.get(SESSION_LABEL)))
        stale.discard(self.session)
        for session in sorted(stale):
            await self.reap(by=SESSION_LABEL, value=session)

    async def reap(self, *, by: str, value: str) -> None:
        """Remove the containers, then the networks, labelled ``by=value``."""
        label = f"label={by}={value}"
        ids = [found for found, _ in await self._cli.containers(label)]
        if ids:
            await self._cli.call(*self._cli.remove_words(*ids))
        for name, _ in await self._cli.networks(label):
            await self._cli.call(*self._cli.network_remove_words(name))

    async def start(
        self, target: Target, launch: Launch, env: Mapping[str, str], report: Report = no_report
    ) -> Running:
        del env  # the host's environment stays on the host: the pod's own env goes in
        spec = launch.spec
        image = str(spec.get("image") or "")
        pulled_in = await self._ensure_image(image, pull_policy(spec), report)
        found = await self._cli.json("image", *self._cli.inspect_words(image))
        config = _image_config(found)
        if pulled_in is not None:  # kubelet's event once the pulled image is there
            report("Normal", "Pulled", pulled_message(image, pulled_in, _image_size(found)))
        user = podoptions.image_user(config)
        pod_id = f"{target.namespace}/{target.pod}"
        if refused := podoptions.refusal(launch.pod_spec, spec, user, pod_id):
            error = podoptions.CONFIG_ERROR
            raise StartError(error, error, refused, config=True)
        argv = combine(config, command=launch.command, args=launch.args)
        if not argv:
            raise StartError("ContainerCannotRun", "CreateContainerError", "no command specified")
        await self._check_devices(launch.devices)
        controllers = await self.cgroup_controllers()
        await self._hold_dns(image, argv)
        holder = self._holders.get(target.uid, "")  # ``prepare`` made it
        name = container_name(self.session, target)
        await self._cli.call(*self._cli.remove_words(name))  # a leftover of an earlier run
        cidfile = self._cidfile(name)
        stdio = Stdio(spec)  # the client relays it: ``-i`` a pipe, ``-i -t`` a terminal
        words = [
            *self._run_options(target, launch, name, user=user, holder=holder),
            *(["--interactive"] if stdio.stdin else []),
            *(["--tty"] if stdio.tty else []),
            "--cidfile",
            str(cidfile),
            *self._cli.entrypoint_words(argv, image),
        ]
        stdin, stdout, stderr = stdio.streams()
        try:
            process = await processes.start(
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
        try:
            container_id = await _created(process, cidfile)
            if container_id:
                await self._started(process, container_id)
        except BaseException:
            stdio.failed()
            processes.signal_group(process.pid, signal.SIGKILL)
            raise
        run = Container(self._cli, process, name, stdio, container_id=container_id, cidfile=cidfile)
        run.warnings = tuple(limits(spec, controllers, self._cli.name)[1])
        return run

    async def _hold_dns(self, image: str, argv: list[str]) -> None:
        """Once per session, before the first container joins the network: a container on
        it that is initialized (its network set up) and never started, made by calls whose
        output is discarded. The first container on a network starts Podman's DNS server
        (aardvark-dns), which prints to the stderr of the podman call that started it ("failed
        to connect to syslog" where no syslog runs): that call is this one, not a replica's
        ``podman run``, whose stderr is the container's log. The holder keeps the server up
        until ``close`` removes it with the session's containers. Best effort: where it cannot
        be made, the line shows in the first replica's log, as before."""
        async with self._dns_lock:
            if self._dns_held or not self.network or not self._cli.holds_dns:
                return
            self._dns_held = True
            name = f"trainop-{self.session}-dns"
            created = await self._cli.quiet(
                "create",
                "--name",
                name,
                "--network",
                self.network,
                *self._labels(),
                "--pull",
                "never",
                *self._cli.entrypoint_words(argv, image),  # never run: the image has it
            )
            if created != 0 or await self._cli.quiet("init", name) != 0:
                log.debug(
                    "no DNS holder on %s: its first replica's log may show the server's "
                    "start-up line",
                    self.network,
                )

    async def _check_devices(self, devices: Sequence[str]) -> None:
        """``check_devices``, and where the runtime cannot inject CDI devices at all (docker
        before 25, or without CDI enabled) a start error that says so."""
        if not devices:
            return
        problem = self._cli.device_problem(await self._cli.info())
        if problem:
            message = f"CDI device injection failed: {problem}"
            raise StartError("ContainerCannotRun", "CreateContainerError", message)
        await asyncio.to_thread(check_devices, devices, self._cdi_dirs)  # reads spec files

    def _labels(self) -> list[str]:
        """The labels of everything this session makes (but its pods' own)."""
        return [
            "--label",
            f"{SESSION_LABEL}={self.session}",
            "--label",
            f"{STATE_LABEL}={self._cli.state_dir}",
            "--label",
            f"{OWNER_LABEL}={os.getpid()}",
        ]

    async def _started(self, client: asyncio.subprocess.Process, container_id: str) -> None:
        """Until the created container has started (its state no longer one of
        ``_STARTING``; a state the runtime does not show counts as started), the client
        ended, or ``CREATE_TIMEOUT``: kubelet reports a container running once its runtime
        started it, so ``Ready``, an ``exec`` or a signal never lands between the create and
        the start."""
        ended = asyncio.ensure_future(client.wait())
        deadline = time.monotonic() + CREATE_TIMEOUT
        try:
            while not ended.done() and time.monotonic() < deadline:
                found = await self._cli.json(*self._cli.inspect_words(container_id))
                state = first_object(found).get("State")
                status = state.get("Status") if isinstance(state, dict) else None
                if str(status or "").lower() not in _STARTING:
                    return
                await asyncio.wait([ended], timeout=_CREATE_POLL)
        finally:
            ended.cancel()

    def _pod_options(self, target: Target) -> list[str]:
        """The options of everything this session makes for a pod: its labels, and no pulls
        (the image is there by then, or the start failed)."""
        pod = f"{POD_LABEL}={target.namespace}/{target.pod}"
        return [*self._labels(), "--label", pod, "--pull", "never"]

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
        words = ["run", "--name", name, *self._pod_options(target), "--sig-proxy=true"]
        if holder:  # the pod's network, names, DNS settings and hostname: the holder's
            words += ["--network", f"container:{holder}", "--uts", f"container:{holder}"]
        else:
            words += self._identity_options(target, launch.pod_spec)
        if spec_dir := launch.spec.get("workingDir"):
            words += ["--workdir", str(spec_dir)]
        for variable in launch.pod_env:  # values from the client's environment, not argv
            words += ["--env", variable]
        for mount in mounts(launch):
            words += ["--mount", mount]
        if self.exec_dir is not None:  # the exec endpoint (values not secret: on argv)
            endpoint = ["type=bind", f"source={self.exec_dir}", f"destination={EXEC_MOUNT}"]
            words += ["--mount", mount_value(endpoint)]
            words += ["--env", f"TRAINOP_EXEC_ADDRESS={EXEC_MOUNT}/{EXEC_SOCKET}"]
            words += ["--env", f"TRAINOP_NAMESPACE={target.namespace}"]
        security = podoptions.security_options(launch.pod_spec, launch.spec, user)
        if "--read-only" in security:
            security += self._cli.read_only_words
        limited = limits(launch.spec, self._controllers)[0]
        return [*words, *security, *limited, *device_options(launch.devices)]

    def _identity_options(self, target: Target, pod_spec: Mapping[str, Any]) -> list[str]:
        """A pod's network identity: its hostname, the session network with its names and
        the pod's DNS settings (or the host's network and resolver)."""
        words = ["--hostname", target.hostname]
        if not self.network:  # the host's resolver: no pod DNS settings
            return [*words, "--network", "host"]
        words += ["--network", self.network]
        for alias in network_aliases(target):
            words += ["--network-alias", alias]
        return [
            *words,
            *podoptions.dns_options(dict(pod_spec), target.namespace, self._network_dns),
        ]

    async def prepare(self, target: Target, pod_spec: Mapping[str, Any], report: Report) -> str:
        """Before the pod's first container: its holder, the container that holds the pod's
        network and UTS namespaces, which every container of the pod joins (one
        ``localhost``, one hostname, one address, as in a Kubernetes pod, whose pause
        container holds them); removed by ``release``. The pod's address on the session
        network, or "" where it has no holder: the host's network, a runtime that does not
        share them (docker), or no holder could be made (then each container has an
        identity of its own, and a pod of more than one gets a Warning Event saying so)."""
        if not self.network or not self._cli.shares_pod_namespaces:
            return ""
        async with self._pause_lock:  # one import for every pod; holders run side by side
            image = await self._pause_image()
        name, problem = holder_name(self.session, target), ""
        if image:
            await self._hold_dns(image, [f"/{PAUSE_BINARY}", "-P"])  # the first on it
            await self._cli.call(*self._cli.remove_words(name))  # an earlier pod's
            identity = self._identity_options(target, pod_spec)
            labels = [*self._pod_options(target), "--label", f"{HOLDER_LABEL}=true"]
            code = await self._cli.quiet(
                "run", "--detach", "--name", name, *labels, *identity, image
            )
            problem = f"{self._cli.name} run of the holder exited {code}" if code else ""
        else:
            problem = f"no {PAUSE_BINARY} on this machine to make {PAUSE_IMAGE} from"
        if problem:
            count = len(pod_spec.get("initContainers") or [])
            if count + len(pod_spec.get("containers") or []) > 1:
                message = f"the pod's containers do not share localhost and hostname: {problem}"
                report("Warning", POD_NOT_SHARED, message)
            return ""
        self._holders[target.uid] = name
        return await self._address(name)

    async def _address(self, name: str) -> str:
        """The container's address on the session network ("" where it shows none)."""
        found = first_object(await self._cli.json(*self._cli.inspect_words(name)))
        networks = (found.get("NetworkSettings") or {}).get("Networks") or {}
        entry = networks.get(self.network) if isinstance(networks, dict) else None
        address = entry.get("IPAddress") if isinstance(entry, dict) else None
        return str(address) if address else ""

    async def _pause_image(self) -> str:
        """``PAUSE_IMAGE``, imported once from the machine's ``catatonit`` (a static init
        whose ``-P`` only waits: what a pod's holder runs), "" where it cannot be had."""
        if self._pause is None:
            self._pause = ""
            if (await self._cli.call(*self._cli.image_exists_words(PAUSE_IMAGE))).code == 0:
                self._pause = PAUSE_IMAGE
            elif (binary := find_pause_binary()) is not None:
                archive = self._cli.workdir() / "pause.tar"
                await asyncio.to_thread(_pause_archive, binary, archive)
                change = f"ENTRYPOINT {json.dumps(['/' + PAUSE_BINARY, '-P'])}"
                reply = await self._cli.call(
                    "import", "--change", change, str(archive), PAUSE_IMAGE
                )
                archive.unlink(missing_ok=True)
                if reply.code == 0:
                    self._pause = PAUSE_IMAGE
                else:
                    log.warning("cannot import %s: %s", PAUSE_IMAGE, reply.message)
        return self._pause

    async def release(self, uid: str) -> None:
        """The pod has ended: remove its holder (if it had one)."""
        holder = self._holders.pop(uid, None)
        if holder is not None:
            await self._cli.call(*self._cli.remove_words(holder))

    async def _ensure_image(self, image: str, policy: str, report: Report) -> float | None:
        """Have ``image`` as ``policy`` says, with kubelet's events: how long a pull took,
        None when the image was there already (``StartError`` when it cannot be had)."""
        present = (await self._cli.call(*self._cli.image_exists_words(image))).code == 0
        if policy == "Never" and not present:
            message = f'Container image "{image}" is not present with pull policy of Never'
            raise StartError("ErrImageNeverPull", "ErrImageNeverPull", message, image=image)
        if present and policy != "Always":
            report("Normal", "Pulled", f'Container image "{image}" already present on machine')
            return None
        report("Normal", "Pulling", f'Pulling image "{image}"')
        began = time.monotonic()
        reply = await self._cli.call("pull", "--quiet", "--", image)  # never an option
        if reply.code != 0:
            message = f'failed to pull image "{image}": {reply.last_line}'
            raise StartError("ErrImagePull", "ErrImagePull", message, image=image)
        return time.monotonic() - began


def first_object(found: Any) -> Mapping[str, Any]:
    """The first object of an ``inspect`` answer (a JSON array), {} when there is none."""
    first = found[0] if isinstance(found, list) and found else None
    return first if isinstance(first, dict) else {}


def _image_config(found: Any) -> Mapping[str, Any]:
    """The ``Config`` of an image as ``image inspect`` shows it ({} when unknown)."""
    config = first_object(found).get("Config")
    return config if isinstance(config, dict) else {}


def _image_size(found: Any) -> int:
    """The image's size in bytes as ``image inspect`` shows it (0 when unknown)."""
    size = first_object(found).get("Size")
    return size if isinstance(size, int) and not isinstance(size, bool) else 0


def pulled_message(image: str, seconds: float, size: int) -> str:
    """kubelet's ``Pulled`` message after a pull (one pull at a time here, so the time
    including waiting is the pull's own)."""
    took = go_duration(seconds)
    return (
        f'Successfully pulled image "{image}" in {took} ({took} including waiting). '
        f"Image size: {size} bytes."
    )


def go_duration(seconds: float) -> str:
    """A duration as Go prints a ``time.Duration`` truncated to milliseconds (``532ms``,
    ``1.2s``, ``2m3.456s``), as kubelet's events show it."""
    millis = max(0, int(seconds * 1000))
    if millis == 0:
        return "0s"
    if millis < 1000:
        return f"{millis}ms"
    minutes, millis = divmod(millis, 60_000)
    hours, minutes = divmod(minutes, 60)
    secs = f"{millis // 1000}.{millis % 1000:03d}".rstrip("0").rstrip(".")
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"


class Container(StdioRun):
    """One container run: the foreground ``podman run`` client (its pid, its stdio: the
    container's, relayed) and the container's name."""

    warnings: tuple[StartWarning, ...] = ()  # limits this start could not set (``limits``)

    def __init__(
        self,
        cli: containercli.Cli,
        client: asyncio.subprocess.Process,
        name: str,
        stdio: Stdio,
        *,
        container_id: str = "",
        cidfile: Path | None = None,
    ) -> None:
        super().__init__(client, stdio)
        self._cli, self.name = cli, name
        self.container_id = f"{cli.name}://{container_id}" if container_id else ""
        self._cidfile = cidfile
        self._state: Mapping[str, Any] = {}
        self._oom_before = processes.oom_kills()

    async def wait(self) -> int:
        returncode = await self._process.wait()
        state = first_object(await self._cli.json(*self._cli.inspect_words(self.name))).get("State")
        if isinstance(state, dict):
            self._state = state
        return returncode

    def signal(self, signum: int) -> bool:
        if self._process.returncode is not None:
            return False
        if signum == signal.SIGKILL:  # not proxied: the container itself is killed
            asyncio.get_running_loop().create_task(
                self._cli.call("kill", "--signal", "KILL", self.name)
            )
            return True
        return processes.signal_group(self._process.pid, signum)  # proxied into the container

    async def finish(self) -> None:
        await self._cli.call(*self._cli.remove_words(self.name))
        processes.signal_group(self._process.pid, signal.SIGKILL)
        self.close_stdin()
        if self._cidfile is not None:
            self._cidfile.unlink(missing_ok=True)

    async def outcome(self, returncode: int, *, killed_by_kubelet: bool) -> tuple[int, str]:
        code = int(self._state.get("ExitCode", processes.exit_code(returncode)))
        if self._state.get("OOMKilled"):
            return code, "OOMKilled"
        # runc with cgroupfs does not report OOM kills: the process kubelet's heuristic (a
        # SIGKILL the kubelet did not send while the kernel's OOM-kill count went up)
        status = -signal.SIGKILL if code == 128 + signal.SIGKILL else code
        reason = processes.reason(
            status, killed_by_kubelet=killed_by_kubelet, oom_before=self._oom_before
        )
        return code, reason

    def exec_argv(self, command: list[str], *, tty: bool) -> tuple[list[str], int]:
        flags = ["-i", "-t"] if tty else ["-i"]
        return self._cli.exec_argv(*flags, self.name, *command), 0


def pull_policy(spec: Mapping[str, Any]) -> str:
    """The container's ``imagePullPolicy``, defaulted by the API server's own rule (a pod
    stored before the server defaulted it has none)."""
    given = spec.get("imagePullPolicy")
    if given:
        return str(given)
    return images.pull_policy(str(spec.get("image") or ""))


def combine(config: Mapping[str, Any], *, command: Sequence[str], args: Sequence[str]) -> list[str]:
    """The argv kubelet runs: ``command`` replaces the image's entrypoint (and its cmd),
    ``args`` replaces the image's cmd."""
    entrypoint = [str(w) for w in config.get("Entrypoint") or []]
    cmd = [str(w) for w in config.get("Cmd") or []]
    if command:
        return [*command, *args]
    return [*entrypoint, *(args or cmd)]


def limits(
    spec: Mapping[str, Any], controllers: Collection[str] | None = None, runtime: str = "podman"
) -> tuple[list[str], list[StartWarning]]:
    """``--memory`` (bytes) and ``--cpus`` from ``resources.limits`` (where set and valid),
    for the cgroup controllers podman can use (``controllers``; None: unknown, every flag);
    a limit whose controller is missing is left out and is a warning instead (podman would
    refuse to start the container: rootless cgroup v2 without delegation, cgroup v1 without
    that hierarchy)."""
    given = (spec.get("resources") or {}).get("limits") or {}
    words: list[str] = []
    warnings: list[StartWarning] = []
    for key, flag in (("memory", "--memory"), ("cpu", "--cpus")):
        if key not in given:
            continue
        amount = quantities.parse(given[key]).amount  # zero when not a quantity: no limit
        if amount <= 0:
            continue
        if controllers is not None and key not in controllers:  # the controller's name
            usable = ", ".join(sorted(controllers)) or "none"
            message = (
                f"limits.{key} {given[key]} is not applied: {runtime} cannot use the cgroup {key} "
                f"controller on this machine (usable controllers: {usable}); the container "
                "runs without this limit"
            )
            warnings.append(StartWarning(LIMITS_IGNORED, message))
            continue
        words += [flag, str(int(amount)) if key == "memory" else f"{amount:f}"]
    return words, warnings


# --- GPUs as CDI devices ------------------------------------------------------------------


def device_options(devices: Sequence[str]) -> list[str]:
    """``--device nvidia.com/gpu=<index>`` for each GPU the run holds (none: no device, as on
    a cluster a container that asks for no GPU sees none)."""
    words = []
    for device in devices:
        words += ["--device", f"{gpus.RESOURCE}={device}"]
    return words


def cdi_devices(kind: str, dirs: Sequence[Path] = CDI_DIRS) -> set[str]:
    """The names of the devices that the CDI spec files in ``dirs`` define for ``kind`` (a
    file that cannot be read or parsed defines none)."""
    found: set[str] = set()
    for directory in dirs:
        try:
            files = sorted(p for p in directory.iterdir() if p.suffix in _CDI_SUFFIXES)
        except OSError:
            continue
        for path in files:
            try:
                spec = yaml.safe_load(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, yaml.YAMLError):
                continue
            if not isinstance(spec, dict) or spec.get("kind") != kind:
                continue
            for device in spec.get("devices") or []:
                if isinstance(device, dict) and device.get("name") is not None:
                    found.add(str(device["name"]))
    return found


def check_devices(devices: Sequence[str], dirs: Sequence[Path] = CDI_DIRS) -> None:
    """A ``StartError`` (``CreateContainerError``, as containerd's failed CDI injection on a
    cluster) naming the fix, when a GPU the run holds has no CDI spec podman could use."""
    if not devices:
        return
    defined = cdi_devices(gpus.RESOURCE, dirs)
    missing = [f"{gpus.RESOURCE}={d}" for d in devices if d not in defined]
    if missing:
        where = " or ".join(str(d) for d in dirs)
        message = (
            f"CDI device injection failed: unresolvable CDI devices {', '.join(missing)}: no "
            f"CDI spec in {where} defines them; make one with `{CDI_FIX}`"
        )
        raise StartError("ContainerCannotRun", "CreateContainerError", message)


def network_aliases(target: Target) -> list[str]:
    """The names the pod is reached by on the session's network: its name, ``<pod>.<ns>.svc``
    and, with a ``subdomain``, its record in that headless Service,
    ``<hostname>.<subdomain>.<ns>.svc`` (an MPIJob v2beta1 hostfile's names)."""
    aliases = [target.pod, f"{target.pod}.{target.namespace}.svc"]
    if target.subdomain:
        aliases.append(f"{target.hostname}.{target.subdomain}.{target.namespace}.svc")
    return aliases


def mounts(launch: Launch) -> list[str]:
    """``--mount`` values for the container's ``volumeMounts`` (``subPath`` inside the volume)."""
    found = []
    for entry in launch.spec.get("volumeMounts") or []:
        source = launch.volumes.get(str(entry.get("name")))
        if source is None:
            continue
        if entry.get("subPath"):
            source = source / str(entry["subPath"])
        options = ["type=bind", f"source={source}", f"destination={entry['mountPath']}"]
        if entry.get("readOnly"):
            options.append("ro=true")
        found.append(mount_value(options))
    return found


def mount_value(options: Sequence[str]) -> str:
    """One ``--mount`` value: its ``key=value`` options as the CSV record both runtimes
    parse it as, each quoted where it must be, so a path with a comma or a quote (a
    ``mountPath`` is any path) stays one option and never adds another (``/d,source=/etc``)."""
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow(options)
    return out.getvalue()


def _exec_dir(state_dir: Path) -> Path:
    """A fresh directory with the exec and ssh clients, for ``EXEC_MOUNT``: under the state
    directory, or a private temporary one where the socket's path would be too long."""
    path = state_dir / "exec"
    if len(str(path / EXEC_SOCKET)) > _SOCKET_PATH_LIMIT:
        path = Path(tempfile.mkdtemp(prefix="trainop-exec-"))
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(mode=0o700, parents=True)
    here = Path(__file__).resolve().parent
    for client in ("execclient.py", "sshclient.py"):
        shutil.copyfile(here / client, path / client)
    ssh = path / "ssh"
    ssh.write_text(f'#!/bin/sh\nexec python3 -I -S {EXEC_MOUNT}/sshclient.py "$@"\n')
    ssh.chmod(0o755)
    return path


async def _created(client: asyncio.subprocess.Process, cidfile: Path) -> str:
    """The id ``podman run`` wrote to ``cidfile`` once it created the container (64 hex
    digits); "" when the client ended first (the container was never created) or after
    ``CREATE_TIMEOUT`` seconds."""
    ended = asyncio.ensure_future(client.wait())
    deadline = time.monotonic() + CREATE_TIMEOUT
    try:
        while True:
            with contextlib.suppress(OSError):
                found = cidfile.read_text(encoding="ascii").strip()
                if _CONTAINER_ID.fullmatch(found):
                    return found
            if ended.done() or time.monotonic() >= deadline:
                return ""
            await asyncio.wait([ended], timeout=_CREATE_POLL)
    finally:
        ended.cancel()


_STARTING = frozenset({"created", "configured", "initialized"})  # states before the start


def _alive(pid: str) -> bool:
    """Whether the process ``pid`` (a label's text) still runs; unknown owners count as gone."""
    try:
        os.kill(int(pid), 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True


def holder_name(session: str, target: Target) -> str:
    """The pod's holder's name (``_`` cannot be in a container's name, so no container's
    name is a holder's)."""
    return f"trainop-{session}-{target.namespace}-{target.pod}_pod".translate(_SAFE)


def find_pause_binary() -> Path | None:
    """The machine's ``catatonit`` (Podman's own init, a static binary), None without one."""
    for candidate in (shutil.which(PAUSE_BINARY), *PAUSE_PATHS):
        if candidate and os.access(candidate, os.X_OK):
            return Path(candidate)
    return None


def _pause_archive(binary: Path, archive: Path) -> None:
    """A root filesystem of one file, ``/catatonit``, as a tar ``import`` reads."""

    def owned_by_root(entry: tarfile.TarInfo) -> tarfile.TarInfo:
        entry.uid = entry.gid = 0
        entry.uname = entry.gname = "root"
        entry.mode = 0o755
        return entry

    with tarfile.open(archive, "w") as tar:  # the file itself, not a link to it
        tar.add(binary.resolve(), arcname=PAUSE_BINARY, recursive=False, filter=owned_by_root)


def container_name(session: str, target: Target) -> str:
    """A name unique per session and container (the pod name itself is a network alias)."""
    return f"trainop-{session}-{target.namespace}-{target.pod}-{target.container}".translate(_SAFE)
