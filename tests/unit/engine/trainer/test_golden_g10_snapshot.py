"""Golden case G10 of the Trainer v2 spec §8 (runtime snapshot), and the snapshot read-back
errors of §2.3 with upstream's messages."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from tests.unit.engine.trainer.builders import (
    UID,
    applied,
    container,
    job,
    owner,
    run,
    runtime,
    trainjob,
)

from trainop.engine.trainer import snapshot
from trainop.engine.trainer.plan import Observed
from trainop.engine.trainer.snapshot import SnapshotError, runtime_from_snapshot


def _runtime(marker: str, kind: str = "TrainingRuntime") -> dict[str, Any]:
    jobs = [job("node", "trainer", container("node", image="img"))]
    return runtime(
        "alpha",
        jobs,
        kind=kind,
        ml_policy={"torch": {}},
        template_labels={"snapshot-test-marker": marker},
    )


@pytest.mark.parametrize("kind", ["TrainingRuntime", "ClusterTrainingRuntime"])
def test_g10_snapshot_is_owned_and_holds_the_runtime(kind: str) -> None:
    result = run(trainjob("alpha", "alpha", kind=kind, suspend=True), _runtime("snapshot-v1", kind))
    snap = next(o for o in result.apply if o["metadata"]["name"] == "alpha-runtime-snapshot")
    assert snap["kind"] == "ConfigMap"
    assert snap["metadata"]["ownerReferences"] == [owner()]
    assert "labels" not in snap["metadata"]
    assert f"kind: {kind}" in snap["data"]["runtime"]
    assert "name: alpha" in snap["data"]["runtime"]
    assert result.apply[0] is snap


def test_g10_runtime_edits_do_not_reach_a_trainjob_with_a_snapshot() -> None:
    tj = trainjob("alpha", "alpha", suspend=True)
    first = run(tj, _runtime("snapshot-v1"))
    snap = first.apply[0]
    jobset = applied(first, "JobSet")
    assert jobset["metadata"]["labels"] == {"snapshot-test-marker": "snapshot-v1"}
    live = _runtime(
        "snapshot-v2"
    )  # edited after the first pass: the controller plans from the snapshot
    resumed = copy.deepcopy(tj)
    resumed["spec"]["suspend"] = False
    resumed["status"] = first.status
    from_snapshot = runtime_from_snapshot(resumed, snap)
    assert from_snapshot != live
    second = run(resumed, from_snapshot, Observed(jobset=jobset, snapshot=snap))
    again = applied(second, "JobSet")
    assert again["spec"]["suspend"] is False
    assert again["metadata"]["labels"] == {"snapshot-test-marker": "snapshot-v1"}
    assert [o for o in second.apply if o["metadata"]["name"] == "alpha-runtime-snapshot"] == []


def test_g10_a_deleted_snapshot_is_recreated() -> None:
    tj = trainjob("alpha", "alpha")
    first = run(tj, _runtime("snapshot-v1"))
    later = run(
        tj, _runtime("snapshot-v1"), Observed(jobset=applied(first, "JobSet"), snapshot=None)
    )
    assert [o["metadata"]["name"] for o in later.apply] == ["alpha-runtime-snapshot"]


def _snapshot(**changes: Any) -> dict[str, Any]:
    snap = snapshot.config_map(trainjob("alpha", "alpha"), _runtime("v1"))
    snap.update(changes)
    return snap


def _error(tj: dict[str, Any], snap: dict[str, Any]) -> str:
    with pytest.raises(SnapshotError) as caught:
        runtime_from_snapshot(tj, snap)
    return str(caught.value)


def test_snapshot_owned_by_another_object() -> None:
    snap = _snapshot()
    snap["metadata"]["ownerReferences"][0]["uid"] = "other"
    assert _error(trainjob("alpha", "alpha"), snap) == (
        "invalid runtime snapshot: a snapshot configmap exists but is owned by another object"
    )
    assert UID != "other"


def test_snapshot_without_its_data_key() -> None:
    assert _error(trainjob("alpha", "alpha"), _snapshot(data={})) == (
        'invalid runtime snapshot: snapshot ConfigMap missing "runtime" data key'
    )


def test_snapshot_that_is_not_yaml() -> None:
    message = _error(trainjob("alpha", "alpha"), _snapshot(data={"runtime": "a: [b"}))
    assert message.startswith("invalid runtime snapshot: unable to unmarshal the snapshot: ")


def test_snapshot_of_another_runtime() -> None:
    other = snapshot.config_map(
        trainjob("alpha", "alpha"), _runtime("v1", "ClusterTrainingRuntime")
    )
    assert _error(trainjob("alpha", "alpha"), other) == (
        "invalid runtime snapshot: the snapshot refers to the wrong runtime: expecting a runtime "
        'with name, api group and kind of "alpha", "trainer.kubeflow.org", "TrainingRuntime" but '
        'found runtime with name, api group and kind of "alpha", "trainer.kubeflow.org", '
        '"ClusterTrainingRuntime"'
    )


def test_snapshot_round_trip_keeps_the_whole_runtime() -> None:
    rt = _runtime("v1")
    assert runtime_from_snapshot(trainjob("alpha", "alpha"), _snapshot()) == rt
    assert yaml.safe_load(_snapshot()["data"]["runtime"]) == rt
