"""The real ``kubectl`` against a ``trainop local up`` cluster, with the kubeconfig it writes.

kubectl comes from the system (``make kubectl-env`` installs it; ``make test`` sets
``TRAINOP_REQUIRE_KUBECTL=1`` so a missing binary fails there instead of skipping). Each run
gets only ``KUBECONFIG`` (as the README says to export) and a private discovery cache
directory, never a flag that the acceptance commands would not have.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.integration.sdk.conftest import local_cluster  # noqa: F401  (the shared fixture)
from trainop.local import daemon


@dataclass
class Kubectl:
    """Runs ``kubectl`` with one cluster's kubeconfig."""

    binary: str
    env: dict[str, str]

    def run(
        self, *args: str, check: bool = True, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [self.binary, *args],
            env=self.env,
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


def _binary() -> str:
    found = os.environ.get("TRAINOP_KUBECTL") or shutil.which("kubectl")
    if found:
        return found
    if os.environ.get("TRAINOP_REQUIRE_KUBECTL"):
        pytest.fail(
            "kubectl is not installed and TRAINOP_REQUIRE_KUBECTL is set (make kubectl-env)"
        )
    pytest.skip("kubectl is not installed (make kubectl-env installs it)")


@pytest.fixture(scope="session")
def kubectl(
    local_cluster: daemon.Status,  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
) -> Kubectl:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    env["KUBECONFIG"] = str(local_cluster.kubeconfig)
    env["KUBECACHEDIR"] = str(tmp_path_factory.mktemp("kubectl-cache"))
    return Kubectl(binary=_binary(), env=env)


@pytest.fixture
def ns(kubectl: Kubectl) -> Iterator[str]:
    """A fresh namespace, deleted afterwards."""
    name = f"k-{uuid.uuid4().hex[:8]}"
    kubectl.run("create", "namespace", name)
    yield name
    kubectl.run("delete", "namespace", name, "--wait=false", check=False)


ROOT = Path(__file__).resolve().parents[3]
