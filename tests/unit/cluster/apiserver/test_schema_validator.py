"""The two-tier schema validator: ``jsonschema`` first, ``fastjsonschema`` once it pays off."""

from __future__ import annotations

from typing import Any

import pytest

from trainop.cluster.apiserver.admission import validation
from trainop.cluster.apiserver.admission.validation import COMPILE_AFTER, SchemaValidator

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "replicas": {"type": "integer", "minimum": 0},
                "policy": {"enum": ["Always", "Never"]},
            },
            "required": ["replicas"],
        }
    },
}
VALID = {"spec": {"replicas": 2, "policy": "Never"}}
INVALID = {"spec": {"replicas": -1, "policy": "Sometimes"}}
MISSING = {"spec": {"policy": "Always"}}


@pytest.mark.parametrize("draft4", [False, True])
def test_valid_objects_do_not_compile_until_the_validator_is_busy(draft4: bool) -> None:
    validator = SchemaValidator(SCHEMA, draft4=draft4)
    for _ in range(COMPILE_AFTER):
        assert validator.errors(VALID) == []
    assert not validator.is_compiled
    assert validator.errors(VALID) == []
    assert validator.is_compiled


@pytest.mark.parametrize("obj", [INVALID, MISSING], ids=["invalid", "missing"])
def test_both_tiers_report_the_same_errors(obj: dict[str, Any]) -> None:
    fresh = SchemaValidator(SCHEMA)
    busy = SchemaValidator(SCHEMA)
    for _ in range(COMPILE_AFTER):
        busy.errors(VALID)
    early, late = fresh.errors(obj), busy.errors(obj)
    assert early == late
    assert early
    assert all(e.path.startswith("spec.") for e in early)


def test_every_error_is_named() -> None:
    errors = SchemaValidator(SCHEMA).errors(INVALID)
    assert sorted((e.path, e.type) for e in errors) == [
        ("spec.policy", "NotSupported"),
        ("spec.replicas", "Invalid"),
    ]


def test_builtin_pod_schema_names_the_missing_field() -> None:
    validator = validation.builtin_validator("io.k8s.api.core.v1.Pod")
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}}
    errors = validator.errors(pod)
    assert [e.path for e in errors] == ["spec.containers"]


def _pod() -> dict[str, Any]:
    container = {
        "name": "main",
        "image": "i",
        "env": [{"name": f"E{i}", "value": str(i)} for i in range(3)],
        "ports": [{"containerPort": 80}],
        "resources": {"limits": {"cpu": "1"}},
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "labels": {"a": "b"}},
        "spec": {"containers": [container], "tolerations": [{"key": "k"}]},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


def _variants() -> list[dict[str, Any]]:
    """A valid pod, then pods wrong in a list item at each depth (and one wrong at the top)."""
    wrong: list[dict[str, Any]] = [_pod() for _ in range(6)]
    wrong[1]["spec"]["containers"][0]["env"][2]["value"] = 5
    wrong[2]["spec"]["containers"][0]["ports"][0]["containerPort"] = "80"
    wrong[3]["status"]["conditions"][0] = {"status": "True"}  # type is required
    wrong[4]["spec"]["tolerations"] = [7]
    wrong[5]["spec"] = []
    return wrong


def _verdict(validate: Any, obj: dict[str, Any]) -> str:
    import fastjsonschema

    try:
        validate(obj)
    except fastjsonschema.JsonSchemaException as exc:
        return str(exc)
    return "valid"


def test_the_fast_tier_judges_and_names_as_fastjsonschema_does() -> None:
    import fastjsonschema

    schema = validation.builtin_validator("io.k8s.api.core.v1.Pod").schema
    ours, theirs = validation.compile_fast(schema), fastjsonschema.compile(schema)
    verdicts = [_verdict(ours, obj) for obj in _variants()]
    assert verdicts == [_verdict(theirs, obj) for obj in _variants()]
    assert verdicts[0] == "valid"
    assert verdicts[1] == "data.spec.containers[0].env[2].value must be string or null"
    assert len(set(verdicts)) == len(verdicts)  # each wrong item named where it is


def test_the_fast_tier_builds_item_names_without_locals() -> None:
    """The point of ``compile_fast``: no ``locals()`` dict per list item (a fastjsonschema
    release that names items otherwise would make this fail, and the rewrite moot)."""
    import fastjsonschema

    schema = validation.builtin_validator("io.k8s.api.core.v1.Pod").schema
    code = fastjsonschema.compile_to_code(schema)
    assert "format(**locals())" in code
    assert "locals()" not in validation._ITEM_NAME.sub("", code)


def test_a_job_crd_schema_compiles_to_the_same_verdicts() -> None:
    import fastjsonschema

    from trainop.cluster.apiserver.admission import verdict

    custom = verdict.schema_of("PyTorchJob", "kubeflow.org/v1")
    assert custom is not None
    schema = custom.validator.schema
    ours, theirs = validation.compile_fast(schema), fastjsonschema.compile(schema)
    spec = {
        "pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": {"spec": _pod()["spec"]}}}
    }
    job = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "j"}}
    good = {**job, "spec": spec}
    bad = json_copy(good)
    bad["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": 3}
    ]
    assert _verdict(ours, good) == _verdict(theirs, good) == "valid"
    assert _verdict(ours, bad) == _verdict(theirs, bad) != "valid"


def json_copy(obj: dict[str, Any]) -> dict[str, Any]:
    import json

    copied: dict[str, Any] = json.loads(json.dumps(obj))
    return copied
