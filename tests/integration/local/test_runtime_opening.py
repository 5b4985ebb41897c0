"""A local cluster opens its container runtime while its API server starts (issue 24 item 5:
``trainop run --runtime podman`` no longer waits for the runtime's listings and network
before the server starts), and sets the operator's addressing from what the opened runtime
says; a start that fails still closes the runtime."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.polling import until
from trainop.cluster.kubelet.runtimes.runtime import Launch, Report, Running, Target, no_report
from trainop.local.session import ClusterConfig, LocalCluster, machine_cluster


class OpeningRuntime:
    """A container runtime whose ``open`` lasts until the cluster's server has written its
    kubeconfig (it would never end if the server started only after it), then has (or has
    not) a network of its own."""

    def __init__(self, *, network: bool) -> None:
        self.cluster: LocalCluster | None = None
        self._network = network
        self.addresses_by_name = False  # the host's until open made the network
        self.opened = 0
        self.closed = 0
        self.before_server = False  # open began before the server had written its kubeconfig

    async def open(self) -> None:
        if self.opened:
            return
        self.opened += 1
        assert self.cluster is not None
        cluster = self.cluster
        self.before_server = not cluster.server.kubeconfig_path.exists()
        await until(lambda: cluster.server.kubeconfig_path.exists(), timeout=30, what="server")
        self.addresses_by_name = self._network

    async def close(self) -> None:
        self.closed += 1

    async def start(
        self, target: Target, launch: Launch, env: Mapping[str, str], report: Report = no_report
    ) -> Running:
        raise AssertionError("no pod in these tests")

    async def prepare(self, target: Target, pod_spec: Mapping[str, Any], report: Report) -> str:
        raise AssertionError("no pod in these tests")

    async def release(self, uid: str) -> None:
        raise AssertionError("no pod in these tests")


def _frameworks(cluster: LocalCluster) -> Any:
    return cluster._config.manager.engine.frameworks


@pytest.mark.parametrize("network", [True, False])
def test_the_runtime_opens_while_the_server_starts_and_sets_the_addressing(
    tmp_path: Path, network: bool
) -> None:
    runtime = OpeningRuntime(network=network)

    async def scenario() -> tuple[bool, bool, int]:
        cluster = machine_cluster(ClusterConfig(state_dir=tmp_path), container_runtime=runtime)
        runtime.cluster = cluster
        assert _frameworks(cluster).mpi_real_ssh_to_sshd_workers is False  # not open yet
        async with asyncio.timeout(60), cluster:
            by_name = cluster._cluster_addressing
            sshd = _frameworks(cluster).mpi_real_ssh_to_sshd_workers
        return by_name, sshd, runtime.opened

    by_name, sshd, opened = asyncio.run(scenario())
    assert (by_name, sshd) == (network, network)
    assert opened == 1
    assert runtime.before_server
    assert runtime.closed >= 1


def test_a_server_that_cannot_start_still_closes_the_runtime(tmp_path: Path) -> None:
    runtime = OpeningRuntime(network=True)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]

        async def scenario() -> None:
            cluster = machine_cluster(
                ClusterConfig(state_dir=tmp_path, port=port), container_runtime=runtime
            )
            runtime.cluster = cluster
            async with cluster:
                raise AssertionError("the server started on a taken port")

        with pytest.raises(OSError, match=r"(?i)address already in use"):
            asyncio.run(scenario())
    assert runtime.closed == 1
