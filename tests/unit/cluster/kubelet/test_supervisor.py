"""The supervised runtime and its per-run ``supervisor`` (note 120), with real processes."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.polling import wait_for
from trainop.cluster.kubelet import supervisor
from trainop.cluster.kubelet.reaper import Reaper
from trainop.cluster.kubelet.runtimes import supervised
from trainop.cluster.kubelet.runtimes.runtime import Exited, Launch, StartError, Target
from trainop.cluster.kubelet.sandbox import Sandbox


@pytest.fixture
def reaper() -> Iterator[Reaper]:
    watchdog = Reaper()
    yield watchdog
    watchdog.close()


def target(container: str = "main", restart: int = 0) -> Target:
    return Target("default", "pod", str(uuid.uuid4()), container, "pod", restart)


def launch(code: str, cwd: Path) -> Launch:
    return Launch(argv=[sys.executable, "-c", code], env=dict(os.environ), cwd=cwd, gpus=0)


def sandbox_of(root: Path, where: Target) -> Sandbox:
    return Sandbox.of(root, where.namespace, where.pod, where.uid)


def alive(pid: int) -> bool:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return fields[0] not in ("Z", "X")


def log_records(path: Path) -> list[tuple[str, str, str]]:
    records = [line.split(" ", 3) for line in path.read_text().splitlines()]
    return [(stream, tag, text) for _, stream, tag, text in records]


def test_a_run_logs_its_output_and_records_its_exit(tmp_path: Path, reaper: Reaper) -> None:
    runtime = supervised.SupervisedRuntime(tmp_path, reaper)
    where = target()
    code = "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"

    async def main() -> int:
        running = await runtime.start(where, launch(code, tmp_path), dict(os.environ))
        assert running.container_id == f"process://{where.uid}/main/0"
        return await running.wait()

    assert asyncio.run(main()) == 3
    box = sandbox_of(tmp_path, where)
    assert sorted(log_records(box.logs("main") / "0.log")) == [
        ("stderr", "F", "err"),
        ("stdout", "F", "out"),
    ]
    assert supervised.read_exit(supervised.exit_path(box, "main", 0)) is not None
    recorded = json.loads(supervised.exit_path(box, "main", 0).read_text())
    assert recorded["returncode"] == 3
    assert not list(box.record("main").parent.glob(".*spec")), "the spec holds secrets"


def test_a_line_over_64_kib_is_split_into_partial_records(tmp_path: Path, reaper: Reaper) -> None:
    runtime = supervised.SupervisedRuntime(tmp_path, reaper)
    where = target()
    code = "print('x' * (64 * 1024 + 10))"

    async def main() -> int:
        return await (await runtime.start(where, launch(code, tmp_path), dict(os.environ))).wait()

    assert asyncio.run(main()) == 0
    records = log_records(sandbox_of(tmp_path, where).logs("main") / "0.log")
    assert [(s, t, len(x)) for s, t, x in records] == [("stdout", "P", 65536), ("stdout", "F", 10)]


def test_an_executable_that_is_missing_is_a_start_error(tmp_path: Path, reaper: Reaper) -> None:
    runtime = supervised.SupervisedRuntime(tmp_path, reaper)
    missing = Launch(argv=["/no/such/binary"], env={}, cwd=tmp_path, gpus=0)

    async def main() -> None:
        await runtime.start(target(), missing, {})

    with pytest.raises(StartError) as caught:
        asyncio.run(main())
    assert caught.value.reason == "StartError"
    assert str(caught.value) == (
        'failed to start container process: exec: "/no/such/binary": No such file or directory'
    )


def test_a_signal_reaches_the_container_group(tmp_path: Path, reaper: Reaper) -> None:
    runtime = supervised.SupervisedRuntime(tmp_path, reaper)

    async def main() -> int:
        running = await runtime.start(target(), launch("import time; time.sleep(60)", tmp_path), {})
        assert running.signal(signal.SIGTERM)
        return await running.wait()

    assert asyncio.run(main()) == -signal.SIGTERM


def test_the_container_and_an_exec_get_sigint_as_the_default(
    tmp_path: Path, reaper: Reaper
) -> None:
    """The supervisor ignores a terminal's ^C itself, but an ignored signal would stay ignored
    across exec: the container and an exec'd command must start with SIGINT's default."""
    runtime = supervised.SupervisedRuntime(tmp_path, reaper)
    probe = (
        "import signal, sys\n"
        "sys.exit(3 if signal.getsignal(signal.SIGINT) is signal.SIG_IGN else 0)"
    )

    async def main() -> tuple[int, int]:
        running = await runtime.start(
            target(), launch(f"import time; time.sleep(0.5)\n{probe}", tmp_path), {}
        )
        argv, _ = running.exec_argv([sys.executable, "-c", probe], tty=False)
        execd = await asyncio.create_subprocess_exec(*argv)
        exec_code = await execd.wait()
        return await running.wait(), exec_code

    assert asyncio.run(main()) == (0, 0)


def test_a_run_is_found_again_while_it_runs_and_after_it_ended(
    tmp_path: Path, reaper: Reaper
) -> None:
    runtime = supervised.SupervisedRuntime(tmp_path, reaper)
    where, go = target(), tmp_path / "go"
    code = (
        f"import os, time\nwhile not os.path.exists({str(go)!r}): time.sleep(0.02)\n"
        "raise SystemExit(7)"
    )

    async def main() -> tuple[object, object, object]:
        first = await runtime.start(where, launch(code, tmp_path), {})
        del first  # the kubelet that started it is gone: its connection with it
        again = await runtime.reattach(where, supervised.run_id(where), tmp_path / "log")
        assert again is not None
        assert not isinstance(again, Exited)
        go.touch()
        returned = await again.wait()
        later = await runtime.reattach(where, supervised.run_id(where), tmp_path / "log")
        return again.pid, returned, later

    pid, returned, later = asyncio.run(main())
    assert returned == 7
    assert isinstance(later, Exited)
    assert later.returncode == 7
    assert not alive(int(str(pid)))


def test_a_run_without_supervisor_or_exit_is_lost(tmp_path: Path, reaper: Reaper) -> None:
    runtime = supervised.SupervisedRuntime(tmp_path, reaper)
    where = target()
    assert asyncio.run(runtime.reattach(where, supervised.run_id(where), tmp_path / "log")) is None


def test_removing_the_sandbox_ends_the_run(tmp_path: Path, reaper: Reaper) -> None:
    runtime = supervised.SupervisedRuntime(tmp_path, reaper)
    where = target()
    sandbox_of(tmp_path, where).path.mkdir(parents=True)

    async def main() -> int:
        running = await runtime.start(where, launch("import time; time.sleep(60)", tmp_path), {})
        sandbox_of(tmp_path, where).remove()
        return await running.wait()

    began = time.monotonic()
    assert asyncio.run(main()) == -signal.SIGKILL
    assert time.monotonic() - began < 10


def test_exec_runs_in_the_container_group(tmp_path: Path, reaper: Reaper) -> None:
    runtime = supervised.SupervisedRuntime(tmp_path, reaper)

    async def main() -> tuple[int, str]:
        running = await runtime.start(target(), launch("import time; time.sleep(60)", tmp_path), {})
        argv, group = running.exec_argv(
            [sys.executable, "-c", "import os; print(os.getpgid(0)); raise SystemExit(4)"],
            tty=False,
        )
        assert group == 0
        done = await asyncio.to_thread(
            subprocess.run, argv, capture_output=True, text=True, check=False, timeout=30
        )
        running.signal(signal.SIGKILL)
        await running.wait()
        return running.pid, f"{done.returncode} {done.stdout.strip()}"

    pid, result = asyncio.run(main())
    assert result == f"4 {pid}"


def test_a_supervisor_outlives_the_process_that_started_it(tmp_path: Path) -> None:
    go, pids = tmp_path / "go", tmp_path / "pid"
    starter = f"""
