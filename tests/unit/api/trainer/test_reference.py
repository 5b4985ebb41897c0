"""The Trainer v2 API reference page lists every field of the three kinds, with defaults."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from trainop.api import reference
from trainop.api.trainer import models

ROOT = Path(__file__).resolve().parents[4]


@pytest.fixture(scope="module")
def text() -> str:
    return reference.render_trainer()


def _paths(model: type[BaseModel], prefix: str) -> list[str]:
    found = []
    for name, field in model.model_fields.items():
        found.append(f"{prefix}.{field.alias or name}")
    return found


@pytest.mark.parametrize(
    ("model", "prefix"),
    [
        (models.TrainJobSpec, "spec"),
        (models.Trainer, "spec.trainer"),
        (models.TrainJobStatus, "status"),
        (models.TrainingRuntimeSpec, "spec"),
        (models.MPIMLPolicySource, "spec.mlPolicy.mpi"),
    ],
)
def test_fields_are_listed(text: str, model: type[BaseModel], prefix: str) -> None:
    for path in _paths(model, prefix):
        assert f"| `{path}` |" in text, path


def test_each_kind_has_a_section(text: str) -> None:
    for kind in ("TrainJob", "TrainingRuntime", "ClusterTrainingRuntime"):
        assert f"\n## {kind}\n" in text


def test_defaults_and_types(text: str) -> None:
    assert "| `spec.runtimeRef.kind` | string | `ClusterTrainingRuntime` |" in text
    assert "| `spec.suspend` | boolean | `false` |" in text
    assert "| `spec.activeDeadlineSeconds` | int64 |  |" in text
    assert "| `spec.mlPolicy.mpi.numProcPerNode` | int32 | `1` |" in text
    assert "| `spec.template.spec.replicatedJobs[].replicas` | int32 | `1` |" in text
    assert "#jobtemplatespec-v1-batch" in text


def test_checked_in_page_is_fresh(text: str) -> None:
    assert (ROOT / "docs/api-reference-trainer.md").read_text(encoding="utf-8") == text
