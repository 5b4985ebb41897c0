"""``trainop submit|get|describe|wait|logs|delete trainjob`` and ``trainop validate`` of
Trainer v2's kinds, against the embedded API server and the operator's manager (``--enable-scheme
trainjob``), as a user types them. The test writes JobSet status (no JobSet controller yet).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from tests.integration.cluster.apiserver.conftest import RunningServer
from tests.integration.controller.test_trainjob_controller import (
    DEADLINE,
    Kube,
    Operator,
    g1_runtime,
    g1_trainjob,
    server,  # noqa: F401 - the module's server fixture
    trainjob,
)
from tests.polling import wait_for
from trainop.api.trainer import constants as c
from trainop.cli.main import main
from trainop.kube.podlogs import LogRef


@pytest.fixture
def kube(server: RunningServer) -> Iterator[Kube]:  # noqa: F811 - the imported fixture
    made = Kube(server)
    yield made
    made.api.close()


@pytest.fixture
def operator(server: RunningServer, kube: Kube) -> Iterator[Operator]:  # noqa: F811
    running = Operator(server, kube.namespace)
    running.start()
    yield running
    running.stop()


def trainop(server: RunningServer, *args: str) -> Result:  # noqa: F811
    return CliRunner().invoke(main, [*args, "--kubeconfig", str(server.kubeconfig)])


def test_submit_get_describe_wait_delete(
    server: RunningServer,  # noqa: F811
    kube: Kube,
    operator: Operator,
    tmp_path: Path,
) -> None:
    manifest = tmp_path / "job.yaml"
    manifest.write_text(yaml.safe_dump_all([g1_runtime(), g1_trainjob()]))
    submitted = trainop(server, "submit", "-f", str(manifest), "-n", kube.namespace)
    assert submitted.exit_code == 0, submitted.output
    assert submitted.output.splitlines() == [
        "trainingruntime/alpha created",
        "trainjob/alpha created",
    ]
    kube.until_jobset("alpha", suspend=True)
    kube.until_conditions("alpha", [("Suspended", "True", "Suspended", "TrainJob is suspended")])

    listed = trainop(server, "get", "trainjob", "-n", kube.namespace)
    assert listed.exit_code == 0, listed.output
    [row] = [line.split() for line in listed.output.splitlines() if line.startswith("alpha")]
    assert (row[1], row[3]) == ("Suspended", "TrainingRuntime/alpha")

    described = trainop(server, "describe", "trainjob", "alpha", "-n", kube.namespace)
    assert described.exit_code == 0, described.output
    text = described.output
    assert "TrainingRuntime/alpha (pinned by its snapshot; the live runtime exists)" in text
    assert "alpha (suspended" in text
    assert "suspended (spec.suspend: true): nothing runs until it is resumed" in text

    done = {"type": "Completed", "status": "True", "reason": "AllJobsCompleted",
            "message": "jobset completed successfully",
            "lastTransitionTime": "2026-01-01T00:00:00Z"}  # fmt: skip
    kube.write_jobset_status("alpha", {"conditions": [done]})
    waited = trainop(server, "wait", "trainjob", "alpha", "--timeout", "30", "-n", kube.namespace)
    assert waited.exit_code == 0, waited.output
    assert waited.output.strip() == "trainjob/alpha Complete"

    deleted = trainop(server, "delete", "trainjob", "alpha", "-n", kube.namespace)
    assert deleted.exit_code == 0, deleted.output
    assert deleted.output.strip() == "trainjob/alpha deleted"

    def gone() -> bool:
        listed = trainop(server, "get", "trainjob", "-n", kube.namespace)
        return "No TrainJobs found." in listed.output

    wait_for(gone, timeout=DEADLINE, what="the TrainJob deleted")


def test_describe_says_why_a_trainjob_failed_and_wait_exits_1(
    server: RunningServer,  # noqa: F811
    kube: Kube,
) -> None:
    # Created while no operator runs: describe says there is no JobSet and why that may be.
    kube.create("trainingruntimes", g1_runtime())
    kube.create("trainjobs", trainjob("beta"))
    described = trainop(server, "describe", "trainjob", "beta", "-n", kube.namespace)
    assert "no JobSet yet: is an operator running TrainJobs" in described.output
    # Its runtime is deleted, then an operator runs: Failed, and describe says why.
    kube.custom.delete_namespaced_custom_object(
        "trainer.kubeflow.org", "v1alpha1", kube.namespace, "trainingruntimes", "alpha"
    )
    running = Operator(server, kube.namespace)
    running.start()
    try:
        waited = trainop(server, "wait", "trainjob", "beta", "--timeout", "30",
                         "-n", kube.namespace)  # fmt: skip
    finally:
        running.stop()
    assert waited.exit_code == 1, waited.output
    assert "TrainingRuntime specified in TrainJob is not found" in waited.output
    described = trainop(server, "describe", "trainjob", "beta", "-n", kube.namespace)
    assert "Failed (TrainingRuntimeNotSupported)" in described.output
    assert "the live runtime does not exist (any more)" in described.output


def test_validate_judges_the_three_kinds(tmp_path: Path) -> None:
    bad = g1_trainjob("pet")
    bad["spec"]["trainer"]["bogus"] = 1
    alone = trainjob("alone", "elsewhere")
    manifest = tmp_path / "v2.yaml"
    manifest.write_text(yaml.safe_dump_all([g1_runtime(), g1_trainjob(), bad, alone]))
    result = CliRunner().invoke(main, ["validate", "-f", str(manifest)])
    assert result.exit_code == 2, result.output
    lines = result.output.splitlines()
    assert "OK TrainingRuntime/alpha" in lines
    assert "OK TrainJob/alpha" in lines
    assert any(line.endswith('unknown field "spec.trainer.bogus" (--field-validation Strict)')
               for line in lines)  # fmt: skip
    assert "OK TrainJob/alone" in lines
    assert any("'elsewhere' is not in the file" in line for line in lines)


def test_logs_of_the_jobsets_pods_with_their_steps(
    server: RunningServer,  # noqa: F811
    kube: Kube,
) -> None:
    # The pods a JobSet controller would make for TrainJob "alpha" (none runs here).
    for step in ("node-0-0", "node-0-1", "dataset-initializer-0-0"):
        job = step.rsplit("-", 2)[0]
        labels = {c.JOBSET_NAME_LABEL: "alpha", c.JOBSET_REPLICATED_JOB_LABEL: job}
        container = {"name": c.NODE if job == c.NODE else job, "image": "img"}
        pod = {"metadata": {"name": f"alpha-{step}", "labels": labels},
               "spec": {"containers": [container]}}  # fmt: skip
        kube.core.create_namespaced_pod(kube.namespace, pod)
    for step in ("node-0-0", "node-0-1"):
        ref = LogRef(namespace=kube.namespace, pod=f"alpha-{step}", container=c.NODE)
        server.call(lambda r=ref, s=step: (server.logs.write(r, f"hello from {s}"),
                                           server.logs.close(r)))  # fmt: skip
    shown = trainop(server, "logs", "trainjob", "alpha", "--replica", "node", "-f",
                    "-n", kube.namespace)  # fmt: skip
    assert shown.exit_code == 0, shown.output
    assert sorted(shown.output.splitlines()) == [
        "[node-0-0] hello from node-0-0",
        "[node-0-1] hello from node-0-1",
    ]
    one = trainop(server, "logs", "trainjob", "alpha", "--replica", "node-0-1",
                  "-n", kube.namespace)  # fmt: skip
    assert one.output.splitlines() == ["[node-0-1] hello from node-0-1"]
