"""Every example manifest parses, defaults and validates; every kind has at least one."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainop.api import kinds, manifest

ROOT = Path(__file__).resolve().parents[3]
# examples/trainjob/ holds Trainer v2 manifests (tests/unit/api/trainer/test_trainjob_examples.py)
EXAMPLES = sorted(p for p in (ROOT / "examples").glob("*/*.yaml") if p.parent.name != "trainjob")
# Container-only examples (``trainop run --runtime podman``): a container may leave its command
# to the image or, as an MPIJob v2beta1 worker, to the operator (sshd).
CONTAINER_ONLY = {"mpi/v2beta1-ssh-containers.yaml"}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_example_loads(path: Path) -> None:
    documents = manifest.parse_documents(path.read_text(), source=str(path))
    assert documents
    for document in documents:
        job = manifest.load_job(document, source=str(path))
        if f"{path.parent.name}/{path.name}" in CONTAINER_ONLY:
            continue
        for replica in job.spec.replica_specs.values():
            for container in replica.template["spec"]["containers"]:
                assert container.get("command"), f"{path}: every container states its command"


def test_every_kind_has_an_example() -> None:
    covered = {
        document["kind"]
        for path in EXAMPLES
        for document in manifest.parse_documents(path.read_text())
    }
    assert covered == {info.kind for info in kinds.KINDS}
