"""The kubelet through its runtime seam: a runtime whose image cannot be pulled shows
kubelet's ErrImagePull, then ImagePullBackOff (not CrashLoopBackOff), with the runtime's
message; the pod's state machine, back-off and events are the shared ones."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from trainop.controller.clock import FakeClock
from trainop.kube.resources import EVENTS
from trainop.local.kubelet import Backoff, execclient
from trainop.local.kubelet.runtime import Launch, Running, StartError, Target

from .conftest import Site
from .harness import Local, pod, run_local

MESSAGE = 'failed to pull image "img:1": Error: registry unreachable'


class NoPull:
    """A runtime that can never pull its image."""

    addresses_by_name = False

    def __init__(self) -> None:
        self.starts = 0

    async def open(self) -> None:
        pass

    async def close(self) -> None:
        pass

    async def start(self, target: Target, launch: Launch, env: Mapping[str, str]) -> Running:
        self.starts += 1
        raise StartError("ErrImagePull", "ErrImagePull", MESSAGE, image="img:1")


def waiting(reason: str, restarts: int = 0) -> Any:
    def check(found: dict[str, Any]) -> bool:
        entries = (found.get("status") or {}).get("containerStatuses") or [{}]
        state = (entries[0].get("state") or {}).get("waiting") or {}
        return state.get("reason") == reason and entries[0].get("restartCount") == restarts

    return check


def test_an_image_that_cannot_be_pulled_backs_off_as_image_pull_back_off(site: Site) -> None:
    clock = FakeClock()
    runtime = NoPull()
    container = {"name": "main", "image": "img:1"}  # no command: the image's entrypoint

    async def body(env: Local) -> None:
        await env.create(pod("pull", container, restart_policy="OnFailure"))
        found = await env.wait("pull", waiting("ErrImagePull"))
        state = found["status"]["containerStatuses"][0]["state"]["waiting"]
        assert state["message"] == MESSAGE
        clock.advance(1)  # kubelet shows the error itself for one sync period
        found = await env.wait("pull", waiting("ImagePullBackOff"))
        state = found["status"]["containerStatuses"][0]["state"]["waiting"]
        assert state["message"] == 'Back-off pulling image "img:1"'
        assert found["status"]["phase"] == "Pending"
        await env.kubelet.drained()
        events = await env.client.list(EVENTS, namespace=env.namespace)
        messages = {(e["reason"], e["message"]) for e in events.items}
        assert ("BackOff", 'Back-off pulling image "img:1"') in messages
        assert ("Failed", f"Error: {MESSAGE}") in messages
        clock.advance(9)  # the rest of the first 10 s back-off
        await env.wait("pull", waiting("ErrImagePull", restarts=1))  # tried again
        assert runtime.starts == 2

    run_local(
        site.server,
        site.logs,
        site.root,
        body,
        clock=clock,
        backoff=Backoff(),
        container_runtime=runtime,
    )


class WithExecSocket(NoPull):
    """A runtime whose containers reach the kubelet's exec through a socket file."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.exec_socket = path


def test_the_kubelet_also_serves_exec_on_the_runtimes_socket_file(
    site: Site, tmp_path: Path
) -> None:
    """Containers have a network namespace of their own, so the abstract address is out of
    their reach: the kubelet listens on the runtime's ``exec_socket`` too, same protocol."""
    path = tmp_path / "exec.sock"

    async def body(env: Local) -> None:
        assert path.is_socket()
        assert env.kubelet.exec_address.startswith("@")
        with pytest.raises(RuntimeError, match='pods "nope" not found'):
            await asyncio.to_thread(
                execclient.run,
                str(path),
                namespace=env.namespace,
                pod="nope",
                container="",
                command=["true"],
            )

    run_local(site.server, site.logs, site.root, body, container_runtime=WithExecSocket(path))


class Recording(NoPull):
    """A runtime that records the GPUs each start holds (and cannot start anything)."""

    def __init__(self) -> None:
        super().__init__()
        self.devices: dict[str, tuple[str, ...]] = {}

    async def start(self, target: Target, launch: Launch, env: Mapping[str, str]) -> Running:
        self.devices[target.pod] = launch.devices
        raise StartError("StartError", "RunContainerError", "recorded")


def test_the_gpus_a_container_holds_reach_its_runtime(site: Site) -> None:
    """One mechanism for every runtime: the held devices are on the ``Launch`` (the container
    runtime makes them CDI devices); a container that asks for none holds none."""
    runtime = Recording()
    wants = {"limits": {"nvidia.com/gpu": "2"}}

    async def body(env: Local) -> None:
        await env.create(pod("two", {"name": "main", "image": "i", "resources": wants}))
        await env.create(pod("none", {"name": "main", "image": "i"}))
        for name in ("two", "none"):
            await env.phase(name, "Failed", "Succeeded")
        assert runtime.devices == {"two": ("0", "1"), "none": ()}

    run_local(site.server, site.logs, site.root, body, gpus=("0", "1"), container_runtime=runtime)
