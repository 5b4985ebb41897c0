"""A log that cannot be written (disk full) never blocks a container (issue 10 item 6).

The kubelet's ``LogFiles`` gets an injected write function that fails with ``ENOSPC`` while
``Flaky.failing`` is set. Before, the first failed write ended the pump and nobody read the
container's pipe again: a container printing more than a pipe holds (64 KiB) blocked forever.
"""

from __future__ import annotations

import asyncio
import errno
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import polling
from tests.integration.cluster.kubelet.conftest import Site
from tests.integration.cluster.kubelet.harness import Local, is_alive, local, pod, py, start_server
from trainop.cluster.kubelet import LogFiles


class Flaky:
    """``os.write`` that fails with ENOSPC while ``failing``."""

    def __init__(self) -> None:
        self.failing = True
        self.failed = 0

    def __call__(self, fd: int, data: bytes) -> int:
        if self.failing:
            self.failed += 1
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return os.write(fd, data)


@pytest.fixture(scope="module")
def flaky_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Site, Flaky]]:
    root = tmp_path_factory.mktemp("sandboxes")
    flaky = Flaky()
    logs = LogFiles(root, write=flaky)
    for server in start_server(tmp_path_factory.mktemp("apiserver"), logs):
        yield Site(server, logs, root), flaky


def log_file(env: Local, name: str, uid: str) -> Path:
    return env.root / env.namespace / name / uid / "logs" / "main" / "0.log"


LOUD = "import sys\nfor i in range(20000):\n    print('x' * 100, i)\nprint('err', file=sys.stderr)"


def test_a_container_writing_to_a_full_disk_still_finishes(
    flaky_site: tuple[Site, Flaky],
) -> None:
    site, flaky = flaky_site
    flaky.failing = True

    async def main() -> None:
        async with local(site.server, site.logs, site.root) as env:
            created = await env.create(pod("loud", py(LOUD)))
            status = (await env.phase("loud", "Succeeded", "Failed"))["status"]
            assert status["phase"] == "Succeeded"  # 2 MB through the pipe: nothing blocked
            assert flaky.failed >= 20000
            path = log_file(env, "loud", created["metadata"]["uid"])
            assert path.read_bytes() == b""

    asyncio.run(main())


def test_writing_again_starts_with_one_marker_for_what_was_dropped(
    flaky_site: tuple[Site, Flaky], tmp_path: Path
) -> None:
    site, flaky = flaky_site
    flaky.failing, flaky.failed = True, 0
    resume = tmp_path / "resume"
    code = (
        "import os, time\nfor i in range(3):\n    print('before', i, flush=True)\n"
        f"while not os.path.exists({str(resume)!r}):\n    time.sleep(0.02)\n"
        "print('after', flush=True)"
    )

    async def main() -> None:
        async with local(site.server, site.logs, site.root) as env:
            created = await env.create(pod("gap", py(code)))
            await polling.until(lambda: flaky.failed >= 3, timeout=30, what="three failed writes")
            assert flaky.failed == 3
            flaky.failing = False
            resume.touch()
            status = (await env.phase("gap", "Succeeded", "Failed"))["status"]
            assert status["phase"] == "Succeeded"
            records = log_file(env, "gap", created["metadata"]["uid"]).read_text().splitlines()
            texts = [r.split(" ", 3)[1:] for r in records]
            assert texts == [
                ["stderr", "F", "[trainop] 3 log lines dropped: No space left on device"],
                ["stdout", "F", "after"],
            ]

    asyncio.run(main())


def test_the_kubelet_stops_a_container_whose_log_cannot_be_written(
    flaky_site: tuple[Site, Flaky],
) -> None:
    site, flaky = flaky_site
    flaky.failing = True
    endless = "while True:\n    print('y' * 1000)"

    async def main() -> None:
        async with local(site.server, site.logs, site.root) as env:
            await env.create(pod("endless", py(endless)))
            found = await env.phase("endless", "Running")
            pid = env.kubelet.pod(env.namespace, "endless").state.containers[0].pid  # type: ignore[union-attr]
            assert pid > 0
            before = flaky.failed
            await polling.until(
                lambda: flaky.failed >= before + 1000 or polling.NotYet(flaky.failed - before),
                timeout=30,
                what="the pipe drained (1000 failed writes)",
            )
            assert found["status"]["phase"] == "Running"
        # leaving ``local`` cancels the kubelet (as ``local down`` does): it must return
        await polling.until(lambda: not is_alive(pid), timeout=10, what=f"process {pid} ended")

    asyncio.run(asyncio.wait_for(main(), 60))
