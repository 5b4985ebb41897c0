"""A ``trainop local up`` cluster shared by the SDK and CLI tests, and clients of it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from trainop.local import daemon
from trainop.sdk import TrainingClient


@pytest.fixture(scope="session")
def local_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[daemon.Status]:
    state = tmp_path_factory.mktemp("trainop-local")
    status = daemon.up(state)
    try:
        yield status
    finally:
        daemon.down(state)


@pytest.fixture
def kubeconfig(local_cluster: daemon.Status) -> Path:
    return local_cluster.kubeconfig


@pytest.fixture
def client(kubeconfig: Path) -> Iterator[TrainingClient]:
    with TrainingClient(config_file=str(kubeconfig)) as training:
        yield training


@pytest.fixture
def name() -> str:
    """A job name no other test uses (the cluster is shared)."""
    return f"j-{uuid.uuid4().hex[:8]}"
