"""The converted examples on a real API server: the embedded API server with the Trainer CRDs
(``manifests/trainer/crds``) takes every converted TrainingRuntime and TrainJob from the
official ``kubernetes`` client over HTTP, and keeps every field the converter wrote (a field the
CRD schema did not know would be pruned, and the runtime would not reproduce the pods)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest
import yaml

from tests.integration.cluster.apiserver.conftest import RunningServer, start_server
from tests.unit.engine.convert.support import example_jobs
from trainop.api.trainer import constants
from trainop.engine.convert import convert
from trainop.kube.http import HttpClient
from trainop.kube.resources import CRDS

ROOT = Path(__file__).resolve().parents[3]
JOBS = example_jobs()


async def _install_crds(kubeconfig: Path) -> None:
    client = HttpClient.from_kubeconfig(path=str(kubeconfig))
    try:
        for path in sorted((ROOT / "manifests" / "trainer" / "crds").glob("*.yaml")):
            crd = yaml.safe_load(path.read_text())
            if crd.get("kind") == "CustomResourceDefinition":
                await client.create(CRDS, crd)
    finally:
        await client.close()


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[kubernetes.client.CustomObjectsApi]:
    server: RunningServer
    for server in start_server(tmp_path_factory.mktemp("convert")):
        asyncio.run(_install_crds(server.kubeconfig))
        client = kubernetes.config.new_client_from_config(config_file=str(server.kubeconfig))
        yield kubernetes.client.CustomObjectsApi(client)
        client.close()


def _create(api: Any, plural: str, body: dict[str, Any]) -> dict[str, Any]:
    created: dict[str, Any] = api.create_namespaced_custom_object(
        constants.GROUP, constants.VERSION, "default", plural, body
    )
    return created


def _lost(stored: Any, sent: Any, path: str = "") -> list[str]:
    """The paths of ``sent`` that ``stored`` lacks or holds otherwise (CRD defaults may add)."""
    if isinstance(sent, dict):
        if not isinstance(stored, dict):
            return [path]
        return [p for k, v in sent.items() for p in _lost(stored.get(k), v, f"{path}.{k}")]
    if isinstance(sent, list):
        if not isinstance(stored, list) or len(stored) != len(sent):
            return [path]
        return [p for i, v in enumerate(sent) for p in _lost(stored[i], v, f"{path}[{i}]")]
    return [] if stored == sent else [path]


@pytest.mark.parametrize(("name", "job"), JOBS, ids=[n for n, _ in JOBS])
def test_converted_objects_are_stored_whole(api: Any, name: str, job: dict[str, Any]) -> None:
    conversion = convert(job)
    runtime = _create(api, "trainingruntimes", conversion.runtime)
    assert _lost(runtime["spec"], conversion.runtime["spec"]) == []
    trainjob = _create(api, "trainjobs", conversion.trainjob)
    assert _lost(trainjob["spec"], conversion.trainjob["spec"]) == []
