"""The real ``kubectl`` against a ``trainop local up`` cluster, with the kubeconfig it writes.

kubectl comes from the system (``make kubectl-env`` installs it; ``make test`` sets
``TRAINOP_REQUIRE_KUBECTL=1`` so a missing or unsupported binary fails there instead of
skipping). Each run gets only ``KUBECONFIG`` (as the README says to export) and a private
discovery cache directory, never a flag that the acceptance commands would not have.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

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


# kubectl releases that work with the local server: 1.29 is the first to take OpenAPI v3 for
# apply and explain (older ones need protobuf OpenAPI v2), 1.32 the first to send protobuf
# bodies for built-in kinds (the server takes JSON). The cloud SDK's dispatcher picks the
# release matching the server's version (1.31).
SUPPORTED_MINORS = range(29, 32)


def _binary() -> str:
    found = os.environ.get("TRAINOP_KUBECTL") or shutil.which("kubectl")
    if not found:
        _unusable("kubectl is not installed (make kubectl-env installs it)")
    version = _client_version(str(found))
    minor = int("".join(ch for ch in version.get("minor", "0") if ch.isdigit()) or 0)
    dispatcher = "dispatcher" in version.get("gitVersion", "")
    if not dispatcher and minor not in SUPPORTED_MINORS:
        _unusable(f"kubectl {version.get('gitVersion')} is outside the supported 1.29-1.31")
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
    kubectl.run("create", "namespace", name)
    yield name
    kubectl.run("delete", "namespace", name, "--wait=false", check=False)


ROOT = Path(__file__).resolve().parents[3]
