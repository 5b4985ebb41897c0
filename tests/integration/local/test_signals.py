"""Signals, pid files and a full disk, with real processes: exit codes, one line, nothing left.

Every process here is real: ``trainop run`` and ``trainop local serve`` in their own process
groups (signalled as a whole, as a service manager or a terminal does), an unrelated ``sleep``
behind a stale pid file, and a tmpfs filled to the last byte in a private mount namespace.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from tests.integration.local.test_trainop_run import job, py, replica_processes
from tests.polling import wait_for
from trainop.local import daemon

TRAINOP = [sys.executable, "-m", "trainop.cli.main"]


def spawn(args: list[str], *, cwd: Path, group: bool = True) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*TRAINOP, *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=group,
        env={**os.environ, "COLUMNS": "200"},
    )


def session_members(session: int) -> list[int]:
    """Live processes of a session (containers stay in the kubelet's session, note 060)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[3]) == session:
            found.append(int(entry.name))
    return found


def sleepers(token: str) -> dict[str, Any]:
    sleeper = py(f"import time  # {token}\nprint('up', flush=True); time.sleep(300)")
    return job("long", master=sleeper, worker=sleeper)


@pytest.fixture
def token() -> Iterator[str]:
    value = f"trainop-signal-check-{uuid.uuid4().hex}"
    yield value
    for pid in replica_processes(value):
        os.kill(pid, signal.SIGKILL)


def stop_group(process: subprocess.Popen[str], sig: int) -> tuple[int, str]:
    try:
        os.killpg(process.pid, sig)
        output, _ = process.communicate(timeout=90)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    return process.returncode, output


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_to_the_process_group_of_trainop_run_stops_everything(
    tmp_path: Path, token: str, sig: int
) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(sleepers(token)))
    process = spawn(["run", str(path)], cwd=tmp_path)
    wait_for(lambda: len(replica_processes(token)) == 3, timeout=60, what="three replicas")
    assert len(session_members(process.pid)) > 3, "run, its reaper and three replicas"
    code, output = stop_group(process, sig)
    assert code == 128 + sig, output
    assert "Traceback" not in output
    wait_for(lambda: not replica_processes(token), timeout=30, what="no replica left")
    wait_for(lambda: not session_members(process.pid), timeout=30, what="no process left")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_during_the_start_of_trainop_run_is_one_line_and_its_code(
    tmp_path: Path, token: str, sig: int
) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(sleepers(token)))
    state = tmp_path / "state"
    process = spawn(["run", str(path), "--state-dir", str(state)], cwd=tmp_path)
    wait_for(lambda: (state / "store.db").exists(), timeout=60, what="the store")  # mid start-up
    code, output = stop_group(process, sig)
    assert code == 128 + sig, output
    assert "Traceback" not in output
    wait_for(lambda: not replica_processes(token), timeout=30, what="no replica left")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_to_the_daemon_group_exits_143_or_130_with_every_process_stopped(
    tmp_path: Path, token: str, sig: int
) -> None:
    state = tmp_path / "state"
    serve = spawn(["local", "serve", "--state-dir", str(state)], cwd=tmp_path)
    try:
        wait_for(lambda: (state / daemon.READY_FILE).exists(), timeout=60, what="ready")
        assert daemon.status(state).pid == serve.pid
        api = k8s_config.new_client_from_config(config_file=str(state / "kubeconfig"))
        k8s.CustomObjectsApi(api).create_namespaced_custom_object(
            "kubeflow.org", "v1", "default", "pytorchjobs", sleepers(token)
        )
        wait_for(lambda: len(replica_processes(token)) == 3, timeout=60, what="three replicas")
    finally:
        code, output = stop_group(serve, sig)
    assert code == 128 + sig, output
    assert "Traceback" not in output
    wait_for(lambda: not replica_processes(token), timeout=30, what="no replica left")
    wait_for(lambda: not session_members(serve.pid), timeout=30, what="no process left")
    assert not daemon.status(state).running
    assert not (state / daemon.READY_FILE).exists()


@pytest.fixture
def unrelated() -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(["sleep", "300"])
    yield process
    process.kill()
    process.wait()


