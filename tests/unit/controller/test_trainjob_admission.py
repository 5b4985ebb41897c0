"""Trainer v2's admission webhooks: the defaulter (spec 8, G12 ``TestDefault``) and the paths."""

from __future__ import annotations

from datetime import UTC, datetime

from trainop.controller import trainjob_admission

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
