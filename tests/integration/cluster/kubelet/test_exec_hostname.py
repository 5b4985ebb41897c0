"""``exec`` by a pod's hostname (note 133): an MPI TrainJob's hostfile names JobSet pods by
hostname (``<tj>-node-0-0``) while their pod names carry a suffix, so the local ssh client's
target is found by ``spec.hostname`` when no pod has that name."""

from __future__ import annotations

import asyncio
import subprocess
import sys

from tests.integration.cluster.kubelet.conftest import Site
from tests.integration.cluster.kubelet.harness import Local, pod, py, run_local


def test_exec_finds_a_pod_by_its_hostname(site: Site) -> None:
    waiting = py("import time\nwhile True: time.sleep(0.05)")

    async def body(env: Local) -> None:
        await env.create(pod("steps-node-0-0-x7k2q", waiting, hostname="steps-node-0-0"))
        await env.wait("steps-node-0-0-x7k2q", lambda p: "running" in str(p.get("status")))
        argv = [
            sys.executable, "-m", "trainop.cluster.kubelet.exec.execclient",
            "--address", env.kubelet.exec_address, "-n", env.namespace,
        ]  # fmt: skip
        found = await asyncio.to_thread(
            subprocess.run,
            [*argv, "steps-node-0-0", "--", "sh", "-c", "echo $HOSTNAME"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert (found.returncode, found.stdout.strip()) == (0, "steps-node-0-0"), found.stderr
        missing = await asyncio.to_thread(
            subprocess.run,
            [*argv, "steps-node-0-1", "--", "true"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert missing.returncode != 0
        assert 'pods "steps-node-0-1" not found' in missing.stderr

    run_local(site.server, site.logs, site.root, body)
