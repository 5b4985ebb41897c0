"""Manifests in and out: round trips keep unknown fields; bad input gets errors naming the field."""

from __future__ import annotations

import copy
import textwrap
import time
from typing import Any

import pytest

from tests.unit.api.builders import manifest
from trainop.api import manifest as wire
from trainop.api.jobs import PyTorchJob, TFJobSpec
from trainop.errors import InvalidJobError, ManifestError, TrainopError


def test_parse_picks_the_model_of_the_declared_kind() -> None:
    job = wire.parse_job(manifest("PyTorchJob"))
    assert isinstance(job, PyTorchJob)
    assert set(job.spec.replica_specs) == {"Master", "Worker"}


def test_unknown_pod_template_fields_survive_a_round_trip() -> None:
    obj = manifest("TFJob", successPolicy="AllWorkers", enableDynamicWorker=True)
    worker = obj["spec"]["tfReplicaSpecs"]["Worker"]["template"]
    worker["metadata"] = {"creationTimestamp": None, "labels": {"team": "a"}}
    worker["spec"]["topologySpreadConstraints"] = [
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
    ]
    worker["spec"]["aFieldFromTheFuture"] = {"nested": [1, "two", None, {"x": True}]}
    worker["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "500m", "memory": 1024}}
    obj["metadata"]["managedFields"] = [{"manager": "kubectl"}]
    original = copy.deepcopy(obj)
    assert wire.dump_job(wire.parse_job(obj)) == original


def test_status_round_trips_with_kubernetes_time_format() -> None:
    obj = manifest("PyTorchJob")
    obj["status"] = {
        "conditions": [
            {
                "type": "Created",
                "status": "True",
                "reason": "PyTorchJobCreated",
                "message": "PyTorchJob job is created.",
                "lastUpdateTime": "2026-11-21T10:00:00Z",
                "lastTransitionTime": "2026-11-21T10:00:00Z",
            }
        ],
        "replicaStatuses": {"Worker": {"active": 2, "selector": "a=b"}},
        "startTime": "2026-11-21T10:00:01Z",
    }
    assert wire.dump_job(wire.parse_job(obj)) == obj


def test_kind_fields_are_reachable_through_the_generic_spec() -> None:
    job = wire.parse_job(manifest("TFJob", successPolicy="AllWorkers"))
    assert isinstance(job.spec, TFJobSpec)
    assert job.spec.success_policy == "AllWorkers"
    assert job.spec.replica_specs["Chief"].replicas == 1


def test_multi_document_yaml_yields_every_job() -> None:
    text = "---\n" + "\n---\n".join(["apiVersion: kubeflow.org/v1\nkind: JAXJob"] * 2) + "\n---\n"
    assert len(wire.parse_documents(text, source="two.yaml")) == 2


def _with(kind: str, path: list[str | int], value: Any) -> dict[str, Any]:
    obj = manifest(kind)
    target: Any = obj
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return obj


def _without(kind: str, path: list[str]) -> dict[str, Any]:
    obj = manifest(kind)
    target: Any = obj
    for key in path[:-1]:
        target = target[key]
    del target[path[-1]]
    return obj


W = ["spec", "pytorchReplicaSpecs", "Worker"]
C0 = [*W, "template", "spec", "containers", 0]

# (case id, object, substring the error must contain)
INVALID_OBJECTS: list[tuple[str, Any, str]] = [
    ("not a mapping", ["a", "b"], "expected a mapping"),
    ("missing apiVersion", _without("TFJob", ["apiVersion"]), "apiVersion"),
    ("wrong apiVersion", _with("TFJob", ["apiVersion"], "kubeflow.org/v2"), "apiVersion"),
    ("missing kind", _without("TFJob", ["kind"]), "kind: Required value"),
    ("unknown kind", _with("TFJob", ["kind"], "SparkJob"), "kind: Unsupported value"),
    ("wrong-case kind", _with("TFJob", ["kind"], "tfjob"), "did you mean 'TFJob'"),
    ("missing spec", _without("TFJob", ["spec"]), "spec: Required value"),
    ("spec not a mapping", _with("TFJob", ["spec"], "x"), "spec: Invalid value"),
    ("missing replica specs", _without("TFJob", ["spec", "tfReplicaSpecs"]), "spec.tfReplicaSpecs"),
    ("replica specs as a list", _with("TFJob", ["spec", "tfReplicaSpecs"], []), "tfReplicaSpecs"),
    ("replicas as a string", _with("PyTorchJob", [*W, "replicas"], "2"), "[Worker].replicas"),
    ("replicas as a float", _with("PyTorchJob", [*W, "replicas"], 1.5), "[Worker].replicas"),
    ("replicas beyond int32", _with("PyTorchJob", [*W, "replicas"], 2**31), "[Worker].replicas"),
    ("bad restartPolicy", _with("PyTorchJob", [*W, "restartPolicy"], "Sometimes"), "restartPolicy"),
    ("template as a string", _with("PyTorchJob", [*W, "template"], "pod"), "[Worker].template"),
    ("unknown replica field", _with("PyTorchJob", [*W, "replica"], 2), "[Worker].replica: Forb"),
    ("negative replicas", _with("PyTorchJob", [*W, "replicas"], -2), "[Worker].replicas"),
    ("missing image", _without("PyTorchJob", [*C0, "image"]), "containers[0].image"),
    (
        "missing container",
        _with("PyTorchJob", [*W, "template", "spec", "containers"], []),
        "contai",
    ),
    ("container is a string", _with("PyTorchJob", [*C0[:-1]], ["img"]), "containers[0]"),
    ("command is a string", _with("PyTorchJob", [*C0, "command"], "python"), "command"),
    (
        "bad cleanPodPolicy",
        _with("JAXJob", ["spec", "runPolicy"], {"cleanPodPolicy": "Some"}),
        "cle",
    ),
    (
        "typo in runPolicy",
        _with("JAXJob", ["spec", "runPolicy"], {"backofLimit": 1}),
        "backofLimit",
    ),
    ("suspend as a string", _with("JAXJob", ["spec", "runPolicy"], {"suspend": "yes"}), "suspend"),
    (
        "minResources of a bool",
        _with(
            "JAXJob", ["spec", "runPolicy"], {"schedulingPolicy": {"minResources": {"cpu": True}}}
        ),
        "minResources[cpu]",
    ),
    (
        "label value not a string",
        _with("XGBoostJob", ["metadata", "labels"], {"a": 1}),
        "labels[a]",
    ),
    ("name too long for pods", _with("XGBoostJob", ["metadata", "name"], "x" * 60), "Too long"),
    ("name with capitals", _with("XGBoostJob", ["metadata", "name"], "Job"), "metadata.name"),
    ("MX without jobMode", _without("MXJob", ["spec", "jobMode"]), "spec.jobMode: Required value"),
    ("MX with a non-string jobMode", _with("MXJob", ["spec", "jobMode"], 3), "spec.jobMode"),
    (
        "condition without type",
        _with("PaddleJob", ["status"], {"conditions": [{"status": "True"}]}),
        "status.conditions[0].type",
    ),
    ("bad time", _with("PaddleJob", ["status"], {"startTime": "yesterday"}), "status.startTime"),
]


@pytest.mark.parametrize(
    ("obj", "needle"),
    [case[1:] for case in INVALID_OBJECTS],
    ids=[case[0] for case in INVALID_OBJECTS],
)
def test_invalid_manifest_gets_an_error_naming_the_field(obj: Any, needle: str) -> None:
    with pytest.raises(TrainopError) as caught:
        wire.load_job(obj, source="job.yaml")
    assert isinstance(caught.value, InvalidJobError | ManifestError)
    assert needle in str(caught.value)
    assert str(caught.value).startswith("job.yaml: ")


INVALID_TEXTS: list[tuple[str, str, str]] = [
    ("a YAML list", "- a\n- b\n", "document 1 is a list, expected a mapping"),
    ("a YAML scalar", "just words\n", "document 1 is a str"),
    ("broken YAML", "kind: [unclosed\n", "not valid YAML"),
    ("tabs", "kind: TFJob\n\tspec: {}\n", "not valid YAML"),
    ("second document bad", "kind: TFJob\n---\n- x\n", "document 2 is a list"),
]


@pytest.mark.parametrize(
    ("text", "needle"),
    [case[1:] for case in INVALID_TEXTS],
    ids=[case[0] for case in INVALID_TEXTS],
)
def test_bad_yaml_gets_a_manifest_error_naming_the_file(text: str, needle: str) -> None:
    with pytest.raises(ManifestError, match=r"^bad\.yaml: ") as caught:
        wire.parse_documents(text, source="bad.yaml")
    assert needle in str(caught.value)
    assert "\n" not in str(caught.value)


def test_yaml_errors_say_where() -> None:
    with pytest.raises(ManifestError, match=r"\(line 3, column 1\)$"):
        wire.parse_documents("kind: a\nspec: [unclosed\n", source="x.yaml")


def test_the_sweep_is_large_enough() -> None:
    assert len(INVALID_OBJECTS) + len(INVALID_TEXTS) >= 25


def test_field_errors_are_structured_for_webhooks() -> None:
    text = textwrap.dedent(
        """
        apiVersion: kubeflow.org/v1
        kind: PyTorchJob
        metadata: {name: p}
        spec:
          pytorchReplicaSpecs:
            Master: {replicas: 2, template: {spec: {containers: [{name: pytorch, image: i}]}}}
        """
    )
    [obj] = wire.parse_documents(text)
    with pytest.raises(InvalidJobError) as caught:
        wire.load_job(obj)
    [error] = caught.value.errors
    assert (error.path, error.type, error.detail) == (
        "spec.pytorchReplicaSpecs[Master].replicas",
        "Forbidden",
        "must be 1",
    )


# ---- YAML alias bombs ------------------------------------------------------------------------


def alias_bomb(levels: int = 9) -> str:
    """Nine aliases of nine aliases ... of one string: a few hundred bytes, 9^levels nodes."""
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        refs = ",".join([f"*a{i - 1}"] * 9)
        lines.append(f"a{i}: &a{i} [{refs}]")
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_at_once_naming_the_file() -> None:
    started = time.monotonic()
    with pytest.raises(ManifestError) as refused:
        wire.parse_documents(alias_bomb(), source="bomb.yaml")
    assert time.monotonic() - started < 2
    assert str(refused.value).startswith("bomb.yaml: YAML aliases expand the document")
    assert "10000" in str(refused.value)


def test_a_bomb_in_a_later_document_is_refused_too() -> None:
    text = "kind: PyTorchJob\n---\n" + alias_bomb(6)
    with pytest.raises(ManifestError, match="alias"):
        wire.parse_documents(text, source="two.yaml")


def test_ordinary_aliases_are_fine() -> None:
    text = (
        "base: &env [{name: A, value: '1'}, {name: B, value: '2'}]\n"
        "master: {env: *env}\nworker: {env: *env}\n"
    )
    (document,) = wire.parse_documents(text)
    assert document["master"]["env"] == document["worker"]["env"]
    assert wire.parse_documents(alias_bomb(4))  # 9^4 = 6561 nodes by expansion: under the bound


def test_a_large_document_without_aliases_is_never_refused() -> None:
    text = "items:\n" + "".join(f"- {{k: v{i}}}\n" for i in range(5_000))
    (document,) = wire.parse_documents(text)
    assert len(document["items"]) == 5_000


def test_deep_yaml_nesting_is_a_manifest_error() -> None:
    with pytest.raises(ManifestError, match=r"deep\.yaml"):
        wire.parse_documents("a: " + "[" * 5_000 + "]" * 5_000, source="deep.yaml")
