"""The kubelet through its runtime seam: a runtime whose image cannot be pulled shows
kubelet's ErrImagePull, then ImagePullBackOff (not CrashLoopBackOff), with the runtime's
message, and only waits (the container never ran: no restartCount, no lastState, whatever the
restart policy); the pod's state machine, back-off and events are the shared ones."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests import polling
from tests.integration.cluster.kubelet.conftest import Site
from tests.integration.cluster.kubelet.harness import Local, pod, py, run_local
from trainop.cluster.kubelet import Backoff, recovery
from trainop.cluster.kubelet.exec import execclient
from trainop.cluster.kubelet.reaper import Reaper
from trainop.cluster.kubelet.runtimes.host import HostRuntime
from trainop.cluster.kubelet.runtimes.runtime import (
    Launch,
    Report,
    Running,
    StartError,
    StartWarning,
    Target,
    no_report,
)
from trainop.kube.clock import FakeClock
from trainop.kube.resources import EVENTS

MESSAGE = 'failed to pull image "img:1": Error: registry unreachable'


class NoPull:
    """A runtime that can never pull its image."""

    addresses_by_name = False

    def __init__(self, *, never: bool = False) -> None:
        self.starts = 0
        self.never = never  # ``imagePullPolicy: Never`` and the image absent

    async def open(self) -> None:
        pass

    async def close(self) -> None:
        pass

    async def release(self, uid: str) -> None:
        pass

    async def prepare(self, target: Target, pod_spec: Mapping[str, Any], report: Report) -> str:
        return ""

    async def start(
        self, target: Target, launch: Launch, env: Mapping[str, str], report: Report = no_report
    ) -> Running:
        self.starts += 1
        if self.never:
            raise StartError(NEVER, NEVER, NEVER_MESSAGE, image="img:1")
        report("Normal", "Pulling", 'Pulling image "img:1"')  # as the container runtime does
        raise StartError("ErrImagePull", "ErrImagePull", MESSAGE, image="img:1")


NEVER = "ErrImageNeverPull"
NEVER_MESSAGE = 'Container image "img:1" is not present with pull policy of Never'


def waiting(reason: str) -> Any:
    def check(found: dict[str, Any]) -> bool:
        entries = (found.get("status") or {}).get("containerStatuses") or [{}]
        state = (entries[0].get("state") or {}).get("waiting") or {}
        return state.get("reason") == reason

    return check


def only_waiting(found: dict[str, Any], reason: str, message: str) -> None:
    """The container never ran: waiting, restartCount 0, no lastState, no containerID."""
    entry = found["status"]["containerStatuses"][0]
    assert entry["state"] == {"waiting": {"reason": reason, "message": message}}
    assert (entry["restartCount"], entry["lastState"]) == (0, {})
    assert "containerID" not in entry
    assert found["status"]["phase"] == "Pending"


def _run(site: Site, body: Any, clock: FakeClock, runtime: NoPull) -> None:
    """Run ``body`` against a kubelet on ``runtime``, its back-offs (kubelet's) on ``clock``."""
    run_local(
        site.server,
        site.logs,
        site.root,
        body,
        clock=clock,
        backoff=Backoff(),
        container_runtime=runtime,
    )


async def _events(env: Local) -> list[tuple[str, str, str, int]]:
    await env.kubelet.drained()
    found = await env.client.list(EVENTS, namespace=env.namespace)
    return sorted((e["type"], e["reason"], e["message"], e["count"]) for e in found.items)


@pytest.mark.parametrize("policy", ["OnFailure", "Never"])
def test_an_image_that_cannot_be_pulled_only_waits_and_backs_off(site: Site, policy: str) -> None:
    clock = FakeClock()
    runtime = NoPull()
    container = {"name": "main", "image": "img:1"}  # no command: the image's entrypoint
    back_off = 'Back-off pulling image "img:1"'

    async def body(env: Local) -> None:
        await env.create(pod("pull", container, restart_policy=policy))
        only_waiting(await env.wait("pull", waiting("ErrImagePull")), "ErrImagePull", MESSAGE)
        clock.advance(1)  # kubelet shows the error itself for one sync period
        only_waiting(
            await env.wait("pull", waiting("ImagePullBackOff")), "ImagePullBackOff", back_off
        )
        assert await _events(env) == [
            ("Normal", "BackOff", back_off, 1),
            ("Normal", "Pulling", 'Pulling image "img:1"', 1),  # the runtime's report
            ("Warning", "Failed", "Error: ErrImagePull", 1),
            ("Warning", "Failed", "Error: ImagePullBackOff", 1),
            ("Warning", "Failed", f'Failed to pull image "img:1": {MESSAGE}', 1),
        ]
        clock.advance(9)  # the rest of the first 10 s back-off: tried again, whatever the policy
        only_waiting(await env.wait("pull", waiting("ErrImagePull")), "ErrImagePull", MESSAGE)
        assert runtime.starts == 2
        assert ("Warning", "Failed", "Error: ErrImagePull", 2) in await _events(env)

    _run(site, body, clock, runtime)


def test_an_absent_image_under_never_waits_as_err_image_never_pull(site: Site) -> None:
    clock = FakeClock()
    runtime = NoPull(never=True)
    container = {"name": "main", "image": "img:1", "imagePullPolicy": "Never"}

    async def body(env: Local) -> None:
        await env.create(pod("never", container, restart_policy="Never"))
        only_waiting(await env.wait("never", waiting(NEVER)), NEVER, NEVER_MESSAGE)
        clock.advance(1)  # no ImagePullBackOff: it keeps its reason while it waits
        await env.kubelet.drained()
        only_waiting(await env.get("never"), NEVER, NEVER_MESSAGE)
        assert await _events(env) == [
            ("Warning", "ErrImageNeverPull", NEVER_MESSAGE, 1),
            ("Warning", "Failed", "Error: ErrImageNeverPull", 1),
        ]
        clock.advance(9)
        await polling.until(
            lambda: runtime.starts >= 2, timeout=30, what="tried again after the back-off"
        )
        only_waiting(await env.wait("never", waiting(NEVER)), NEVER, NEVER_MESSAGE)

    _run(site, body, clock, runtime)


REFUSED = 'container has runAsNonRoot and image will run as root (pod: "ns/p", container: main)'


class Refuses(NoPull):
    """A runtime that refuses the container (kubelet's ``runAsNonRoot`` check)."""

    async def start(
        self, target: Target, launch: Launch, env: Mapping[str, str], report: Report = no_report
    ) -> Running:
        self.starts += 1
        self.pod_spec = launch.pod_spec
        error = "CreateContainerConfigError"
        raise StartError(error, error, REFUSED, config=True)


def test_a_refused_container_only_waits_with_create_container_config_error(site: Site) -> None:
    """Never created: waiting with the message, kubelet's ``Failed`` event, no run, no
    restart (whatever the policy), tried again after the back-off; the runtime gets the
    pod's spec (its securityContext)."""
    clock = FakeClock()
    runtime = Refuses()
    container = {"name": "main", "image": "img:1"}
    error = "CreateContainerConfigError"

    async def body(env: Local) -> None:
        context = {"runAsNonRoot": True}
        await env.create(pod("nonroot", container, restart_policy="Never", securityContext=context))
        only_waiting(await env.wait("nonroot", waiting(error)), error, REFUSED)
        assert runtime.pod_spec["securityContext"] == context
        assert await _events(env) == [("Warning", "Failed", f"Error: {REFUSED}", 1)]
        clock.advance(10)
        await polling.until(
            lambda: runtime.starts >= 2, timeout=30, what="tried again after the back-off"
        )
        only_waiting(await env.wait("nonroot", waiting(error)), error, REFUSED)

    _run(site, body, clock, runtime)


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

    async def start(
        self, target: Target, launch: Launch, env: Mapping[str, str], report: Report = no_report
    ) -> Running:
        self.devices[target.pod] = launch.devices
        raise StartError("StartError", "RunContainerError", "recorded")


def test_the_gpus_a_container_holds_reach_its_runtime(
    site: Site, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One mechanism for every runtime: the held devices the machine has are on the
    ``Launch`` (the container runtime makes them CDI devices); a slot declared beyond them
    (``--gpus``) has no device; a container that asks for none holds none."""
    smi = tmp_path / "nvidia-smi"  # this machine "has" GPU 0; the pool declares 0 and 1
    smi.write_text("#!/bin/sh\necho 'GPU 0: Fake (UUID: GPU-0)'\n")
    smi.chmod(0o700)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    runtime = Recording()
    wants = {"limits": {"nvidia.com/gpu": "2"}}

    async def body(env: Local) -> None:
        await env.create(pod("two", {"name": "main", "image": "i", "resources": wants}))
        await env.create(pod("none", {"name": "main", "image": "i"}))
        for name in ("two", "none"):
            await env.phase(name, "Failed", "Succeeded")
        assert runtime.devices == {"two": ("0",), "none": ()}

    run_local(site.server, site.logs, site.root, body, gpus=("0", "1"), container_runtime=runtime)


class Warns(NoPull):
    """Host processes whose every start reports a limit it could not set."""

    def __init__(self) -> None:
        super().__init__()
        self._reaper: Reaper | None = None

    async def open(self) -> None:
        self._reaper = Reaper()

    async def close(self) -> None:
        if self._reaper is not None:
            self._reaper.close()

    async def start(
        self, target: Target, launch: Launch, env: Mapping[str, str], report: Report = no_report
    ) -> Running:
        assert self._reaper is not None
        running = await HostRuntime(self._reaper).start(target, launch, env)
        running.warnings = (StartWarning("ResourceLimitsIgnored", "limits.memory 1Gi ..."),)  # type: ignore[misc]
        return running


def test_what_a_start_could_not_honour_is_a_warning_event_per_start(site: Site) -> None:
    async def body(env: Local) -> None:
        await env.create(pod("warned", py("raise SystemExit(1)"), restart_policy="OnFailure"))
        await env.wait("warned", lambda found: _restarts(found) >= 2)
        await env.kubelet.drained()
        events = await env.client.list(EVENTS, namespace=env.namespace)
        warned = [e for e in events.items if e["reason"] == "ResourceLimitsIgnored"]
        assert len(warned) == 1  # one Event, counted once per start (the correlator)
        assert warned[0]["type"] == "Warning"
        assert warned[0]["message"] == "limits.memory 1Gi ..."
        assert warned[0]["involvedObject"]["fieldPath"] == "spec.containers{main}"
        assert warned[0]["count"] >= 2

    run_local(site.server, site.logs, site.root, body, container_runtime=Warns())


def _restarts(found: dict[str, Any]) -> int:
    entries = (found.get("status") or {}).get("containerStatuses") or [{}]
    return int(entries[0].get("restartCount") or 0)


class ReadsTheRecordAtFinish(Warns):
    """Host processes whose ``finish`` (where a container runtime removes the container and,
    with it, the exit code a restarted kubelet could still read) first reads the run record."""

    def __init__(self, root: Path) -> None:
        super().__init__()
        self.root = root
        self.seen: list[recovery.Record | None] = []

    async def start(
        self, target: Target, launch: Launch, env: Mapping[str, str], report: Report = no_report
    ) -> Running:
        assert self._reaper is not None
        running = await HostRuntime(self._reaper).start(target, launch, env)
        finish, root, seen = running.finish, self.root, self.seen

        async def reading_first() -> None:
            records = list(root.rglob(f"{target.pod}/{target.uid}/runs/{target.container}.json"))
            seen.append(recovery.read(records[0]) if len(records) == 1 else None)
            await finish()

        running.finish = reading_first  # type: ignore[method-assign]
        return running


def test_a_runs_end_is_recorded_before_the_runtime_lets_go_of_it(site: Site) -> None:
    """A kubelet killed between a container's exit and its removal must find the exit code in
    the sandbox record (note 120): the record says how the run ended before ``finish``."""
    runtime = ReadsTheRecordAtFinish(site.root)

    async def body(env: Local) -> None:
        await env.create(pod("exits-3", py("raise SystemExit(3)")))
        await env.phase("exits-3", "Failed")

    run_local(site.server, site.logs, site.root, body, container_runtime=runtime)
    assert len(runtime.seen) == 1
    record = runtime.seen[0]
    assert record is not None
    assert record.ended is not None, record
    assert (record.restart_count, record.ended.exit_code, record.ended.reason) == (0, 3, "Error")
