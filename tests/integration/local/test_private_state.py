"""Local state is private: another local user reads nothing of it (docs/design/080).

Root bypasses file permissions, so every "can they read it" check runs *as another user*
(``runuser``); a throw-away system user is created when missing. The state directories live
under a world-traversable base directory (pytest's own temporary directories are 0700, which
would make the check pass for the wrong reason), and a world-readable control file there proves
that the other user does reach what is not protected.
"""

from __future__ import annotations

import base64
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from tests.integration.local.conftest import trainop
from tests.integration.local.test_trainop_run import job, py
from tests.polling import wait_for

OTHER = "trainop-other"


@pytest.fixture(scope="module")
def other_user() -> str:
    if os.geteuid() != 0:
        pytest.skip("needs root: the check runs commands as a second local user (runuser)")
    try:
        pwd.getpwnam(OTHER)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", OTHER],
            check=True,
            capture_output=True,
        )
    return OTHER


@pytest.fixture
def base() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="trainop-private-", dir="/tmp"))
    path.chmod(0o755)
    control = path / "control.txt"
    control.write_text("anyone may read this")
    control.chmod(0o644)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def readable_by(user: str, path: Path) -> bool:
    """Whether ``user`` can read the file (``cat``) or list the directory (``ls``)."""
    tool = "ls" if path.is_dir() else "cat"
    done = subprocess.run(["runuser", "-u", user, "--", tool, str(path)], capture_output=True)
    return done.returncode == 0


def assert_private(state: Path, user: str, *paths: Path) -> None:
    assert readable_by(user, state.parent / "control.txt"), "the check itself must work"
    for path in (state, *paths):
        assert path.exists(), path
        assert not readable_by(user, path), f"{path} is readable by {user}"
    for directory, dirs, files in os.walk(state):
        for name in dirs:
            mode = stat.S_IMODE((Path(directory) / name).lstat().st_mode)
            assert mode == 0o700 or (Path(directory) / name).is_symlink(), (directory, name)
        for name in files:
            path = Path(directory) / name
            if path.is_symlink() or "volumes" in path.relative_to(state).parts:
                continue  # volume files keep their defaultMode/mode, under 0700 directories
            # Executables: the per-pod venv's launchers, MPI's ssh wrapper (bin/ssh).
            executable = "pyenv" in path.parts or path == state / "bin" / "ssh"
            allowed = {0o600, 0o700} if executable else {0o600}
            assert stat.S_IMODE(path.lstat().st_mode) in allowed, path
    assert stat.S_IMODE(state.stat().st_mode) == 0o700


def test_a_daemons_state_secrets_and_logs_are_private(other_user: str, base: Path) -> None:
    state = base / "daemon"
    try:
        started = trainop(state, "up")
        assert started.returncode == 0, started.stdout + started.stderr
        api = k8s_config.new_client_from_config(config_file=str(state / "kubeconfig"))
        core = k8s.CoreV1Api(api)
        token = base64.b64encode(b"hunter2").decode()
        core.create_namespaced_secret(
            "default", {"metadata": {"name": "creds"}, "data": {"token": token}}
        )
        container = {
            "name": "main",
            "image": "python:3",
            "command": py("print('a line of log')"),
            "volumeMounts": [{"name": "creds", "mountPath": "/etc/creds"}],
        }
        pod = {
            "metadata": {"name": "reader"},
            "spec": {
                "restartPolicy": "Never",
                "containers": [container],
                "volumes": [{"name": "creds", "secret": {"secretName": "creds"}}],
            },
        }
        core.create_namespaced_pod("default", pod)
        wait_for(
            lambda: core.read_namespaced_pod("reader", "default").status.phase == "Succeeded",
            timeout=60,
            what="the pod to succeed",
        )
        uid = core.read_namespaced_pod("reader", "default").metadata.uid
        sandbox = state / "pods" / "default" / "reader" / uid
        secret_file = sandbox / "volumes" / "creds" / "token"
        assert secret_file.read_bytes() == b"hunter2"
        assert stat.S_IMODE(secret_file.stat().st_mode) == 0o644  # kube's defaultMode
        paths = [state / "store.db", state / "token", state / "kubeconfig", secret_file]
        assert_private(state, other_user, *paths, sandbox / "logs" / "main" / "0.log")
    finally:
        trainop(state, "down")


def test_trainop_runs_state_is_private(other_user: str, base: Path) -> None:
    state = base / "run"
    manifest = base / "job.yaml"
    hello = "print('hello')"
    manifest.write_text(yaml.safe_dump(job("private", master=py(hello), worker=py(hello))))
    command = [sys.executable, "-m", "trainop.cli.main", "run", str(manifest)]
    done = subprocess.run(
        [*command, "--state-dir", str(state)], capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stdout + done.stderr
    logs = sorted(state.glob("pods/*/*/*/logs/*/*.log"))
    assert logs, "the replicas' logs are kept in the state directory"
    assert_private(state, other_user, state / "store.db", state / "token", *logs)
