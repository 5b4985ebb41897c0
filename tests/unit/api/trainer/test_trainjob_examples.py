"""Every ``examples/trainjob/`` manifest is accepted as the embedded API server would accept it
(schema, API rules, webhooks), its TrainJob judged against its own runtime or the shipped one it
names."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from trainop.api.trainer import constants as c
from trainop.cluster.apiserver.admission import trainer, verdict
from trainop.local import trainer_runtimes

ROOT = Path(__file__).resolve().parents[4]
EXAMPLES = sorted((ROOT / "examples" / "trainjob").glob("*.yaml"))
SHIPPED = trainer_runtimes.documents()


def test_there_are_trainjob_examples() -> None:
    assert {p.stem for p in EXAMPLES} >= {"torch-ddp", "xgboost", "jax", "mpi", "initializers"}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_trainjob_example_is_admitted(path: Path) -> None:
    documents = [d for d in yaml.safe_load_all(path.read_text()) if d]
    assert [d["kind"] for d in documents].count(c.TRAINJOB) == 1
    runtimes = [d for d in documents if d["kind"] != c.TRAINJOB] + SHIPPED
    for document in documents:
        outcome = trainer.judge_manifest(
            document, field_validation=verdict.STRICT, runtimes=runtimes
        )
        assert outcome.ok, (path.name, outcome.errors, outcome.unknown_fields)
        assert not [w for w in outcome.warnings if "not checked" in w], outcome.warnings
