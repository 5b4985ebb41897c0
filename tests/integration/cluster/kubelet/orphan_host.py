"""A host process for the no-orphan test: an API server and a process kubelet in one loop.

``python -m tests.integration.cluster.kubelet.orphan_host DIR`` creates a pod whose process starts a
grandchild and writes ``<container pid> <grandchild pid>`` to ``DIR/pids``, writes
``<reaper pid>`` to ``DIR/reaper``, and then waits forever — until the test SIGKILLs it.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from trainop.cluster.apiserver import ApiServer, ServerConfig
from trainop.cluster.kubelet import Kubelet, KubeletConfig, LogFiles
from trainop.kube.http import HttpClient
from trainop.kube.resources import NAMESPACES, PODS

CODE = (
    "import os, subprocess, sys, time\n"
    "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
    "open(sys.argv[1] + '.tmp', 'w').write(f'{os.getpid()} {child.pid}')\n"
    "os.rename(sys.argv[1] + '.tmp', sys.argv[1])\n"
    "time.sleep(600)\n"
)


async def main(directory: Path) -> None:
    root = directory / "sandboxes"
    logs = LogFiles(root)
    server = ApiServer(ServerConfig(state_dir=directory / "state", log_source=logs))
    await server.start()
    client = HttpClient.from_kubeconfig(path=str(server.kubeconfig_path))
    kubelet = Kubelet(client=client, config=KubeletConfig(root=root, gpus=()), logs=logs)
    task = asyncio.create_task(kubelet.run())
    await kubelet.synced.wait()
    await client.create(NAMESPACES, {"metadata": {"name": "orphans"}})
    container = {
        "name": "main",
        "image": "python:3",
        "command": [sys.executable, "-c", CODE, str(directory / "pids")],
    }
    manifest = {"metadata": {"name": "long"}, "spec": {"containers": [container]}}
    await client.create(PODS, manifest, namespace="orphans")
    (directory / "reaper").write_text(str(kubelet.reaper_pid))
    await task


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1])))
