"""The container runtime's session network (note 095): the network, its DNS server's holder,
and each pod's holder, whose network and UTS namespaces the pod's containers join.

One bridge network per session (``trainop-<session>``, with Podman's DNS): a pod's hostname is
its own and the pod name (and ``<pod>.<ns>.svc``, and with a ``subdomain``
``<hostname>.<subdomain>.<ns>.svc``) are its aliases, so the operator's Service names resolve
and the manifest's ports are used as they are; the pod's DNS settings are ``podoptions``'.
Where no network can be created, containers share the host's network (``name`` is "").

A pod's holder (``prepare``) is made before its first container, as kubelet makes a pod
sandbox: a ``catatonit -P`` container from ``images.PAUSE_IMAGE`` whose address is the pod's
``status.podIP``; holders run side by side, one pause import serves them all; ``release``
hands a pod's holder to ``removals``, which removes it with the pod's containers. Docker, or a
machine where no holder can be made, gives each container an identity of its own. Neighbours:
``containers`` (the runtime, which owns one ``SessionNetwork``), ``images``, ``options``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from trainop.cluster.kubelet.runtimes import containercli, images, options, podoptions
from trainop.cluster.kubelet.runtimes.runtime import Report, Target

log = logging.getLogger(__name__)

POD_NOT_SHARED = "PodNamespacesNotShared"  # the Warning Event's reason (``prepare``)


class SessionNetwork:
    """The session's network and what holds it (see the module docstring)."""

    def __init__(self, cli: containercli.Cli, *, session: str) -> None:
        self._cli = cli
        self.session = session
        self.name = ""  # the session's network, "" for the host's
        self.dns = ""  # its DNS server where ``--dns`` replaces it (``_find_dns``)
        self._dns_held = False  # ``hold_dns``
        self._dns_lock = asyncio.Lock()
        self._holders: dict[str, str] = {}  # pod uid -> its holder container (``prepare``)
        self.adopting = False  # an earlier session's network and holders are this one's
        self._pause_lock = asyncio.Lock()  # the holders' image, made once
        self._pause: str | None = None  # the holders' image ("" where none can be made)
        self._named: set[str] = set()  # holder names this session has run

    async def create(self) -> None:
        """Make the session's network (else the host's is used, with a warning)."""
        name = f"trainop-{self.session}"
        labels = options.session_labels(self.session, self._cli.state_dir)
        reply = await self._cli.call("network", "create", *labels, name)
        if reply.code != 0 and self.adopting:  # the earlier session's, kept (note 120)
            reply = await self._cli.call("network", "inspect", name)
        if reply.code == 0:
            self.name = name
            self.dns = await self._find_dns()
        else:
            log.warning("no container network (%s): containers use the host's", reply.message)

    async def _find_dns(self) -> str:
        """The session network's DNS server (its first gateway) where the runtime's ``--dns``
        replaces it in a container's resolv.conf (Podman), else "" (Docker's embedded
        server stays and forwards to the ``--dns`` servers)."""
        if not self._cli.replaces_network_dns:
            return ""
        found = containercli.first_object(await self._cli.json("network", "inspect", self.name))
        for subnet in found.get("subnets") or []:
            if isinstance(subnet, dict) and subnet.get("gateway"):
                return str(subnet["gateway"])
        return ""

    async def hold_dns(self, image: str, argv: list[str]) -> None:
        """Once per session, before the first container joins the network: a container on
        it that is initialized (its network set up) and never started, made by calls whose
        output is discarded. The first container on a network starts Podman's DNS server
        (aardvark-dns), which prints to the stderr of the podman call that started it ("failed
        to connect to syslog" where no syslog runs): that call is this one, not a replica's
        ``podman run``, whose stderr is the container's log. The holder keeps the server up
        until ``close`` removes it with the session's containers. Best effort: where it cannot
        be made, the line shows in the first replica's log, as before. Not needed where pods
        have holders (``prepare``): a holder's ``run --detach``, whose output is discarded,
        is the first call on the network, and the pods' containers join their holders'
        namespaces rather than the network, so no replica's ``run`` starts the server."""
        async with self._dns_lock:
            if self._dns_held or not self.name or not self._cli.holds_dns:
                return
            self._dns_held = True
            name = f"trainop-{self.session}-dns"
            created = await self._cli.quiet(
                "create",
                "--name",
                name,
                "--network",
                self.name,
                *options.session_labels(self.session, self._cli.state_dir),
                "--pull",
                "never",
                *self._cli.entrypoint_words(argv, image),  # never run: the image has it
            )
            if created != 0 or await self._cli.quiet("init", name) != 0:
                log.debug(
                    "no DNS holder on %s: its first replica's log may show the server's "
                    "start-up line",
                    self.name,
                )

    def identity_options(self, target: Target, pod_spec: Mapping[str, Any]) -> list[str]:
        """A pod's network identity: its hostname, the session network with its names and
        the pod's DNS settings (or the host's network and resolver)."""
        words = ["--hostname", target.hostname]
        if not self.name:  # the host's resolver: no pod DNS settings
            return [*words, "--network", "host"]
        words += ["--network", self.name]
        for alias in network_aliases(target):
            words += ["--network-alias", alias]
        return [*words, *podoptions.dns_options(dict(pod_spec), target.namespace, self.dns)]

    def holder(self, uid: str) -> str:
        """The holder ``prepare`` made for the pod ``uid``, "" where it made none."""
        return self._holders.get(uid, "")

    async def prepare(self, target: Target, pod_spec: Mapping[str, Any], report: Report) -> str:
        """Before the pod's first container: its holder, the container that holds the pod's
        network and UTS namespaces, which every container of the pod joins (one
        ``localhost``, one hostname, one address, as in a Kubernetes pod, whose pause
        container holds them); removed by ``release``. The pod's address on the session
        network, or "" where it has no holder: the host's network, a runtime that does not
        share them (docker), or no holder could be made (then each container has an
        identity of its own, and a pod of more than one gets a Warning Event saying so)."""
        if not self.name or not self._cli.shares_pod_namespaces:
            return ""
        async with self._pause_lock:  # one import for every pod; holders run side by side
            if self._pause is None:
                self._pause = await images.import_pause(self._cli)
            image = self._pause
        name = options.holder_name(self.session, target)
        if self.adopting and await self._running(name):  # re-attached containers joined it
            problem = ""
        elif image:
            problem = await self._run_holder(name, image, target, pod_spec)
        else:
            problem = f"no {images.PAUSE_BINARY} on this machine to make {images.PAUSE_IMAGE} from"
        if problem:
            count = len(pod_spec.get("initContainers") or [])
            if count + len(pod_spec.get("containers") or []) > 1:
                message = f"the pod's containers do not share localhost and hostname: {problem}"
                report("Warning", POD_NOT_SHARED, message)
            return ""
        self._holders[target.uid] = name
        return await self._address(name)

    async def _run_holder(
        self, name: str, image: str, target: Target, pod_spec: Mapping[str, Any]
    ) -> str:
        """Run the pod's holder ``name``; what went wrong, "" when it runs."""
        if self.adopting or name in self._named:  # an earlier pod's (same name, new uid)
            await self._cli.call(*self._cli.remove_words(name))
        self._named.add(name)  # a fresh session's holder names are new: nothing to remove
        identity = self.identity_options(target, pod_spec)
        pod = options.pod_options(self.session, self._cli.state_dir, target)
        labels = [*pod, "--label", f"{options.HOLDER_LABEL}=true"]
        code = await self._cli.quiet("run", "--detach", "--name", name, *labels, *identity, image)
        return f"{self._cli.name} run of the holder exited {code}" if code else ""

    async def _running(self, name: str) -> bool:
        """Whether the container ``name`` runs (an adopted pod holder)."""
        found = containercli.first_object(await self._cli.json(*self._cli.inspect_words(name)))
        state = found.get("State")
        return isinstance(state, dict) and str(state.get("Status") or "").lower() == "running"

    async def _address(self, name: str) -> str:
        """The container's address on the session network ("" where it shows none)."""
        found = containercli.first_object(await self._cli.json(*self._cli.inspect_words(name)))
        networks = (found.get("NetworkSettings") or {}).get("Networks") or {}
        entry = networks.get(self.name) if isinstance(networks, dict) else None
        address = entry.get("IPAddress") if isinstance(entry, dict) else None
        return str(address) if address else ""

    def release(self, uid: str) -> str:
        """The pod has ended: its holder, "" where it had none, for the runtime to remove
        with the pod's containers (``removals``)."""
        return self._holders.pop(uid, "")


def network_aliases(target: Target) -> list[str]:
    """The names the pod is reached by on the session's network: its name, ``<pod>.<ns>.svc``
    and, with a ``subdomain``, its record in that headless Service,
    ``<hostname>.<subdomain>.<ns>.svc`` (an MPIJob v2beta1 hostfile's names)."""
    aliases = [target.pod, f"{target.pod}.{target.namespace}.svc"]
    if target.subdomain:
        aliases.append(f"{target.hostname}.{target.subdomain}.{target.namespace}.svc")
    return aliases
