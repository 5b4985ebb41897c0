"""``trainop run`` of a kubeflow.org/v1 job that nobody else can reach installs the job's CRD
alone and runs its kind's controller alone (``ClusterConfig.job_kind``, issue 24 item 5):
the job still runs to ``Succeeded``; a shared session (``--keep``, ``--state-dir``) and a
TrainJob keep every kind."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.integration.local.test_cluster import PYTORCH, simulated, wait_for_condition
from tests.unit.api.builders import manifest
from trainop.cli import run
from trainop.kube.resources import CRDS
from trainop.local.session import ClusterConfig, LocalCluster, machine_cluster


def test_a_session_of_one_job_kind_installs_that_crd_alone_and_runs_the_job(
    tmp_path: Path,
) -> None:
    config = ClusterConfig(state_dir=tmp_path / "state", job_kind="PyTorchJob")

    async def scenario() -> list[str]:
        async with LocalCluster(config, kubelet=simulated) as cluster:
            await cluster.client.create(
                PYTORCH, manifest("PyTorchJob", name="p"), namespace="default"
            )
            await wait_for_condition(cluster.client, "p", "Succeeded")
            crds = await cluster.client.list(CRDS)
            return sorted(c["spec"]["names"]["kind"] for c in crds.items)

    assert asyncio.run(scenario()) == ["PyTorchJob"]


def test_the_machine_cluster_of_one_kind_runs_that_kinds_controller_and_no_trainer(
    tmp_path: Path,
) -> None:
    cluster = machine_cluster(ClusterConfig(state_dir=tmp_path / "one", job_kind="TFJob"))
    assert cluster._config.manager.kinds == ("TFJob",)
    assert cluster._config.trainer_runtimes is False
    every = machine_cluster(ClusterConfig(state_dir=tmp_path / "every"))
    assert "TrainJob" in every._config.manager.kinds
    assert every._config.trainer_runtimes is True


def test_only_an_unshared_v1_job_narrows_the_session_to_its_kind() -> None:
    job = run.manifest.load_job(manifest("PyTorchJob", name="p"), source="test")
    assert run.run_kind(job, shared=False) == "PyTorchJob"
    assert run.run_kind(job, shared=True) == ""  # --keep or --state-dir: kubectl may use it
