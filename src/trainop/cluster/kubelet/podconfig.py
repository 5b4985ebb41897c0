"""Configuring one pod before its containers run: env, volumes, argv, working directories.

``Configuration.configure`` fetches the ConfigMaps, Secrets and claims the pod reads, builds its
sandbox and volumes, its own Python environment (``overlay``: pip never writes the kubelet's)
and every container's ``runtime.Launch`` (env, argv, working directory, GPUs). A
``ConfigError`` shows the container(s) ``waiting: CreateContainerConfigError`` with kubelet's
message and is retried every ``config_retry`` seconds; after ``config_timeout`` the pod fails
with that reason (``CannotRun``; Kubernetes would wait forever, a local run must end).
Neighbours: ``podrun`` (calls it once the pod's address is known), ``environment``,
``sandbox``, ``overlay``, ``podcontext``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable
from pathlib import Path

from trainop import errors
from trainop.cluster.kubelet import claims, environment, gpus, overlay, sandbox
from trainop.cluster.kubelet.environment import ConfigError, Sources
from trainop.cluster.kubelet.podcontext import CannotRun, PodContext, Raw, containers_of
from trainop.cluster.kubelet.runtimes.runtime import Launch
from trainop.kube.client import Client
from trainop.kube.resources import CONFIGMAPS, SECRETS


class Configuration:
    """Every container's launch settings for one pod (see the module docstring)."""

    def __init__(self, ctx: PodContext, client: Client) -> None:
        self._ctx, self._client = ctx, client
        self._overlay: overlay.Overlay | None = None
        self.launches: dict[str, Launch] = {}

    async def configure(self) -> bool:
        """Make every launch, retrying while configuration fails; False when the pod was
        stopped meanwhile, ``CannotRun`` after ``config_timeout``."""
        ctx = self._ctx
        deadline = time.monotonic() + ctx.settings.config_timeout
        while True:
            problems = await self._try()
            if not problems:
                return True
            for container in ctx.state.all_containers():
                if container.name in problems:
                    container.wait("CreateContainerConfigError", problems[container.name])
            ctx.changed()
            if time.monotonic() >= deadline:
                message = "; ".join(f"container {n}: {m}" for n, m in problems.items())
                raise CannotRun("CreateContainerConfigError", message, tuple(problems))
            if await ctx.stopped_within(ctx.settings.config_retry):
                return False

    async def _try(self) -> dict[str, str]:
        """One attempt: the problem of each container that cannot be configured yet."""
        ctx = self._ctx
        config_maps, secrets = await self._fetch()
        sources = Sources(
            config_maps={k: _maybe(environment.config_map_data, v) for k, v in config_maps.items()},
            secrets={k: _maybe(environment.decode_secret, v) for k, v in secrets.items()},
        )
        every = [c["name"] for c in containers_of(ctx.pod)]
        claim_dirs = await claims.resolve(self._client, ctx.pod)  # note 132
        try:
            volumes = sandbox.prepare(ctx.sandbox, ctx.pod, config_maps, secrets, claim_dirs)
        except ConfigError as exc:
            return dict.fromkeys(every, str(exc))
        if self._overlay is None:  # the pod's own Python environment (pip never writes ours)
            self._overlay = await asyncio.to_thread(overlay.prepare, ctx.sandbox.path)
        problems = {}
        for container in containers_of(ctx.pod):
            try:
                self.launches[container["name"]] = self._launch(container, sources, volumes)
            except ConfigError as exc:
                problems[container["name"]] = str(exc)
        return problems

    async def _fetch(self) -> tuple[dict[str, Raw | None], dict[str, Raw | None]]:
        wanted_maps, wanted_secrets = environment.referenced(self._ctx.pod)
        namespace = self._ctx.state.namespace
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
        ctx, settings = self._ctx, self._ctx.settings
        container = claims.read_only_mounts(ctx.pod, container)
        extra = sandbox.variables(ctx.sandbox, container, volumes)
        extra["HOSTNAME"] = str(ctx.pod["spec"].get("hostname") or ctx.state.name)
        extra["TRAINOP_NAMESPACE"] = ctx.state.namespace  # kubectl's in-cluster namespace
        if settings.exec_address:
            extra["TRAINOP_EXEC_ADDRESS"] = settings.exec_address
        node = dataclasses.replace(settings.node, pod_ip=ctx.state.pod_ip)
        own = environment.resolve(ctx.pod, container, sources, node, injected=extra)
        visible = {**extra, **own}
        sandbox.mount(ctx.sandbox, container, volumes, claims.claim_volumes(ctx.pod))
        return Launch(
            argv=environment.argv(container, visible) if container.get("command") else [],
            env={**settings.base_env, **self._overlay_env(), **visible},
            cwd=sandbox.working_dir(ctx.sandbox, container, settings.working_dir),
            gpus=gpus.wanted(container),
            command=environment.argv({"command": container.get("command")}, visible),
            args=environment.argv({"args": container.get("args")}, visible),
            volumes=dict(volumes),
            spec=container,
            pod_env={"HOSTNAME": extra["HOSTNAME"], **own},
            pod_spec=ctx.pod["spec"],
        )

    def _overlay_env(self) -> dict[str, str]:
        base = dict(self._ctx.settings.base_env)
        return self._overlay.environment(base) if self._overlay else {}


def _maybe(convert: Callable[[Raw], dict[str, str]], obj: Raw | None) -> dict[str, str] | None:
    return None if obj is None else convert(obj)
