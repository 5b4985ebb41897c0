"""``trainop run`` as a user runs it: a real process, real replicas, real signals."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.polling import wait_for


def job(name: str, *, master: list[str], worker: list[str], **worker_spec: Any) -> dict[str, Any]:
    def replica(command: list[str], replicas: int, **extra: Any) -> dict[str, Any]:
        container = {"name": "pytorch", "image": "python:3.11", "command": command}
        return {"replicas": replicas, "template": {"spec": {"containers": [container]}}, **extra}

    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name},
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": replica(master, 1),
                "Worker": replica(worker, 2, **worker_spec),
            }
        },
    }


def py(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def start(tmp_path: Path, manifest: dict[str, Any], *args: str) -> subprocess.Popen[str]:
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(manifest))
    command = [
        sys.executable,
        "-m",
        "trainop.cli.main",
        "run",
        str(path),
        "--timeout",
        "120",
        *args,
    ]
    return subprocess.Popen(
        command,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )


def finish(process: subprocess.Popen[str]) -> tuple[int, str]:
    output, _ = process.communicate(timeout=180)
    return process.returncode, output


RANKS = "import os; print('rank', os.environ['RANK'], 'of', os.environ['WORLD_SIZE'])"


def test_a_job_succeeds_with_every_replica_logged_under_its_prefix(tmp_path: Path) -> None:
    code, output = finish(start(tmp_path, job("ok", master=py(RANKS), worker=py(RANKS))))
    assert code == 0, output
    for line in (
        "[master-0]",
        "rank 0 of 3",
        "[worker-0]",
        "rank 1 of 3",
        "[worker-1]",
        "rank 2 of 3",
        "PyTorchJob/ok Succeeded",
    ):
        assert line in output, output


def test_a_failed_job_names_the_replica_exit_code_and_reason(tmp_path: Path) -> None:
    worker = py("import os, sys; sys.exit(3 if os.environ['RANK'] == '2' else 0)")
    manifest = job(
        "bad", master=py("import time; time.sleep(1)"), worker=worker, restartPolicy="Never"
    )
    code, output = finish(start(tmp_path, manifest))
    assert code == 1, output
    assert "PyTorchJob/bad Failed: worker-1 exited with code 3 (Error)" in output


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"command": None}, "(ContainerCannotRun)"),
        ({"command": ["no-such-program-for-trainop"]}, "(StartError)"),
        (
            {
                "env": [
                    {"name": "X", "valueFrom": {"configMapKeyRef": {"name": "absent", "key": "k"}}}
                ]
            },
            "(CreateContainerConfigError)",
        ),
    ],
    ids=["no command", "missing executable", "missing configMap"],
)
def test_a_replica_that_cannot_start_fails_the_run_with_its_reason(
    tmp_path: Path, change: dict[str, Any], expected: str
) -> None:
    # the master outlives the worker's failed start: a master that finished first would end
    # the job Succeeded (PyTorch's success policy), whichever replica could not start
    manifest = job("cannot", master=py("import time; time.sleep(120)"), worker=py(RANKS))
    container = manifest["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][
        0
    ]
    for key, value in change.items():
        if value is None:
            del container[key]
        else:
            container[key] = value
    started = time.monotonic()
    code, output = finish(start(tmp_path, manifest))
    assert code == 1, output
    assert expected in output, output
    assert time.monotonic() - started < 60, "a clear failure, not a wait"


def test_an_invalid_manifest_is_rejected_before_anything_starts(tmp_path: Path) -> None:
    manifest = job("Bad_Name", master=py(RANKS), worker=py(RANKS))
    code, output = finish(start(tmp_path, manifest))
    assert code == 2
    assert "metadata.name: Invalid value: " in output


def replica_processes(token: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(token.encode() in arg for arg in argv) and b"trainop.cli.main" not in b" ".join(
            argv
        ):
            found.append(int(entry.name))
    return found


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["SIGINT", "SIGKILL"])
def test_no_replica_process_outlives_an_interrupted_or_killed_run(
    tmp_path: Path, sig: signal.Signals
) -> None:
    token = f"trainop-orphan-check-{uuid.uuid4().hex}"
    sleeper = py(f"import time  # {token}\nprint('up', flush=True); time.sleep(300)")
    process = start(tmp_path, job("long", master=sleeper, worker=sleeper))
    try:
        wait_for(lambda: len(replica_processes(token)) == 3, timeout=60, what="three replicas")
        process.send_signal(sig)
        code = process.wait(timeout=60)
        assert code == (130 if sig == signal.SIGINT else -signal.SIGKILL)
        wait_for(lambda: not replica_processes(token), timeout=30, what="no replica left")
    finally:
        if process.poll() is None:
            process.kill()
        for pid in replica_processes(token):
            os.kill(pid, signal.SIGKILL)


def test_a_replica_that_does_not_fit_the_node_is_reported_as_unschedulable(
    tmp_path: Path,
) -> None:
    manifest = job("huge", master=py("print('hi')"), worker=py("print('hi')"))
    for spec in manifest["spec"]["pytorchReplicaSpecs"].values():
        resources = {"requests": {"cpu": "1000"}}
        spec["template"]["spec"]["containers"][0]["resources"] = resources
    code, output = finish(start(tmp_path, manifest, "--timeout", "8"))
    assert code == 124, output  # never fits: it waits, as on a cluster, until --timeout
    assert "master-0: 0/1 nodes are available: 1 Insufficient cpu." in output
    assert output.count("worker-1: 0/1 nodes") == 1, "each message is said once"