import asyncio, os, sys, uuid
from pathlib import Path
from trainop.cluster.kubelet.reaper import Reaper
from trainop.cluster.kubelet.runtimes import supervised
from trainop.cluster.kubelet.runtimes.runtime import Launch, Target
code = "import os, time\\nwhile not os.path.exists({str(go)!r}): time.sleep(0.02)"
async def main():
    runtime = supervised.SupervisedRuntime(Path({str(tmp_path)!r}), Reaper())
    where = Target("default", "pod", "u1", "main", "pod", 0)
    run = await runtime.start(where, Launch([sys.executable, "-c", code], {{}}, Path("/"), 0), {{}})
    Path({str(pids)!r}).write_text(str(run.pid))
    await asyncio.sleep(60)
asyncio.run(main())
"""
    host = subprocess.Popen([sys.executable, "-c", starter])
    try:
        wait_for(
            lambda: pids.exists() and pids.read_text() != "", timeout=30, what="the run started"
        )
        container = int(pids.read_text())
        host.send_signal(signal.SIGKILL)
        host.wait(timeout=30)
        assert alive(container), "the container died with the process that started it"
        where = Target("default", "pod", "u1", "main", "pod", 0)
        go.touch()
        exit_file = supervised.exit_path(sandbox_of(tmp_path, where), "main", 0)
        wait_for(exit_file.exists, timeout=30, what="the exit recorded")
        assert json.loads(exit_file.read_text())["returncode"] == 0
        assert supervisor.address_of("x") != supervisor.address_of("y")
    finally:
        host.kill()
        host.wait()


def test_a_start_of_a_run_that_already_runs_follows_it(tmp_path: Path, reaper: Reaper) -> None:
    """A kubelet that died between starting a run and recording it: the next one's start of
    the same run number finds it instead of running it twice; once it ended, its exit."""
    runtime = supervised.SupervisedRuntime(tmp_path, reaper)
    where, go, marker = target(), tmp_path / "go", tmp_path / "starts"
    code = (
        f"import os, time\nopen({str(marker)!r}, 'a').write('x')\n"
        f"while not os.path.exists({str(go)!r}): time.sleep(0.02)\nraise SystemExit(6)"
    )

    async def main() -> tuple[int, int, int, int]:
        first = await runtime.start(where, launch(code, tmp_path), {})
        second = await runtime.start(where, launch(code, tmp_path), {})
        go.touch()
        returned = await second.wait()
        third = await runtime.start(where, launch(code, tmp_path), {})
        return first.pid, second.pid, returned, await third.wait()

    first, second, returned, again = asyncio.run(main())
    assert (second, returned, again) == (first, 6, 6)
    assert marker.read_text() == "x", "the run ran once"
