"""Kubelet's back-off on the injected clock: 10 s doubling, reset after 10 minutes of running."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.integration.cluster.kubelet.conftest import Site
from tests.integration.cluster.kubelet.harness import Local, pod, py, run_local
from trainop.cluster.kubelet import Backoff
from trainop.kube.clock import FakeClock


def backing_off(count: int, delay: str) -> Any:
    def check(found: dict[str, Any]) -> bool:
        entries = (found.get("status") or {}).get("containerStatuses") or [{}]
        waiting = (entries[0].get("state") or {}).get("waiting") or {}
        return (
            entries[0].get("restartCount") == count
            and waiting.get("reason") == "CrashLoopBackOff"
            and waiting.get("message", "").startswith(f"back-off {delay} ")
        )

    return check


def running(count: int) -> Any:
    def check(found: dict[str, Any]) -> bool:
        entries = (found.get("status") or {}).get("containerStatuses") or [{}]
        return entries[0].get("restartCount") == count and "running" in entries[0].get("state", {})

    return check


def test_the_back_off_doubles_and_resets_after_ten_minutes_of_running(
    site: Site, tmp_path: Path
) -> None:
    clock = FakeClock()
    release = tmp_path / "release"
    # run 2 (and, once ``again`` exists, every run) waits for ``release``; every run fails
    code = (
        "import os, time\n"
        f"if int(os.environ['RUN']) == 2 or os.path.exists({str(tmp_path / 'again')!r}):\n"
        f"    while not os.path.exists({str(release)!r}):\n"
        "        time.sleep(0.02)\n"
        "raise SystemExit(1)"
    )
    counter = (
        f"import os, sys; p = {str(tmp_path / 'runs')!r}; "
        "n = len(open(p).read()) if os.path.exists(p) else 0; open(p, 'a').write('x'); "
        "os.environ['RUN'] = str(n); exec(sys.argv[1])"
    )
    container = {**py(counter), "args": [code]}

    async def body(env: Local) -> None:
        await env.create(pod("crash", container, restart_policy="OnFailure"))
        await env.wait("crash", backing_off(0, "10s"))
        clock.advance(10)
        found = await env.wait("crash", backing_off(1, "20s"))
        entry, uid = found["status"]["containerStatuses"][0], found["metadata"]["uid"]
        # the host runtime's id names the run: pod uid, container, restartCount; backing
        # off, kubelet shows the id of the run that ended (also in lastState)
        assert entry["containerID"] == f"process://{uid}/main/1"
        assert entry["lastState"]["terminated"]["containerID"] == f"process://{uid}/main/1"
        clock.advance(20)
        entry = (await env.wait("crash", running(2)))["status"]["containerStatuses"][0]
        assert entry["containerID"] == f"process://{uid}/main/2"
        assert entry["lastState"]["terminated"]["containerID"] == f"process://{uid}/main/1"
        clock.advance(601)  # run 2 has been running for over 10 minutes
        release.touch()
        await env.wait("crash", backing_off(2, "10s"))  # reset: 10 s, not 40 s
        (tmp_path / "again").touch()
        release.unlink()
        clock.advance(10)
        await env.wait("crash", running(3))
        release.touch()  # a short run after the reset: the back-off doubles again
        await env.wait("crash", backing_off(3, "20s"))

    run_local(site.server, site.logs, site.root, body, clock=clock, backoff=Backoff())
