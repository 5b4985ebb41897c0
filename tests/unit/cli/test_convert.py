"""``trainop convert JOB.yaml``: two YAML documents per job (the TrainJob, then its runtime),
the dropped fields as comments and on stderr, and ``trainop validate``'s exit codes: 2 with the
same field errors for an invalid job, 1 for a file that cannot be read."""

from __future__ import annotations

from pathlib import Path

import yaml
from click.testing import CliRunner

from tests.unit.engine.convert.support import ROOT
from trainop.cli.convert import convert

PI = ROOT / "examples" / "mpi" / "v2beta1-pi.yaml"


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(convert, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_prints_the_trainjob_and_its_runtime_with_the_dropped_fields() -> None:
    code, out, err = _run(str(PI))
    assert code == 0
    trainjob, runtime = yaml.safe_load_all(out)
    assert (trainjob["kind"], runtime["kind"]) == ("TrainJob", "TrainingRuntime")
    assert trainjob["spec"]["runtimeRef"]["name"] == runtime["metadata"]["name"] == "pi"
    comments = [line for line in out.splitlines() if line.startswith("# - ")]
    dropped = [line.split(": dropped: ", 1)[1] for line in err.splitlines()]
    assert [c.removeprefix("# - ") for c in comments] == dropped
    paths = [line.split(":", 1)[0] for line in dropped]
    assert "spec.runPolicy.ttlSecondsAfterFinished" in paths
    assert "spec.runPolicy.cleanPodPolicy" in paths
    assert all(line.startswith(f"{PI}: MPIJob/pi: dropped: ") for line in err.splitlines())


def test_every_job_of_a_file_is_converted(tmp_path: Path) -> None:
    two = tmp_path / "two.yaml"
    simple = (ROOT / "examples" / "pytorch" / "simple.yaml").read_text()
    two.write_text(simple + "\n---\n" + simple.replace("name: pytorch-simple", "name: other"))
    code, out, _ = _run(str(two))
    assert code == 0
    kinds = [(d["kind"], d["metadata"]["name"]) for d in yaml.safe_load_all(out)]
    assert kinds == [
        ("TrainJob", "pytorch-simple"),
        ("TrainingRuntime", "pytorch-simple"),
        ("TrainJob", "other"),
        ("TrainingRuntime", "other"),
    ]


def test_an_invalid_job_exits_2_with_validates_field_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    text = (ROOT / "examples" / "pytorch" / "simple.yaml").read_text()
    bad.write_text(
        text.replace("replicas: 1\n      restartPolicy", "replicas: 2\n      restartPolicy", 1)
    )
    code, out, err = _run(str(bad))
    assert (code, out) == (2, "")
    assert err.startswith(f"{bad}: spec.pytorchReplicaSpecs[Master].replicas: ")


def test_not_yaml_exits_2_and_an_unreadable_file_exits_1(tmp_path: Path) -> None:
    text = tmp_path / "text.yaml"
    text.write_text("a: b: c\n")
    assert _run(str(text))[0] == 2
    assert _run(str(tmp_path / "missing.yaml"))[0] == 1
