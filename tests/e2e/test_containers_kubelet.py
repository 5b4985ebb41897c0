"""The kubelet with the Podman and the Docker runtime, driven directly (the integration
harness): the status's ``containerID`` is the runtime's id of the run, and ``attach -i``
reaches a container's stdin (a pipe, or a terminal with ``tty``) as it does a process's (note
095).

Uses ``localhost/trainop-debian-py:12`` from ``make container-images``; skipped, with the
reason, where the runtime does not work or lacks that image. Containers share the host's
network here (no session network: nothing in these tests talks to another pod).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.cluster.kubelet.conftest import Site, site  # noqa: F401  (the fixture)
from tests.integration.cluster.kubelet.harness import Local, pod, run_local
from tests.integration.cluster.kubelet.test_exec import TTY_LINE, _attach, attach_write
from trainop.cluster.kubelet.runtimes import containercli
from trainop.cluster.kubelet.runtimes.containercli import Cli
from trainop.cluster.kubelet.runtimes.containers import ContainerRuntime
from trainop.cluster.kubelet.runtimes.options import HOLDER_LABEL, POD_LABEL, SESSION_LABEL
from trainop.local import runtimes

IMAGE = "localhost/trainop-debian-py:12"

pytestmark = [pytest.mark.e2e, pytest.mark.containers]


async def _containers(cli: Cli, session: str) -> list[str]:
    """The ids of the session's containers, as the runtime lists them."""
    return [found for found, _ in await cli.containers(f"label={SESSION_LABEL}={session}")]


async def _pods_containers(cli: Cli, session: str) -> list[str]:
    """The ids of the containers of the session's pods but their holders (kubelet's pod
    sandbox: made before any container of the pod)."""
    found = await cli.containers(f"label={SESSION_LABEL}={session}")
    return [i for i, labels in found if POD_LABEL in labels and HOLDER_LABEL not in labels]


@pytest.fixture(params=["podman", "docker"])
def cli(request: pytest.FixtureRequest, tmp_path: Path) -> Cli:
    kind = str(request.param)
    cli = containercli.CLIS[kind](tmp_path / kind)
    if not asyncio.run(containercli.works(cli)):
        pytest.skip(f"{kind} does not work here (make {runtimes.ENV_TARGETS[kind]})")
    if asyncio.run(cli.call(*cli.image_exists_words(IMAGE))).code != 0:
        pytest.skip(f"image {IMAGE} is missing in {kind} (make container-images)")
    return cli


@pytest.fixture
def runtime(cli: Cli) -> Iterator[ContainerRuntime]:
    session = f"t{uuid.uuid4().hex[:10]}"
    yield ContainerRuntime(cli, session=session, network=False)
    left = asyncio.run(_containers(cli, session))
    assert left == [], "the kubelet's close removes its containers"


def _sh(script: str, **extra: Any) -> dict[str, Any]:
    return {"name": "main", "image": IMAGE, "command": ["sh", "-c", script], **extra}


def test_the_container_id_is_the_runtimes_id_of_the_run(
    site: Site,  # noqa: F811
    runtime: ContainerRuntime,
    cli: Cli,
) -> None:
    async def body(env: Local) -> None:
        await env.create(pod("ids", _sh("sleep 600")))
        found = await env.wait("ids", lambda p: "running" in str(p.get("status")))
        shown = found["status"]["containerStatuses"][0]["containerID"]
        listed = await _pods_containers(cli, runtime.session)
        assert [f"{cli.name}://{found}" for found in listed] == [shown]
        assert len(shown) == len(f"{cli.name}://") + 64
        await cli.call("kill", "--signal", "KILL", listed[0])
        ended = await env.phase("ids", "Failed")
        terminated = ended["status"]["containerStatuses"][0]["state"]["terminated"]
        assert (terminated["exitCode"], terminated["containerID"]) == (137, shown)
        assert ended["status"]["containerStatuses"][0]["containerID"] == shown

    run_local(site.server, site.logs, site.root, body, container_runtime=runtime)


async def _log(env: Local, name: str) -> list[str]:
    lines = env.client.stream_log(name=name, namespace=env.namespace)
    return [line async for line in lines]


def test_attach_writes_to_a_containers_stdin_and_stdin_once_ends_it(
    site: Site,  # noqa: F811
    runtime: ContainerRuntime,
) -> None:
    """``run -i`` with a pipe: the kubelet keeps its write end, ``attach -i`` gets a
    copy (the same path as for a host process), ``stdinOnce`` closes it after the attach."""
    reads = _sh("read line; echo got:$line; cat; echo eof", stdin=True, stdinOnce=True)

    async def body(env: Local) -> None:
        await env.create(pod("once", reads))
        await env.wait("once", lambda p: "running" in str(p.get("status")))
        address = env.kubelet.exec_address
        # stdinOnce: after the attach the kubelet closes its end, the client the container's
        lines = b"hello from attach\nmore\n"
        await asyncio.to_thread(attach_write, address, env.namespace, "once", lines)
        ended = await env.phase("once", "Succeeded", "Failed")
        terminated = ended["status"]["containerStatuses"][0]["state"]["terminated"]
        assert (ended["status"]["phase"], terminated["exitCode"]) == ("Succeeded", 0)
        assert await _log(env, "once") == ["got:hello from attach", "more", "eof"]
        conn, answer, fd = await asyncio.to_thread(_attach, address, env.namespace, "once")
        conn.close()
        assert fd == -1
        assert "not running" in str(answer.get("error")), answer

    run_local(site.server, site.logs, site.root, body, container_runtime=runtime)


def test_a_tty_container_reads_its_terminal_and_stdin_once_keeps_it_open(
    site: Site,  # noqa: F811
    runtime: ContainerRuntime,
) -> None:
    """``tty: true``: ``run -i -t`` on a pseudo terminal the kubelet made; the
    container's stdio is a terminal, and (containerd's rule) stdinOnce does not close it: a
    second attach completes the line the first began."""
    tty = {
        "name": "main",
        "image": IMAGE,
        "command": ["python3", "-c", TTY_LINE],
        "stdin": True,
        "stdinOnce": True,
        "tty": True,
    }

    async def body(env: Local) -> None:
        await env.create(pod("tty", tty))
        await env.wait("tty", lambda p: "running" in str(p.get("status")))
        for part in (b"ab", b"c\n"):
            address = env.kubelet.exec_address
            await asyncio.to_thread(attach_write, address, env.namespace, "tty", part)
        ended = await env.phase("tty", "Failed")
        assert ended["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 14
        assert "abc" in "".join(await _log(env, "tty"))  # the terminal's echo, in the log

    run_local(site.server, site.logs, site.root, body, container_runtime=runtime)
