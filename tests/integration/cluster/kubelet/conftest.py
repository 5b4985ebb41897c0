"""One embedded API server per module, serving logs from the kubelets' sandbox root."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.integration.cluster.apiserver.conftest import RunningServer
from tests.integration.cluster.kubelet.harness import start_server
from trainop.cluster.kubelet import LogFiles


@dataclass
class Site:
    server: RunningServer
    logs: LogFiles
    root: Path


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    root = tmp_path_factory.mktemp("sandboxes")
    logs = LogFiles(root)
    for server in start_server(tmp_path_factory.mktemp("apiserver"), logs):
        yield Site(server, logs, root)
