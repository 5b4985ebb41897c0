"""The operator's start-up injects its CA into Trainer v2's webhook configurations too.

``run_operator`` against a FakeClient holding the shipped configurations (the v1 one of
``manifests/base``, Trainer's generated ``manifests/trainer/webhooks``): with TrainJobs enabled
every webhook of all three gets the CA stored in the certificate Secret, the mutating one
included; without, Trainer's are left as shipped; a missing Trainer configuration does not stop
the operator or the v1 injection.
"""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path
from typing import Any

import yaml

from tests.polling import until
from trainop.api.trainer import constants as c
from trainop.controller import webhook_configurations
from trainop.controller.manager import ManagerOptions
from trainop.controller.operator import OperatorConfig, run_operator
from trainop.controller.webhook import WebhookSettings
from trainop.controller.webhook_configurations import MUTATING, VALIDATING
from trainop.kube.clock import FakeClock
from trainop.kube.fake import FakeClient
from trainop.kube.resources import SECRETS, Resource

ROOT = Path(__file__).resolve().parents[3]
SHIPPED = {
    (VALIDATING, "validator.training-operator.kubeflow.org"):
        ROOT / "manifests/base/validating-webhook-configuration.yaml",
    (MUTATING, "defaulter.trainer.kubeflow.org"):
        ROOT / "manifests/trainer/webhooks/mutating-webhook-configuration.yaml",
    (VALIDATING, "validator.trainer.kubeflow.org"):
        ROOT / "manifests/trainer/webhooks/validating-webhook-configuration.yaml",
}  # fmt: skip
V1 = (VALIDATING, "validator.training-operator.kubeflow.org")
NAMESPACE, SECRET = "kubeflow", "training-operator-webhook-cert"


def config(tmp_path: Path, *kinds: str) -> OperatorConfig:
    webhook = WebhookSettings(host="127.0.0.1", port=0, cert_dir=tmp_path, reload_interval=0)
    return OperatorConfig(
        manager=ManagerOptions(kinds=kinds),
        metrics_address="0",
        health_address="0",
        webhook=webhook,
        webhook_secret_name=SECRET,
    )


async def bundles(client: FakeClient, resource: Resource, name: str) -> list[Any]:
    found = await client.get(resource, name=name)
    return [w.get("clientConfig", {}).get("caBundle") for w in found["webhooks"]]


def run(
    operator: OperatorConfig, shipped: list[tuple[Resource, str]]
) -> dict[tuple[Resource, str], list[Any]]:
    """Start the operator with ``shipped`` configurations; once the v1 one holds a CA (the last
    one injected is awaited too), every configuration's caBundles, and the Secret's CA."""

    async def main() -> dict[tuple[Resource, str], list[Any]]:
        client = FakeClient()
        for resource, name in shipped:
            [body] = [d for d in yaml.safe_load_all(SHIPPED[(resource, name)].read_text()) if d]
            await client.create(resource, body)
        task = asyncio.create_task(run_operator(operator, client=client, clock=FakeClock()))
        targets = webhook_configurations.injected(trainjobs=operator.manager.trainjobs)
        last = targets[-1]
        reads = sum(1 for target in targets if target.resource == last.resource)

        async def injected() -> bool:
            if task.done():
                task.result()  # the operator failed: show why
            if (last.resource, last.name) not in shipped:  # tried: read like the others
                return client.calls.count(("get", last.resource.plural)) >= reads
            return all(await bundles(client, last.resource, last.name))

        try:
            await until(injected, timeout=20, interval=0.01)
            found = {key: await bundles(client, *key) for key in shipped}
            secret = await client.get(SECRETS, name=SECRET, namespace=NAMESPACE)
            found[(SECRETS, SECRET)] = [secret["data"]["ca.crt"]]
            return found
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    return asyncio.run(main())


def test_with_trainjobs_every_webhook_of_the_three_configurations_trusts_the_secrets_ca(
    tmp_path: Path,
) -> None:
    found = run(config(tmp_path, "PyTorchJob", c.TRAINJOB), list(SHIPPED))
    [ca] = found.pop((SECRETS, SECRET))
    assert base64.b64decode(ca).startswith(b"-----BEGIN CERTIFICATE-----")
    assert {key: len(values) for key, values in found.items()} == {
        V1: 8,
        (MUTATING, "defaulter.trainer.kubeflow.org"): 1,
        (VALIDATING, "validator.trainer.kubeflow.org"): 3,
    }
    assert all(value == ca for values in found.values() for value in values)


def test_without_trainjobs_trainers_configurations_are_left_as_shipped(tmp_path: Path) -> None:
    found = run(config(tmp_path), list(SHIPPED))
    [ca] = found.pop((SECRETS, SECRET))
    assert found.pop(V1) == [ca] * 8
    assert found == {
        (MUTATING, "defaulter.trainer.kubeflow.org"): [None],
        (VALIDATING, "validator.trainer.kubeflow.org"): [None, None, None],
    }


def test_a_missing_trainer_configuration_leaves_the_rest_injected(tmp_path: Path) -> None:
    shipped = [V1, (MUTATING, "defaulter.trainer.kubeflow.org")]
    found = run(config(tmp_path, c.TRAINJOB), shipped)
    [ca] = found.pop((SECRETS, SECRET))
    assert found == {V1: [ca] * 8, (MUTATING, "defaulter.trainer.kubeflow.org"): [ca]}
