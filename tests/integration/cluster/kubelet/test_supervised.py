"""A kubelet with ``keep_containers`` (``trainop local up``'s, note 120): containers run under
supervisors, and everything a kubelet does with them works as with plain host processes —
logs (followed too), restarts with previous logs, exec in the container's group, deletion
with SIGTERM then SIGKILL. Re-attaching after a crash: ``tests/integration/local/
test_daemon_crash.py`` (a real daemon, SIGKILLed) and ``tests/unit/cluster/kubelet/
test_supervisor.py``."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

from tests import polling
from tests.integration.cluster.kubelet.conftest import Site
from tests.integration.cluster.kubelet.harness import (
    DEADLINE,
    Local,
    kill_all,
    pod,
    py,
    run_local,
    wait_dead,
)
from tests.integration.cluster.kubelet.test_lifecycle import STUBBORN
from tests.integration.cluster.kubelet.test_running import official
from trainop.kube.resources import PODS

KEEP = {"keep_containers": True}


def supervisor_of(pid: int) -> int:
    """The parent of a container process (its supervisor)."""
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def test_logs_are_followed_and_the_run_is_the_supervisors_child(site: Site, tmp_path: Path) -> None:
    api, gate = official(site), tmp_path / "go"

    async def body(env: Local) -> None:
        code = (
            "import os, time\nprint('first', flush=True)\n"
            f"while not os.path.exists({str(gate)!r}): time.sleep(0.02)\nprint('second')"
        )
        await env.create(pod("f", py(code)))
        await env.phase("f", "Running")
        run = env.kubelet.pod(env.namespace, "f")
        assert run is not None
        parent = supervisor_of(run.state.containers[0].pid)
        assert parent != env.kubelet.reaper_pid
        assert (
            Path(f"/proc/{parent}/cmdline").read_bytes().split(b"\0")[3].endswith(b"supervisor.py")
        )
        stream = await asyncio.to_thread(
            api.read_namespaced_pod_log, "f", env.namespace, follow=True, _preload_content=False
        )
        chunks = stream.stream(amt=None, decode_content=True)
        first = await asyncio.to_thread(next, chunks)
        assert first == b"first\n", "the first line arrives while the process still runs"
        gate.write_text("")
        rest = await asyncio.to_thread(lambda: b"".join(chunks))
        assert rest == b"second\n", "the stream ends when the container exits"
        await env.phase("f", "Succeeded")

    run_local(site.server, site.logs, site.root, body, **KEEP)


def test_on_failure_restarts_in_place_with_previous_logs(site: Site) -> None:
    code = (
        "import os\nmark = os.environ['HOME'] + '/ran'\nfirst = not os.path.exists(mark)\n"
        "open(mark, 'a').close()\nprint('run', 0 if first else 1)\n"
        "raise SystemExit(3 if first else 0)"
    )

    async def body(env: Local) -> None:
        await env.create(pod("flaky", py(code), restart_policy="OnFailure"))
        status = (await env.phase("flaky", "Succeeded", "Failed"))["status"]
        assert status["phase"] == "Succeeded"
        entry = status["containerStatuses"][0]
        assert (entry["restartCount"], entry["lastState"]["terminated"]["exitCode"]) == (1, 3)
        read = official(site).read_namespaced_pod_log
        assert await asyncio.to_thread(read, "flaky", env.namespace) == "run 1\n"
        previous = await asyncio.to_thread(read, "flaky", env.namespace, previous=True)
        assert previous == "run 0\n"

    run_local(site.server, site.logs, site.root, body, **KEEP)


def test_exec_runs_in_the_container_group_with_its_env(site: Site) -> None:
    waiting = py(
        "import time\nwhile True: time.sleep(0.05)",
        env=[{"name": "GREETING", "value": "hello from the pod"}],
    )

    async def body(env: Local) -> None:
        await env.create(pod("target", waiting))
        await env.wait("target", lambda p: "running" in str(p.get("status")))
        code = (
            "import json, os, sys; print(json.dumps({'greeting': os.environ['GREETING'],"
            " 'pgid': os.getpgid(0), 'stdin': sys.stdin.read()})); sys.exit(7)"
        )
        argv = [sys.executable, "-m", "trainop.cluster.kubelet.exec.execclient"]
        argv += ["--address", env.kubelet.exec_address, "-n", env.namespace, "target"]
        argv += ["--", sys.executable, "-c", code]
        done = await asyncio.to_thread(
            subprocess.run,
            argv,
            input="piped in",
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 7, done.stderr
        run = env.kubelet.pod(env.namespace, "target")
        assert run is not None
        pid = run.state.containers[0].pid
        seen = json.loads(done.stdout)
        assert seen == {"greeting": "hello from the pod", "pgid": pid, "stdin": "piped in"}

    run_local(site.server, site.logs, site.root, body, **KEEP)


def test_delete_sends_sigterm_then_sigkill_to_the_whole_group(site: Site, tmp_path: Path) -> None:
    path = tmp_path / "pids"
    pids: list[int] = []
    spec = {"terminationGracePeriodSeconds": 1, "nodeName": "trainop-local"}

    async def body(env: Local) -> None:
        await env.create(pod("stubborn", py(STUBBORN.format(path=str(path))), **spec))
        await env.phase("stubborn", "Running")
        await polling.until(
            lambda: path.exists() and path.read_text(), timeout=DEADLINE, what=f"{path} written"
        )
        pids.extend(int(p) for p in path.read_text().split())
        began = time.monotonic()
        await env.client.delete(PODS, name="stubborn", namespace=env.namespace)
        await env.gone("stubborn")
        await asyncio.to_thread(wait_dead, pids)
        assert time.monotonic() - began >= 0.9, "SIGKILL only after the grace period"

    try:
        run_local(site.server, site.logs, site.root, body, **KEEP)
    finally:
        kill_all(pids)
