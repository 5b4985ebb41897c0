"""Ctrl-C of ``trainop run`` leaves no claim directory (note 132).

An ephemeral session keeps its claims' data below its temporary state directory, which the
run removes when it ends, also on SIGINT. Here the job's pod mounts a claim that is created
(with the official client, through the run's own kubeconfig) while the run waits for it; the
pod writes into the claim's directory; then the run's process group gets SIGINT.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from tests.polling import wait_for

TRAINOP = [sys.executable, "-m", "trainop.cli.main"]
WRITE_AND_WAIT = (
    "import os, time\n"
    "open(os.environ['TRAINOP_ROOT'] + '/data/mark', 'w').write('x')\n"
    "print('wrote', flush=True)\n"
    "time.sleep(300)\n"
)


def _job() -> dict[str, Any]:
    container = {
        "name": "pytorch",
        "image": "python:3.11",
        "command": [sys.executable, "-c", WRITE_AND_WAIT],
        "volumeMounts": [{"name": "data", "mountPath": "/data"}],
    }
    volume = {"name": "data", "persistentVolumeClaim": {"claimName": "scratch"}}
    template = {"spec": {"containers": [container], "volumes": [volume]}}
    master = {"replicas": 1, "restartPolicy": "Never", "template": template}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "claimed"},
        "spec": {"pytorchReplicaSpecs": {"Master": master}},
    }


def test_sigint_of_trainop_run_removes_its_claim_directories(tmp_path: Path) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(_job()))
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

        def kubeconfig() -> Path | None:
            found = [p / "kubeconfig" for p in temp.glob("trainop-*")]
            return next((k for k in found if k.exists()), None)

        config = wait_for(kubeconfig, timeout=60, what="the run's kubeconfig")
        api = k8s.CoreV1Api(k8s_config.new_client_from_config(config_file=str(config)))
        claim = {
            "metadata": {"name": "scratch"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
            },
        }
        api.create_namespaced_persistent_volume_claim("default", claim)
        state = config.parent
        marks = wait_for(
            lambda: list((state / "volumes").glob("pvc-*/mark")),
            timeout=60,
            what="the pod wrote into its claim",
        )
        assert marks[0].read_text() == "x"
        os.killpg(process.pid, signal.SIGINT)
        output, _ = process.communicate(timeout=90)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate(timeout=30)
    assert process.returncode == 128 + signal.SIGINT, output
    assert "Traceback" not in output
    assert not state.exists(), "the ephemeral state, and every claim directory in it, is gone"
    assert list(temp.iterdir()) == []
