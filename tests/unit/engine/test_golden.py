"""Golden files: the objects the engine creates for each framework's canonical job.

For every canonical manifest (support.CANONICAL plus an elastic PyTorchJob) the created bodies
of the plans that start it (the first plan; for a kind with phases, also the plans after each
phase's pods succeeded: ``support.start``) (pods with env, labels and owner references;
Services; extra objects) must equal ``golden/<name>.yaml``. Regenerate with ``UPDATE_GOLDEN=1
pytest tests/unit/engine`` and review the diff against docs/upstream spec sections 4.4-4.6 and
7.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from support import CANONICAL, ELASTIC_PYTORCH, start

from trainop.api.types import Job
from trainop.engine.actions import Create
from trainop.engine.plan import EngineOptions

GOLDEN = Path(__file__).parent / "golden"
CASES: dict[str, Job] = {kind.lower(): job for kind, job in CANONICAL.items()}
CASES["pytorchjob-elastic"] = ELASTIC_PYTORCH


def _created(job: Job) -> list[dict[str, object]]:
    plans = start(job, EngineOptions())[2]
    return [a.body for plan in plans for a in plan.actions if isinstance(a, Create)]


@pytest.mark.parametrize("case", sorted(CASES))
def test_created_objects_match_golden_file(case: str) -> None:
    path = GOLDEN / f"{case}.yaml"
    actual = _created(CASES[case])
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(yaml.safe_dump_all(actual, sort_keys=False, width=1000))
    expected = list(yaml.safe_load_all(path.read_text()))
    assert actual == expected
