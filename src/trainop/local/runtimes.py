"""Which kubelet runtime a local session uses: ``process`` (host processes, the default),
``podman`` or ``docker`` (containers, ``kubelet.containers``) or ``auto`` (note 095).

``auto`` picks a container runtime, Podman before Docker, when one works on this machine and
some container of the job has no ``command`` (it needs its image's entrypoint); otherwise
processes. Without a job (``local up``) ``auto`` is the first container runtime that works.
The choice and its reason are one line the CLI prints first.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainop import errors
from trainop.cluster.kubelet.runtimes import containercli, containers
from trainop.cluster.kubelet.runtimes.runtime import Runtime

CONTAINER_RUNTIMES = ("podman", "docker")  # ``auto``'s order of preference
CHOICES = ("process", *CONTAINER_RUNTIMES, "auto")


@dataclass(frozen=True, slots=True)
class Choice:
    """The runtime chosen (None: host processes) and why, for the first line of output."""

    runtime: Runtime | None
    name: str
    why: str

    @property
    def line(self) -> str:
        return f"runtime: {self.name} ({self.why})"


async def choose(
    kind: str, *, state_dir: Path, job: dict[str, Any] | None = None, keep: bool = False
) -> Choice:
    """The runtime for ``kind``, opened (``errors.TrainopError`` when podman was asked for and
    does not work); ``keep``: containers outlive this session and the next one on the same
    state directory re-attaches to them (``trainop local up``'s daemon, note 120)."""
    return await opened(await _choose(kind, state_dir=state_dir, job=job, keep=keep))


async def _choose(
    kind: str, *, state_dir: Path, job: dict[str, Any] | None, keep: bool = False
) -> Choice:
    if kind == "process":
        return Choice(None, "process", "containers run as host processes")
    if kind in CONTAINER_RUNTIMES:
        cli = containercli.CLIS[kind](state_dir / kind)
        if not await containercli.works(cli):
            raise errors.TrainopError(
                f"--runtime {kind}: {kind} does not work here (make {ENV_TARGETS[kind]})"
            )
        return Choice(_runtime(cli, keep), kind, "asked for")
    needy: list[str] = []  # without a job (``local up``): containers whenever one works
    if job is not None:
        needy = [name for name, container in _containers(job) if not container.get("command")]
        if not needy:
            return Choice(None, "process", "auto: every container has a command")
    for name in CONTAINER_RUNTIMES:
        cli = containercli.CLIS[name](state_dir / name)
        if await containercli.works(cli):
            why = f"no command in {', '.join(needy)}" if needy else f"{name} works here"
            return Choice(_runtime(cli, keep), name, f"auto: {why}")
    return Choice(None, "process", "auto: neither podman nor docker works here")


ENV_TARGETS = {"podman": "container-env", "docker": "docker-env"}  # what installs each


def _runtime(cli: containercli.Cli, keep: bool = False) -> containers.ContainerRuntime:
    return containers.ContainerRuntime(cli, session=secrets.token_hex(4), keep=keep)


async def opened(choice: Choice) -> Choice:
    """``choice`` with its runtime opened (its network made: the cluster's addressing
    depends on it) and the line saying which network the containers use."""
    if choice.runtime is None:
        return choice
    await choice.runtime.open()
    where = "a network of their own" if choice.runtime.addresses_by_name else "host network"
    return Choice(choice.runtime, choice.name, f"{choice.why}; {where}")


def _containers(job: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every container of every replica template: (``<replica>/<container>``, spec)."""
    spec = job.get("spec") or {}
    for key, replicas in spec.items():
        if not key.endswith("ReplicaSpecs") or not isinstance(replicas, dict):
            continue
        for replica, replica_spec in replicas.items():
            template = (replica_spec or {}).get("template") or {}
            pod = template.get("spec") or {}
            for container in [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]:
                if isinstance(container, dict):
                    yield f"{replica.lower()}/{container.get('name')}", container
