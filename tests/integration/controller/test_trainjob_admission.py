"""Trainer v2's webhooks in the embedded API server's admission chain (spec 6.1, G12), through
the official ``kubernetes`` client: webhook denials are 403 with kube-apiserver's message, the
API server's own rules 422, the defaulter stamps runtimePatches times, runtimes are validated.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, config

from tests.integration.cluster.apiserver.conftest import RunningServer
from tests.integration.controller.test_trainjob_controller import (
    g1_runtime,
    runtime,
    server,  # noqa: F401 - the module's server fixture
    trainjob,
)
from trainop.api.trainer import constants as c

TRAINJOBS, RUNTIMES = c.PLURALS[c.TRAINJOB], c.PLURALS[c.TRAINING_RUNTIME]


class Api:
    def __init__(self, running: RunningServer) -> None:
        self.api = config.new_client_from_config(config_file=str(running.kubeconfig))
        self.custom = client.CustomObjectsApi(self.api)
        self.namespace = f"adm-{uuid.uuid4().hex[:8]}"
        client.CoreV1Api(self.api).create_namespace({"metadata": {"name": self.namespace}})

    def create(self, plural: str, body: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = self.custom.create_namespaced_custom_object(
            c.GROUP, c.VERSION, self.namespace, plural, body
        )
        return out

    def refused(self, plural: str, body: dict[str, Any]) -> client.ApiException:
        with pytest.raises(client.ApiException) as caught:
            self.create(plural, body)
        return caught.value


@pytest.fixture
def api(server: RunningServer) -> Iterator[Api]:  # noqa: F811 - the imported fixture
    made = Api(server)
    yield made
    made.api.close()


def test_a_trainjob_whose_runtime_is_missing_is_denied_by_the_webhook(api: Api) -> None:
    error = api.refused(TRAINJOBS, trainjob("alpha", "nowhere"))
    assert error.status == 403
    message = json.loads(error.body)["message"]
    assert message.startswith(
        'admission webhook "validator.trainjob.trainer.kubeflow.org" denied the request: '
        "spec.runtimeRef: Invalid value: "
    )
    assert message.endswith(
        "specified trainingRuntime must be created before the TrainJob is created"
    )


def test_reserved_torch_env_is_denied_and_a_bad_name_is_invalid(api: Api) -> None:
    api.create(RUNTIMES, runtime("torch", jobs=g1_runtime()["spec"]["template"]["spec"][
        "replicatedJobs"], mlPolicy={"numNodes": 1, "torch": {}}))  # fmt: skip
    env = [{"name": "PET_NODE_RANK", "value": "1"}]
    assert api.refused(TRAINJOBS, trainjob("pet", "torch", trainer={"env": env})).status == 403
    assert api.refused(TRAINJOBS, trainjob("Invalid-job-name", "torch")).status == 422


def test_the_defaulter_stamps_runtime_patch_times(api: Api) -> None:
    api.create(RUNTIMES, g1_runtime())
    patches = [{"manager": "test.io/manager", "time": "2025-01-01T00:00:00Z"},
               {"manager": "test.io/other"}]  # fmt: skip
    created = api.create(TRAINJOBS, trainjob("alpha", suspend=True, runtimePatches=patches))
    first, second = created["spec"]["runtimePatches"]
    assert first["time"] == "2025-01-01T00:00:00Z"
    assert second["time"], "stamped with the server's clock"


def test_a_runtime_without_the_ancestors_container_is_denied(api: Api) -> None:
    broken = g1_runtime()
    node = broken["spec"]["template"]["spec"]["replicatedJobs"][2]
    node["template"]["spec"]["template"]["spec"]["containers"][0]["name"] = "not-node"
    error = api.refused(RUNTIMES, broken)
    assert error.status == 403
    message = json.loads(error.body)["message"]
    assert "must contain the required container for the ancestor: trainer" in message
