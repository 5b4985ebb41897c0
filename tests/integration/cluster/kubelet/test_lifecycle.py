"""Restarts, exit codes and reasons, pods that cannot run, deletion and termination."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

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
from tests.integration.cluster.kubelet.test_running import official, terminated
from trainop.kube.resources import CONFIGMAPS, PODS


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
        assert entry["restartCount"] == 1
        assert entry["lastState"]["terminated"]["exitCode"] == 3
        assert entry["lastState"]["terminated"]["reason"] == "Error"
        read = official(site).read_namespaced_pod_log
        assert await asyncio.to_thread(read, "flaky", env.namespace) == "run 1\n"
        previous = await asyncio.to_thread(read, "flaky", env.namespace, previous=True)
        assert previous == "run 0\n"

    run_local(site.server, site.logs, site.root, body)


def test_always_restarts_even_after_success_until_deleted(site: Site) -> None:
    async def body(env: Local) -> None:
        await env.create(pod("loop", py("print('tick')"), restart_policy="Always"))
        found = await env.wait(
            "loop",
            lambda p: any(
                s.get("restartCount", 0) >= 2
                for s in (p.get("status") or {}).get("containerStatuses") or []
            ),
        )
        assert found["status"]["phase"] == "Running"
        await env.client.delete(PODS, name="loop", namespace=env.namespace)
        await env.gone("loop")

    run_local(site.server, site.logs, site.root, body)


EXITS = [
    ("ok", "pass", "Succeeded", 0, "Completed"),
    ("code", "raise SystemExit(3)", "Failed", 3, "Error"),
    ("sigkill", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)", "Failed", 137, "Error"),
    ("sigterm", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)", "Failed", 143, "Error"),
]


def test_exit_codes_and_reasons(site: Site) -> None:
    async def body(env: Local) -> None:
        for name, code, *_ in EXITS:
            await env.create(pod(name, py(code)))
        for name, _, phase, exit_code, reason in EXITS:
            status = (await env.phase(name, "Succeeded", "Failed"))["status"]
            found = terminated(status)
            assert (status["phase"], found["exitCode"], found["reason"]) == (
                phase,
                exit_code,
                reason,
            ), name

    run_local(site.server, site.logs, site.root, body)


def test_a_container_without_command_fails_with_a_clear_reason(site: Site) -> None:
    async def body(env: Local) -> None:
        manifest = pod("nocmd", {"name": "main", "image": "python:3"})
        await env.create(manifest)
        status = (await env.phase("nocmd", "Failed", "Succeeded"))["status"]
        assert status["reason"] == "ContainerCannotRun"
        assert "a container needs an explicit command" in status["message"]
        found = terminated(status)
        assert (found["reason"], found["exitCode"]) == ("ContainerCannotRun", 128)

    run_local(site.server, site.logs, site.root, body)


def test_a_missing_executable_fails_with_the_os_error_under_never(site: Site) -> None:
    async def body(env: Local) -> None:
        container = {"name": "main", "image": "x", "command": ["/no/such/binary", "--flag"]}
        await env.create(pod("noexe", container, restart_policy="Never"))
        status = (await env.phase("noexe", "Failed", "Succeeded"))["status"]
        assert status["reason"] == "StartError"
        found = terminated(status)
        assert (found["reason"], found["exitCode"]) == ("StartError", 128)
        assert '"/no/such/binary": No such file or directory' in found["message"]
        assert status["containerStatuses"][0]["restartCount"] == 0

    run_local(site.server, site.logs, site.root, body)


def test_a_missing_executable_backs_off_in_place_under_on_failure(site: Site) -> None:
    """Kubelet restarts a container whose start fails: CrashLoopBackOff, not a failed pod."""

    def looping(p: dict[str, Any]) -> bool:
        entries = (p.get("status") or {}).get("containerStatuses") or []
        return bool(entries) and entries[0].get("restartCount", 0) >= 2

    async def body(env: Local) -> None:
        container = {"name": "main", "image": "x", "command": ["/no/such/binary"]}
        await env.create(pod("noexe", container, restart_policy="OnFailure"))
        found = await env.wait("noexe", looping)
        status = found["status"]
        assert status["phase"] == "Pending"
        entry = status["containerStatuses"][0]
        waiting = entry["state"].get("waiting") or {}
        if waiting:  # else between a failed start and its back-off
            assert waiting["reason"] in ("RunContainerError", "CrashLoopBackOff")
            if waiting["reason"] == "RunContainerError":
                assert '"/no/such/binary": No such file or directory' in waiting["message"]
        last = entry["lastState"]["terminated"]
        assert (last["reason"], last["exitCode"]) == ("StartError", 128)
        assert '"/no/such/binary": No such file or directory' in last["message"]
        await env.client.delete(PODS, name="noexe", namespace=env.namespace)
        await env.gone("noexe")

    run_local(site.server, site.logs, site.root, body)


def test_a_missing_config_map_waits_with_the_reason_then_fails(site: Site) -> None:
    container = py(
        "print('ran')",
        env=[{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "later", "key": "k"}}}],
    )

    async def body(env: Local) -> None:
        await env.create(pod("cfg", container))
        waiting = await env.wait(
            "cfg",
            lambda p: (
                "waiting"
                in (p.get("status") or {}).get("containerStatuses", [{}])[0].get("state", {})
                and p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"]
                == "CreateContainerConfigError"
            ),
        )
        message = waiting["status"]["containerStatuses"][0]["state"]["waiting"]["message"]
        assert message == 'configmap "later" not found'
        assert waiting["status"]["phase"] == "Pending"
        status = (await env.phase("cfg", "Failed", "Succeeded"))["status"]
        assert status["reason"] == "CreateContainerConfigError"
        assert 'configmap "later" not found' in status["message"]

    run_local(site.server, site.logs, site.root, body, config_timeout=1.0, config_retry=0.1)


def test_a_config_map_created_while_waiting_lets_the_pod_run(site: Site) -> None:
    container = py(
        "import os; print(os.environ['X'])",
        env=[{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "later", "key": "k"}}}],
    )

    async def body(env: Local) -> None:
        await env.create(pod("cfg2", container))
        await env.wait(
            "cfg2",
            lambda p: "CreateContainerConfigError" in str(p.get("status")),
        )
        await env.create({"metadata": {"name": "later"}, "data": {"k": "value"}}, CONFIGMAPS)
        status = (await env.phase("cfg2", "Succeeded", "Failed"))["status"]
        assert status["phase"] == "Succeeded"
        text = await asyncio.to_thread(
            official(site).read_namespaced_pod_log, "cfg2", env.namespace
        )
        assert text == "value\n"

    run_local(site.server, site.logs, site.root, body, config_timeout=20.0, config_retry=0.1)


def _pids_file(tmp_path: Path) -> Path:
    return tmp_path / "pids"


STUBBORN = (
    "import os, signal, subprocess, sys, time\n"
    "signal.signal(signal.SIGTERM, lambda *_: print('ignoring SIGTERM', flush=True))\n"
    "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
    "open({path!r}, 'w').write(f'{{os.getpid()}} {{child.pid}}')\n"
    "while True: time.sleep(0.05)\n"
)


@pytest.mark.parametrize("bound", [True, False], ids=["graceful", "immediate"])
def test_delete_sends_sigterm_then_sigkill_to_the_whole_group(
    site: Site, tmp_path: Path, bound: bool
) -> None:
    path = _pids_file(tmp_path)
    pids: list[int] = []
    spec: dict[str, Any] = {"terminationGracePeriodSeconds": 1}
    if bound:
        spec["nodeName"] = "trainop-local"

    async def body(env: Local) -> None:
        await env.create(pod("stubborn", py(STUBBORN.format(path=str(path))), **spec))
        await env.phase("stubborn", "Running")
        await polling.until(
            lambda: path.exists() and path.read_text(), timeout=DEADLINE, what=f"{path} written"
        )
        pids.extend(int(p) for p in path.read_text().split())
        began = time.monotonic()
        await env.client.delete(PODS, name="stubborn", namespace=env.namespace)
        if bound:
            await env.gone("stubborn")
        await asyncio.to_thread(wait_dead, pids)
        assert time.monotonic() - began >= 0.9, "SIGKILL only after the grace period"

    try:
        run_local(site.server, site.logs, site.root, body)
    finally:
        kill_all(pids)


def test_a_process_that_honours_sigterm_ends_before_the_grace_period(
    site: Site, tmp_path: Path
) -> None:
    code = (
        "import signal, sys, time\n"
        "def bye(*_): print('got SIGTERM', flush=True); sys.exit(0)\n"
        "signal.signal(signal.SIGTERM, bye)\nprint('up', flush=True)\n"
        "while True: time.sleep(0.05)\n"
    )

    async def body(env: Local) -> None:
        spec = {"terminationGracePeriodSeconds": 30, "nodeName": "trainop-local"}
        await env.create(pod("polite", py(code), **spec))
        await env.wait("polite", lambda p: "running" in str(p.get("status")))
        began = time.monotonic()
        await env.client.delete(PODS, name="polite", namespace=env.namespace)
        await env.gone("polite")
        assert time.monotonic() - began < 10

    run_local(site.server, site.logs, site.root, body, keep_sandboxes=True)
