"""``trainop run`` of a TrainJob, interrupted (issue 23 acceptance, note 133).

Ctrl-C (SIGINT to the run's process group) while the trainer runs: the run deletes the
TrainJob, stops every process of the session and removes its state, claim directories
included, and exits 130. The TrainJob here is the multi-step shape: an initializer writes into
the claim of the runtime's ``volumeClaimPolicies``, then the trainer (``dependsOn`` Complete)
writes its PID into the claim and waits; after the signal that process is gone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.polling import wait_for

TRAINOP = [sys.executable, "-m", "trainop.cli.main"]
WORK = "import os, time\nWORK = os.environ['TRAINOP_ROOT'] + '/workspace'\n"
INIT = WORK + "open(WORK + '/dataset', 'w').write('rows')\n"
TRAIN = WORK + (
    "open(WORK + '/pid', 'w').write(str(os.getpid()))\n"
    "print('training', flush=True)\n"
    "time.sleep(300)\n"
)


def _job(name: str, code: str, **extra: Any) -> dict[str, Any]:
    container = {
        "name": name,
        "image": "python:3.11",
        "command": [sys.executable, "-c", code],
        "volumeMounts": [{"name": "initializer", "mountPath": "/workspace"}],
    }
    labels = {"trainer.kubeflow.org/trainjob-ancestor-step": name.replace("node", "trainer")}
    pod = {"spec": {"template": {"spec": {"containers": [container]}}}}
    return {"name": name, "template": {"metadata": {"labels": labels}, **pod}, **extra}


def _manifest() -> list[dict[str, Any]]:
    claim = {
        "metadata": {"name": "initializer"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    after = [{"name": "dataset-initializer", "status": "Complete"}]
    runtime = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainingRuntime",
        "metadata": {"name": "waits"},
        "spec": {
            "mlPolicy": {"numNodes": 1},
            "template": {
                "spec": {
                    "volumeClaimPolicies": [{"templates": [claim]}],
                    "replicatedJobs": [
                        _job("dataset-initializer", INIT),
                        _job("node", TRAIN, dependsOn=after),
                    ],
                }
            },
        },
    }
    trainjob = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "waits"},
        "spec": {"runtimeRef": {"name": "waits", "kind": "TrainingRuntime"}},
    }
    return [runtime, trainjob]


def test_sigint_of_trainop_run_on_a_trainjob_leaves_no_process_or_claim(tmp_path: Path) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    path = tmp_path / "trainjob.yaml"
    path.write_text(yaml.safe_dump_all(_manifest()))
    process = subprocess.Popen(
        [*TRAINOP, "run", str(path), "--timeout", "120"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        env={**os.environ, "TMPDIR": str(temp)},
    )
    try:

        def trainer_pid() -> int | None:
            found = list(temp.glob("trainop-*/volumes/*/pid"))
            text = found[0].read_text() if found else ""
            return int(text) if text else None

        pid = wait_for(trainer_pid, timeout=90, what="the trainer wrote its PID into the claim")
        claims = list(temp.glob("trainop-*/volumes/*/dataset"))
        assert [c.read_text() for c in claims] == ["rows"], "the initializer ran first"
        os.killpg(process.pid, signal.SIGINT)
        output, _ = process.communicate(timeout=90)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate(timeout=30)
    assert process.returncode == 128 + signal.SIGINT, output
    assert "interrupted" in output
    assert "Traceback" not in output
    gone = wait_for(lambda: not Path(f"/proc/{pid}").exists(), timeout=10, what="trainer gone")
    assert gone
    assert list(temp.iterdir()) == [], "the ephemeral state, and its claim directories, is gone"
