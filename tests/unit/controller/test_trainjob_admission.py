"""Trainer v2's admission webhooks: the defaulter (spec 8, G12 ``TestDefault``), the paths, and
the operator's webhook server answering them over HTTPS."""

from __future__ import annotations

import asyncio
import base64
import json
from datetime import UTC, datetime
from pathlib import Path

import aiohttp

from tests.unit.controller.webhook_support import settings, trusting
from trainop.controller import trainjob_admission
from trainop.controller.webhook import WebhookServer

NOW = datetime(2025, 6, 15, 12, 0, tzinfo=UTC)
OLD = "2025-01-01T00:00:00Z"
STAMP = "2025-06-15T12:00:00Z"


def with_patches(*patches: dict[str, object]) -> dict[str, object]:
    return {"spec": {"runtimePatches": [dict(p) for p in patches]}}


def times(obj: dict[str, object]) -> list[object]:
    spec = obj["spec"]
    assert isinstance(spec, dict)
    return [p.get("time") for p in spec["runtimePatches"]]


def test_defaulter_on_create() -> None:
    assert times(trainjob_admission.patch_times(with_patches({"manager": "a"}), None, NOW)) == [
        STAMP
    ]
    made = with_patches({"manager": "one", "time": OLD}, {"manager": "two"})
    assert times(trainjob_admission.patch_times(made, None, NOW)) == [OLD, STAMP]


def test_defaulter_on_update() -> None:
    old = with_patches({"manager": "one", "time": OLD, "trainingRuntimeSpec": {"x": 1}})
    same = with_patches({"manager": "one", "trainingRuntimeSpec": {"x": 1}})
    assert times(trainjob_admission.patch_times(same, old, NOW)) == [OLD]
    changed = with_patches({"manager": "one", "trainingRuntimeSpec": {"x": 2}})
    assert times(trainjob_admission.patch_times(changed, old, NOW)) == [STAMP]
    added = with_patches({"manager": "one", "trainingRuntimeSpec": {"x": 1}}, {"manager": "new"})
    assert times(trainjob_admission.patch_times(added, old, NOW)) == [OLD, STAMP]
    given = with_patches(
        {"manager": "one", "trainingRuntimeSpec": {"x": 1}}, {"manager": "new", "time": OLD}
    )
    assert times(trainjob_admission.patch_times(given, old, NOW)) == [OLD, OLD]


def test_the_webhook_paths_are_upstreams() -> None:
    assert trainjob_admission.paths() == (
        "/mutate-trainer-kubeflow-org-v1alpha1-trainjob",
        "/validate-trainer-kubeflow-org-v1alpha1-trainjob",
        "/validate-trainer-kubeflow-org-v1alpha1-trainingruntime",
        "/validate-trainer-kubeflow-org-v1alpha1-clustertrainingruntime",
    )


# --- the operator's webhook server serves the four paths (HTTPS) -------------------------------

RUNTIME = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "TrainingRuntime",
    "metadata": {"name": "torch", "namespace": "default"},
    "spec": {
        "mlPolicy": {"numNodes": 1, "torch": {}},
        "template": {"spec": {"replicatedJobs": [{"name": "node", "template": {
            "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
            "spec": {"template": {"spec": {"containers": [{"name": "node"}]}}}}}]}},
    },
}  # fmt: skip


def review(obj: dict[str, object], operation: str = "CREATE") -> dict[str, object]:
    request = {"uid": "u-1", "operation": operation, "object": obj}
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def trainjob(name: str, **trainer: object) -> dict[str, object]:
    spec: dict[str, object] = {"runtimeRef": {"name": "torch", "kind": "TrainingRuntime"}}
    if trainer:
        spec["trainer"] = trainer
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": name, "namespace": "default"}, "spec": spec}  # fmt: skip


def test_the_operators_webhook_serves_trainers_paths(tmp_path: Path) -> None:
    async def lookup(kind: str, namespace: str, name: str) -> dict[str, object] | None:
        return (
            RUNTIME if (kind, namespace, name) == ("TrainingRuntime", "default", "torch") else None
        )

    async def main() -> None:
        server = WebhookServer(settings=settings(tmp_path), trainer=lookup)
        await server.start()
        assert set(trainjob_admission.paths()) <= set(server.paths)
        connector = aiohttp.TCPConnector(ssl=trusting(server.ca_cert))
        base = f"https://127.0.0.1:{server.port}"
        try:
            async with aiohttp.ClientSession(connector=connector) as session:

                async def post(path: str, body: dict[str, object]) -> dict[str, object]:
                    async with session.post(base + path, json=body) as response:
                        assert response.status == 200
                        answer: dict[str, object] = (await response.json())["response"]
                        return answer

                validate = trainjob_admission.VALIDATE_PATHS["TrainJob"]
                assert (await post(validate, review(trainjob("ok"))))["allowed"] is True
                env = [{"name": "PET_NODE_RANK", "value": "1"}]
                denied = await post(validate, review(trainjob("pet", env=env)))
                assert denied["allowed"] is False
                status = denied["status"]
                assert isinstance(status, dict)
                assert status["code"] == 403
                assert "must not have reserved envs" in status["message"]
                job = trainjob("patched")
                spec = job["spec"]
                assert isinstance(spec, dict)
                spec["runtimePatches"] = [{"manager": "x.io/m"}]
                mutated = await post(trainjob_admission.MUTATE_TRAINJOB, review(job))
                assert mutated["patchType"] == "JSONPatch"
                [op] = json.loads(base64.b64decode(str(mutated["patch"])))
                assert op["path"] == "/spec/runtimePatches"
                assert op["value"][0]["time"]
        finally:
            await server.stop()

    asyncio.run(main())
