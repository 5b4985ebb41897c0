"""The container CLIs the container runtime talks to (``containers``, note 095): podman and
docker, each with this session's settings, and what each says differently (its dialect).

``Cli`` holds what the two share: a call's exit status and output, JSON answers, ``info``
asked once. A subclass is a dialect: global flags and environment (podman's ``--runtime runc
--cgroup-manager cgroupfs`` and ``CONTAINERS_CONF``; none for docker), how it tells whether an
image is present, how it lists containers and networks (podman: one JSON array; docker: one
JSON object per line, whose ids are inspected for their labels as JSON), ``--entrypoint``
(podman: the argv as JSON; docker: one executable), removal, the cgroup controllers its
``info`` reports, whether it can inject CDI devices, and whether a network's DNS server needs
a holder. Only machine-readable output is read (JSON, exit statuses), never human text.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CONF = "[containers]\ndefault_ulimits = []\n"
_BASE = ("--runtime", "runc", "--cgroup-manager", "cgroupfs")
DOCKER_CDI_VERSION = 25  # the first docker whose daemon injects CDI devices
_JSON_LINES = ("--format", "{{json .}}")  # docker's listings: one JSON object per line


@dataclass(frozen=True, slots=True)
class Reply:
    """A finished CLI call."""

    code: int
    out: str
    err: str

    @property
    def message(self) -> str:
        return self.err.strip() or self.out.strip() or f"the runtime exited with {self.code}"

    @property
    def last_line(self) -> str:
        """The message's last line (the CLI's ``Error: ...``; warnings before it are retries)."""
        return self.message.splitlines()[-1]


class Cli:
    """A container CLI with this session's settings: what podman and docker share (calls,
    JSON answers); the subclasses are the dialects, each what its CLI says differently."""

    name = ""  # the runtime's name: the default binary, ``--runtime``'s value, the id scheme
    holds_dns = False  # whether a network's DNS server needs a holder (``_hold_dns``)
    # whether a pod's containers join one holder's network and UTS namespaces (``prepare``:
    # ``--network container:``, ``--uts container:``); docker's UTS sharing is untested here
    shares_pod_namespaces = False
    replaces_network_dns = False  # whether ``run --dns`` replaces the network's DNS server
    read_only_words: tuple[str, ...] = ()  # what ``--read-only`` needs to be kubelet's

    def __init__(self, state_dir: Path, *, binary: str = "") -> None:
        self.state_dir = state_dir
        self.binary = binary or self.name
        self.conf = state_dir / "containers.conf"
        self._info: Any = None  # ``info``

    def write_conf(self) -> None:
        self.workdir()

    def workdir(self) -> Path:
        """Where the CLI runs (the state directory): podman's conmon writes files such as
        ``oom`` into its working directory, which must not be the user's."""
        self.state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        return self.state_dir

    def argv(self, *words: str) -> list[str]:
        return [self.binary, *words]

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        return {**os.environ, **(extra or {})}

    async def _spawn(self, words: Sequence[str], output: int) -> asyncio.subprocess.Process:
        return await asyncio.create_subprocess_exec(
            *self.argv(*words),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=output,
            stderr=output,
            env=self.env(),
            cwd=self.workdir(),
        )

    async def call(self, *words: str) -> Reply:
        process = await self._spawn(words, asyncio.subprocess.PIPE)
        out, err = await process.communicate()
        assert process.returncode is not None
        return Reply(process.returncode, out.decode(errors="replace"), err.decode(errors="replace"))

    async def info(self) -> Any:
        """The CLI's ``info`` as JSON (None when it fails), asked until it answers once."""
        if self._info is None:
            self._info = await self.json(*self.info_words())
        return self._info

    async def quiet(self, *words: str) -> int:
        """A call whose output is discarded (nothing it starts can hold a pipe of ours)."""
        return await (await self._spawn(words, asyncio.subprocess.DEVNULL)).wait()

    async def json(self, *words: str) -> Any:
        """The JSON a call printed (None when it failed or printed nothing)."""
        reply = await self.call(*words)
        if reply.code != 0 or not reply.out.strip():
            return None
        try:
            return json.loads(reply.out)
        except ValueError:
            return None

    # --- the dialect: what each CLI says differently ---------------------------------------

    def info_words(self) -> list[str]:
        return ["info", "--format", "json"]

    def image_exists_words(self, image: str) -> list[str]:
        """A call that exits 0 exactly when ``image`` is present."""
        return ["image", "inspect", "--", image]

    def inspect_words(self, *names: str) -> list[str]:
        """A call printing a JSON array, one object per container or image named."""
        return ["inspect", "--", *names]

    def remove_words(self, *names: str) -> list[str]:
        """Remove containers at once (killed, no grace period)."""
        return ["rm", "-f", *names]

    def remove_pod_words(self, holder: str, names: Sequence[str]) -> list[str]:
        """Remove a pod's containers ``names`` and its holder ("" for none) in one call."""
        return self.remove_words(*names, *([holder] if holder else []))

    def network_remove_words(self, name: str) -> list[str]:
        """Remove a network (its containers are gone; docker 20.10's CLI has no ``-f``)."""
        return ["network", "rm", name]

    def entrypoint_words(self, argv: Sequence[str], image: str) -> list[str]:
        """The end of a ``run``/``create``: ``argv`` as the whole command, the image's
        entrypoint and cmd replaced (``combine`` decided it). ``--`` before the image: a
        manifest's ``image`` is never read as an option (``--help``, ``--privileged``)."""
        return ["--entrypoint", json.dumps(list(argv)), "--", image]

    def controllers(self, info: Any) -> frozenset[str] | None:
        """The cgroup controllers the runtime can use, from ``info`` (None: it does not say)."""
        raise NotImplementedError

    def device_problem(self, info: Any) -> str:
        """Why the runtime cannot inject CDI devices ("" where it can, as far as it says)."""
        del info
        return ""

    async def containers(self, label: str) -> list[tuple[str, Mapping[str, Any]]]:
        """(id, labels) of every container with the label filter ``label``."""
        raise NotImplementedError

    async def networks(self, label: str) -> list[tuple[str, Mapping[str, Any]]]:
        """(name, labels) of every network with the label filter ``label``."""
        raise NotImplementedError

    def exec_argv(self, *words: str) -> list[str]:
        """A command line for an exec client, run outside this object (its own environment)."""
        return self.argv("exec", *words)


