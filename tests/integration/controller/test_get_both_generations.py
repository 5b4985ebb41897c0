"""``trainop get`` without a kind lists the kubeflow.org/v1 jobs and the TrainJobs, against the
embedded API server over HTTP: on a cluster that does not serve the Trainer CRDs it lists the v1
jobs as before (no error); once they are installed, the TrainJobs follow in their own table,
and ``-o json`` returns one List holding both generations. ``get KIND`` stays one kind.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from kubernetes import client, config

from tests.integration.controller.cluster import RunningServer, start_cluster_server
from tests.integration.controller.test_trainjob_controller import g1_runtime, trainjob
from tests.unit.api.builders import manifest
from trainop.api.trainer import constants as c
from trainop.cli.main import main
from trainop.kube.http import HttpClient
from trainop.local.session import install_crds


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    yield from start_cluster_server(tmp_path_factory.mktemp("get"))  # the v1 CRDs only


def trainop(server: RunningServer, *args: str) -> Result:
    return CliRunner().invoke(main, [*args, "--kubeconfig", str(server.kubeconfig)])


def tables(result: Result) -> list[list[dict[str, str]]]:
    """The printed tables: each row by column header, without Age (it changes as the test
    runs); a line starting with Kind or Name begins a table."""
    assert result.exit_code == 0, result.output
    found: list[list[dict[str, str]]] = []
    header: list[str] = []
    for words in (line.split() for line in result.output.splitlines() if line.strip()):
        if words[0] in ("Kind", "Name"):
            header = words
            found.append([])
        else:
            found[-1].append({h: w for h, w in zip(header, words, strict=True) if h != "Age"})
    return found


async def _install_trainer_crds(kubeconfig: Path) -> None:
    http = HttpClient.from_kubeconfig(path=str(kubeconfig))
    try:
        await install_crds(http)
    finally:
        await http.close()


def test_get_lists_both_generations(server: RunningServer) -> None:
    api = config.new_client_from_config(config_file=str(server.kubeconfig))
    custom = client.CustomObjectsApi(api)
    namespace = f"get-{uuid.uuid4().hex[:8]}"
    client.CoreV1Api(api).create_namespace({"metadata": {"name": namespace}})
    pytorch = manifest("PyTorchJob", name="torch")
    pytorch["metadata"]["namespace"] = namespace
    custom.create_namespaced_custom_object("kubeflow.org", "v1", namespace, "pytorchjobs", pytorch)

    torch = {"Kind": "PyTorchJob", "Name": "torch", "State": "Pending", "Replicas": "0/3"}
    assert tables(trainop(server, "get", "-n", namespace)) == [[torch]]

    asyncio.run(_install_trainer_crds(server.kubeconfig))
    plural = c.PLURALS
    custom.create_namespaced_custom_object(c.GROUP, c.VERSION, namespace,
                                           plural[c.TRAINING_RUNTIME], g1_runtime())  # fmt: skip
    custom.create_namespaced_custom_object(c.GROUP, c.VERSION, namespace, plural[c.TRAINJOB],
                                           trainjob("tj", suspend=True))  # fmt: skip

    tj = {"Name": "tj", "State": "Pending", "Runtime": "TrainingRuntime/alpha"}
    assert tables(trainop(server, "get", "-n", namespace)) == [[torch], [tj]]

    as_json = trainop(server, "get", "-n", namespace, "-o", "json")
    assert as_json.exit_code == 0, as_json.output
    items = json.loads(as_json.output)["items"]
    assert [(i["kind"], i["metadata"]["name"]) for i in items] == [
        ("PyTorchJob", "torch"),
        (c.TRAINJOB, "tj"),
    ]
    only_v1 = trainop(server, "get", "pytorchjob", "-n", namespace)
    assert tables(only_v1) == [[{k: v for k, v in torch.items() if k != "Kind"}]]
    api.close()
