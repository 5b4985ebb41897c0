"""Examples converted and planned: the v1 manifests of ``examples/``, their conversion, and the
JobSet B's planner (``engine.trainer.plan``) makes of the converted TrainJob and runtime."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from trainop.api import manifest
from trainop.engine.convert import Conversion, convert
from trainop.engine.trainer.plan import Observed, plan

ROOT = Path(__file__).resolve().parents[4]
# examples/trainjob/ holds Trainer v2 manifests (tests/unit/api/trainer/test_trainjob_examples.py)
EXAMPLES = sorted(p for p in (ROOT / "examples").glob("*/*.yaml") if p.parent.name != "trainjob")
Wire = dict[str, Any]


def documents(path: Path) -> list[Wire]:
    return manifest.parse_documents(path.read_text(encoding="utf-8"), source=str(path))


def example_jobs() -> list[tuple[str, Wire]]:
    """(``dir/file.yaml#n``, manifest) for every job of every example."""
    return [
        (f"{path.parent.name}/{path.name}#{n}", doc)
        for path in EXAMPLES
        for n, doc in enumerate(documents(path))
    ]


def planned(conversion: Conversion) -> list[Wire]:
    """The objects the planner applies for the converted TrainJob on its first pass."""
    trainjob = dict(conversion.trainjob)
    trainjob["metadata"] = {"namespace": "default", "uid": "uid-1", **trainjob["metadata"]}
    result = plan(
        trainjob,
        conversion.runtime,
        observed=Observed(),
        now=datetime(2026, 11, 27, tzinfo=UTC),
        new_ssh_keys=lambda: ("-----BEGIN EC PRIVATE KEY-----\n", "ecdsa-sha2-nistp521 AAAA\n"),
    )
    assert result.error is None, result.error
    return result.apply


def planned_jobset(job: Wire) -> tuple[Conversion, Wire, list[Wire]]:
    conversion = convert(job)
    objects = planned(conversion)
    jobsets = [o for o in objects if o["kind"] == "JobSet"]
    assert len(jobsets) == 1
    return conversion, jobsets[0], objects


def replicas(job: Wire) -> dict[str, int]:
    """Replica counts by type as the manifest says (absent: 1), types with none left out."""
    spec = job["spec"]
    field = next(k for k in spec if k.endswith("ReplicaSpecs"))
    counts = {rt: s.get("replicas", 1) for rt, s in spec[field].items()}
    return {rt: n for rt, n in counts.items() if n > 0}