class Podman(Cli):
    """The podman CLI: every call carries ``--runtime runc --cgroup-manager cgroupfs`` and runs
    with ``CONTAINERS_CONF`` (empty default ulimits); listings are one JSON array each."""

    name = "podman"
    holds_dns = True
    shares_pod_namespaces = True
    replaces_network_dns = True  # in resolv.conf: the network's gateway is named first
    read_only_words = ("--read-only-tmpfs=false",)  # no writable /tmp, /run, /var/tmp

    def write_conf(self) -> None:
        self.workdir()
        self.conf.write_text(CONF, encoding="utf-8")

    def argv(self, *words: str) -> list[str]:
        return [self.binary, *_BASE, *words]

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        return {**os.environ, **(extra or {}), "CONTAINERS_CONF": str(self.conf)}

    def image_exists_words(self, image: str) -> list[str]:
        return ["image", "exists", "--", image]

    def inspect_words(self, *names: str) -> list[str]:
        return ["inspect", "--format", "json", "--", *names]

    def remove_words(self, *names: str) -> list[str]:
        return ["rm", "-f", "-t", "0", *names]

    def remove_pod_words(self, holder: str, names: Sequence[str]) -> list[str]:
        """``--depend``: the holder's dependents (the pod's containers) go first; in a plain
        ``rm`` of them all the holder's removal races theirs and fails."""
        if not holder:
            return self.remove_words(*names)
        return ["rm", "-f", "-t", "0", "--depend", holder, *names]

    def network_remove_words(self, name: str) -> list[str]:
        return ["network", "rm", "-f", name]

    def controllers(self, info: Any) -> frozenset[str] | None:
        host = info.get("host") if isinstance(info, dict) else None
        found = host.get("cgroupControllers") if isinstance(host, dict) else None
        return frozenset(str(c) for c in found) if isinstance(found, list) else None

    async def containers(self, label: str) -> list[tuple[str, Mapping[str, Any]]]:
        found = await self.json("ps", "-a", "--filter", label, "--format", "json")
        return podman_listing(found, "Id", "Labels")

    async def networks(self, label: str) -> list[tuple[str, Mapping[str, Any]]]:
        found = await self.json("network", "ls", "--filter", label, "--format", "json")
        return podman_listing(found, "name", "labels")

    def exec_argv(self, *words: str) -> list[str]:
        return ["env", f"CONTAINERS_CONF={self.conf}", *self.argv("exec", *words)]


