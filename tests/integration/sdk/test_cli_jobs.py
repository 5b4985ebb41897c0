"""The ``trainop`` job commands as a user runs them: subprocesses against a local cluster."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.integration.sdk.jobs import printing_job

FAIL_WORKERS = (
    "import os, sys, time; 'worker' in os.environ['HOSTNAME'] and sys.exit(7); time.sleep(5)"
)


def trainop(
    kubeconfig: Path | None, *args: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KUBECONFIG": str(kubeconfig) if kubeconfig else "/nonexistent"}
    command = [sys.executable, "-m", "trainop.cli.main", *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout)


def ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def failed_in_one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    return done.stderr


def submit(kubeconfig: Path, tmp_path: Path, manifest: dict[str, object]) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(manifest))
    assert "created" in ok(trainop(kubeconfig, "submit", "-f", str(path)))


def test_submit_wait_get_logs_delete(kubeconfig: Path, tmp_path: Path, name: str) -> None:
    submit(kubeconfig, tmp_path, printing_job("XGBoostJob", name))
    assert ok(trainop(kubeconfig, "wait", "xgboostjob", name, "--timeout", "90")).strip() == (
        f"xgboostjob/{name} Succeeded"
    )
    table = ok(trainop(kubeconfig, "get", "xgboostjob"))
    row = next(line for line in table.splitlines() if name in line).split()
    assert row[:2] == [name, "Succeeded"]
    assert row[-1] == "0/2"
    assert name in ok(trainop(kubeconfig, "get", "-o", "wide"))
    listed = json.loads(ok(trainop(kubeconfig, "get", "xgboostjob", name, "-o", "json")))
    assert listed["metadata"]["name"] == name
    assert listed["status"]["conditions"]
    shown = yaml.safe_load(ok(trainop(kubeconfig, "get", "xgboostjob", name, "-o", "yaml")))
    assert shown["kind"] == "XGBoostJob"

    logs = ok(trainop(kubeconfig, "logs", "xgboostjob", name))
    assert f"[master-0] hello from {name}-master-0" in logs
    assert f"[worker-0] hello from {name}-worker-0" in logs
    only = ok(trainop(kubeconfig, "logs", "xgboostjob", name, "--replica", "worker-0"))
    assert only.strip() == f"[worker-0] hello from {name}-worker-0"

    assert (
        ok(trainop(kubeconfig, "delete", "xgboostjob", name)).strip()
        == f"xgboostjob/{name} deleted"
    )
    gone = failed_in_one_line(trainop(kubeconfig, "get", "xgboostjob", name))
    assert "not found" in gone


def test_logs_follow_ends_when_the_job_ends(kubeconfig: Path, tmp_path: Path, name: str) -> None:
    code = "import time\nfor i in range(3):\n    print('tick', i, flush=True); time.sleep(0.3)"
    submit(kubeconfig, tmp_path, printing_job("JAXJob", name, code=code))
    followed = ok(trainop(kubeconfig, "logs", "jaxjob", name, "-f", "--replica", "worker-1"))
    assert followed.splitlines() == [f"[worker-1] tick {i}" for i in range(3)]
    assert "Succeeded" in ok(trainop(kubeconfig, "get", "jaxjob", name))
    ok(trainop(kubeconfig, "delete", "jaxjob", name))


def test_describe_a_failed_job_names_replica_exit_code_and_reason(
    kubeconfig: Path, tmp_path: Path, name: str
) -> None:
    manifest = printing_job(
        "TFJob",
        name,
        code=FAIL_WORKERS,
    )
    submit(kubeconfig, tmp_path, manifest)
    waited = trainop(kubeconfig, "wait", "tfjob", name, "--timeout", "90")
    assert waited.returncode == 1
    assert f"TFJob default/{name} is Failed" in waited.stderr
    described = ok(trainop(kubeconfig, "describe", "tfjob", name))
    assert "State:     Failed" in described
    assert "the job failed: replica worker-0 exited with code 7 (Error)" in described
    assert "Events:" in described
    assert "Failed" in described
    # piped, as here: every row on one line, the message whole (not cut to 80 columns)
    exited = f"Pod: default.{name}-worker-0 exited with code 7"
    assert any("ExitedWithCode" in line and exited in line for line in described.splitlines())
    ok(trainop(kubeconfig, "delete", "tfjob", name))


def test_suspend_and_resume(kubeconfig: Path, tmp_path: Path, name: str) -> None:
    submit(
        kubeconfig, tmp_path, printing_job("PyTorchJob", name, code="import time; time.sleep(60)")
    )
    try:
        assert (
            ok(trainop(kubeconfig, "suspend", "pytorchjob", name)).strip()
            == f"pytorchjob/{name} suspended"
        )
        described = ok(trainop(kubeconfig, "describe", "pytorchjob", name))
        assert "the job is suspended" in described
        assert (
            ok(trainop(kubeconfig, "resume", "pytorchjob", name)).strip()
            == f"pytorchjob/{name} resumed"
        )
        assert "the job is suspended" not in ok(trainop(kubeconfig, "describe", "pytorchjob", name))
    finally:
        ok(trainop(kubeconfig, "delete", "pytorchjob", name))


def test_wait_times_out_with_exit_124(kubeconfig: Path, tmp_path: Path, name: str) -> None:
    submit(
        kubeconfig, tmp_path, printing_job("PyTorchJob", name, code="import time; time.sleep(60)")
    )
    try:
        waited = trainop(kubeconfig, "wait", "pytorchjob", name, "--timeout", "1")
        assert waited.returncode == 124
        assert f"PyTorchJob default/{name}" in failed_in_one_line(waited)
    finally:
        ok(trainop(kubeconfig, "delete", "pytorchjob", name))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("get", "foojob"), "unknown job kind 'foojob'"),
        (("describe", "pytorchjob", "no-such-job"), "not found"),
        (("logs", "pytorchjob", "no-such-job", "-f"), "not found"),
        (("delete", "tfjob", "no-such-job"), "not found"),
        (("wait", "mpijob", "no-such-job"), "not found"),
    ],
)
def test_unknown_kinds_and_names_are_one_line_errors(
    kubeconfig: Path, args: tuple[str, ...], message: str
) -> None:
    assert message in failed_in_one_line(trainop(kubeconfig, *args))


def test_an_unreachable_cluster_is_a_one_line_error(tmp_path: Path) -> None:
    config = tmp_path / "kubeconfig"
    config.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:9"}}],
                "users": [{"name": "u", "user": {}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    line = failed_in_one_line(trainop(config, "get", "pytorchjob"))
    assert "127.0.0.1:9" in line  # names the address it could not reach
    assert "connect" in line.lower()
    assert "configuration" in failed_in_one_line(trainop(None, "get"))
