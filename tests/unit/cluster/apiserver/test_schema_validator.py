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