class Docker(Cli):
    """The docker CLI (its daemon's defaults: no global flags, no configuration file).
    Listings print one JSON object per line whose labels are a ``k=v,...`` string (ambiguous
    where a value has a comma), so the ids they give are inspected for the labels as JSON.
    Its ``--entrypoint`` is one executable (the rest of the argv follows the image), its
    embedded DNS server needs no holder, its ``info`` names no cgroup controllers."""

    name = "docker"

    def info_words(self) -> list[str]:
        return ["info", "--format", "{{json .}}"]

    def entrypoint_words(self, argv: Sequence[str], image: str) -> list[str]:
        return [f"--entrypoint={argv[0]}", "--", image, *argv[1:]]

    def controllers(self, info: Any) -> frozenset[str] | None:
        return docker_controllers(info)

    def device_problem(self, info: Any) -> str:
        return docker_device_problem(info)

    async def containers(self, label: str) -> list[tuple[str, Mapping[str, Any]]]:
        found = await self._inspected(["ps", "-a"], ["inspect"], label)
        return [(i, (o.get("Config") or {}).get("Labels") or {}) for i, o in _objects(found, "Id")]

    async def networks(self, label: str) -> list[tuple[str, Mapping[str, Any]]]:
        found = await self._inspected(["network", "ls"], ["network", "inspect"], label)
        return [(name, o.get("Labels") or {}) for name, o in _objects(found, "Name")]

    async def _inspected(self, listing: list[str], inspect: list[str], label: str) -> Any:
        """The inspected objects that ``listing`` finds with ``label``. One gone in between
        makes ``inspect`` exit 1 while it still prints the others: those are kept."""
        listed = await self.call(*listing, "--no-trunc", "--filter", label, *_JSON_LINES)
        ids = docker_ids(listed.out if listed.code == 0 else "")
        if not ids:
            return None
        reply = await self.call(*inspect, *ids)
        try:
            return json.loads(reply.out)
        except ValueError:
            return None


CLIS: Mapping[str, type[Cli]] = {"podman": Podman, "docker": Docker}


def podman_listing(found: Any, key: str, labels: str) -> list[tuple[str, Mapping[str, Any]]]:
    """(``key``, labels) of each object of podman's JSON array (``ps`` or ``network ls``)."""
    return [(k, o.get(labels) or {}) for k, o in _objects(found, key)]


def first_object(found: Any) -> Mapping[str, Any]:
    """The first object of an ``inspect`` answer (a JSON array), {} when there is none."""
    first = found[0] if isinstance(found, list) and found else None
    return first if isinstance(first, dict) else {}


def _objects(found: Any, key: str) -> list[tuple[str, Mapping[str, Any]]]:
    """The objects of a JSON array that have a non-empty ``key``, with its value."""
    if not isinstance(found, list):
        return []
    return [(str(o[key]), o) for o in found if isinstance(o, dict) and o.get(key)]


def docker_ids(out: str) -> list[str]:
    """The ``ID`` of each line of a docker listing printed with ``--format '{{json .}}'``."""
    ids = []
    for line in out.splitlines():
        try:
            found = json.loads(line)
        except ValueError:
            continue
        if isinstance(found, dict) and found.get("ID"):
            ids.append(str(found["ID"]))
    return ids


def docker_controllers(info: Any) -> frozenset[str] | None:
    """The cgroup controllers docker can use, from ``docker info``: its flags say whether
    memory and CPU limits work (``MemoryLimit``, ``CpuCfsQuota``); None where it says neither."""
    if not isinstance(info, dict) or ("MemoryLimit" not in info and "CpuCfsQuota" not in info):
        return None
    flags = {"memory": "MemoryLimit", "cpu": "CpuCfsQuota"}
    return frozenset(name for name, flag in flags.items() if info.get(flag) is True)


def docker_device_problem(info: Any) -> str:
    """Why this docker daemon cannot inject CDI devices: before 25 it has no CDI; from 25 it
    lists the spec directories it reads (``CDISpecDirs``) only where CDI is enabled."""
    version = str(info.get("ServerVersion") or "") if isinstance(info, dict) else ""
    major = re.match(r"\d+", version)
    if major is None or int(major.group()) < DOCKER_CDI_VERSION:
        return (
            f"docker {version or '(version unknown)'} cannot inject CDI devices (docker "
            f"{DOCKER_CDI_VERSION} or later with CDI enabled can)"
        )
    if not info.get("CDISpecDirs"):
        return (
            f"docker {version} has CDI disabled: enable it ('features': {{'cdi': true}} in "
            "/etc/docker/daemon.json) and restart dockerd"
        )
    return ""


def available(binary: str = "podman") -> bool:
    """Whether a CLI is installed (``works`` says whether it can run containers)."""
    return shutil.which(binary) is not None


async def works(cli: Cli) -> bool:
    """Whether the runtime runs here (its ``info`` answers), with this session's settings."""
    if not available(cli.binary):
        return False
    cli.write_conf()
    return await cli.info() is not None
