"""``exec``: a command runs in a running container's environment, directory and group."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

from .conftest import Site
from .harness import Local, pod, py, run_local


def exec_in(
    address: str, namespace: str, pod_name: str, *command: str
) -> subprocess.CompletedProcess[str]:
    argv = [
        sys.executable,
        "-m",
        "trainop.local.kubelet.execclient",
        "--address",
        address,
        "-n",
        namespace,
        pod_name,
        "--",
        *command,
    ]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


def test_exec_runs_in_the_container_and_returns_its_exit_code(site: Site) -> None:
    waiting = py(
        "import time\nwhile True: time.sleep(0.05)",
        env=[{"name": "GREETING", "value": "hello from the pod"}],
        workingDir="/job",
    )

    async def body(env: Local) -> None:
        await env.create(pod("target", waiting))
        running = await env.wait("target", lambda p: "running" in str(p.get("status")))
        address = env.kubelet.exec_address
        code = (
            "import json, os, sys; print(json.dumps({'greeting': os.environ['GREETING'],"
            " 'cwd': os.getcwd(), 'pgid': os.getpgid(0), 'stdin': sys.stdin.read()})); sys.exit(7)"
        )
        done = await asyncio.to_thread(
            lambda: subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "trainop.local.kubelet.execclient",
                    "--address",
                    address,
                    "-n",
                    env.namespace,
                    "target",
                    "--",
                    sys.executable,
                    "-c",
                    code,
                ],
                input="piped in",
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
        )
        assert done.returncode == 7, done.stderr
        seen = json.loads(done.stdout)
        leader = env.kubelet.pod(env.namespace, "target")
        assert leader is not None
        pid = leader.state.containers[0].pid
        assert seen == {
            "greeting": "hello from the pod",
            "cwd": str(leader.sandbox.fs("main") / "job"),
            "pgid": pid,
            "stdin": "piped in",
        }
        assert running["status"]["phase"] == "Running"
        missing = await asyncio.to_thread(exec_in, address, env.namespace, "nope", "true")
        assert missing.returncode == 1
        assert 'pods "nope" not found' in missing.stderr

    run_local(site.server, site.logs, site.root, body)