def local(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [*TRAINOP, "local", *args, "--state-dir", str(state)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def test_a_stale_pid_file_never_gets_an_unrelated_process_signalled(
    tmp_path: Path, unrelated: subprocess.Popen[bytes]
) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / daemon.PID_FILE).write_text(str(unrelated.pid))  # a crashed daemon's leftover
    status = local(state, "status")
    assert status.returncode == 3, status.stdout
    assert "stopped" in status.stdout
    down = local(state, "down")
    assert down.returncode == 0
    assert "no local cluster running" in down.stdout
    assert unrelated.poll() is None, "the unrelated process was signalled"


def test_a_pid_file_naming_another_process_than_the_lock_holder_is_not_believed(
    tmp_path: Path, unrelated: subprocess.Popen[bytes]
) -> None:
    state = tmp_path / "state"
    state.mkdir()
    lock = (  # one process holds the lock (flock(1)'s child would outlive a kill of flock)
        "import fcntl, os, sys, time\n"
        "fcntl.flock(os.open(sys.argv[1], os.O_CREAT), fcntl.LOCK_EX)\n"
        "time.sleep(300)"
    )
    holder = subprocess.Popen([sys.executable, "-c", lock, str(state / daemon.PID_FILE)])
    try:
        wait_for(lambda: daemon.lock_holders(state), timeout=10, what="the lock taken")
        (state / daemon.PID_FILE).write_text(str(unrelated.pid))
        assert daemon.verified_pid(state) is None
        down = local(state, "down")
        assert "no local cluster running" in down.stdout
        assert unrelated.poll() is None, "the unrelated process was signalled"
    finally:
        holder.kill()
        holder.wait()


def test_up_down_status_go_by_the_lock(tmp_path: Path) -> None:
    state = tmp_path / "state"
    started = local(state, "up")
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        pid = daemon.status(state).pid
        assert pid is not None
        assert f"pid {pid}" in started.stdout
        second = spawn(["local", "serve", "--state-dir", str(state)], cwd=tmp_path, group=False)
        output, _ = second.communicate(timeout=60)
        assert second.returncode == 1
        assert f"already runs on {state} (pid {pid})" in output
        assert local(state, "status").returncode == 0
    finally:
        stopped = local(state, "down")
    assert stopped.returncode == 0
    assert "local cluster stopped" in stopped.stdout
    assert local(state, "status").returncode == 3


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupting_up_during_start_up_stops_the_daemon_it_started(
    tmp_path: Path, sig: int
) -> None:
    state = tmp_path / "state"
    up = spawn(["local", "up", "--state-dir", str(state)], cwd=tmp_path, group=False)
    try:
        pid = wait_for(lambda: daemon.status(state).pid, timeout=60, what="the daemon's lock")
        up.send_signal(sig)
        output, _ = up.communicate(timeout=90)
    finally:
        if up.poll() is None:
            up.kill()
    assert up.returncode == 128 + sig, output
    assert output.strip().splitlines() == [
        f"{'interrupted' if sig == signal.SIGINT else 'terminated'}:"
        " the local cluster was not started"
    ]
    wait_for(lambda: not daemon.is_running(pid), timeout=60, what="the daemon gone")
    assert not daemon.status(state).running


FILL = """
set -e
mount -t tmpfs -o size=4m none "$1"
head -c 8m /dev/zero > "$1/filler" 2>/dev/null || true
shift
exec "$@"
"""


@pytest.mark.parametrize("command", ["local up", "run"])
def test_a_full_disk_is_one_line_and_exit_1(tmp_path: Path, command: str) -> None:
    if shutil.which("unshare") is None:
        pytest.skip("unshare(1) is not installed")
    disk = tmp_path / "disk"
    disk.mkdir()
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"no unprivileged mount namespaces here: {probe.stderr!r}")
    manifest = tmp_path / "job.yaml"
    manifest.write_text(yaml.safe_dump(job("tiny", master=py("print(1)"), worker=py("print(1)"))))
    args = ["local", "up"] if command == "local up" else ["run", str(manifest)]
    wrapped = ["unshare", "-rm", "sh", "-c", FILL, "fill", str(disk)]
    wrapped += [*TRAINOP, *args, "--state-dir", str(disk / "state")]
    result = subprocess.run(wrapped, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 1, result.stdout + result.stderr
    lines = (result.stdout + result.stderr).strip().splitlines()
    assert len(lines) == 1, lines
    assert "no space left" in lines[0].lower()
    assert str(disk / "state") in lines[0]
