"""Kubernetes' name and path rules for pod specs and ConfigMap/Secret keys, as tables."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.unit.api.builders import manifest
from trainop.api import manifest as wire
from trainop.api import pod_rules, validation
from trainop.cli.main import main

Mutation = Callable[[dict[str, Any]], None]

LABEL = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
KEY = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' "
    "(e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
    "'[-._a-zA-Z0-9]+')"
)


def valid_spec() -> dict[str, Any]:
    return {
        "volumes": [
            {"name": "data", "emptyDir": {}},
            {"name": "cfg", "configMap": {"name": "cm", "items": [{"key": "k", "path": "a/b"}]}},
            {"name": "sec", "secret": {"secretName": "s", "defaultMode": 0o400}},
            {"name": "host", "hostPath": {"path": "/srv/data"}},
        ],
        "initContainers": [{"name": "init", "image": "x"}],
        "containers": [
            {
                "name": "main",
                "image": "x",
                "workingDir": "/work/../app",  # kube allows '..' here: / is the root
                "volumeMounts": [
                    {"name": "data", "mountPath": "/data", "subPath": "a/b"},
                    {"name": "cfg", "mountPath": "/etc/../cfg"},
                    {"name": "sec", "mountPath": "/sec"},
                    {"name": "host", "mountPath": "/host"},
                ],
            }
        ],
    }


def mutated(change: Mutation) -> dict[str, Any]:
    spec = valid_spec()
    change(spec)
    return spec


def mount(index: int) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda spec: spec["containers"][0]["volumeMounts"][index]  # type: ignore[no-any-return]


def test_a_valid_spec_has_no_errors() -> None:
    assert pod_rules.pod_spec_errors(valid_spec(), path="spec") == []


SPEC_CASES: list[tuple[str, Mutation, str, str]] = [
    (
        "container name with '..'",
        lambda s: s["containers"][0].update(name="../../x"),
        "spec.containers[0].name",
        f'Invalid value: "../../x": {LABEL}',
    ),
    (
        "upper-case init container name",
        lambda s: s["initContainers"][0].update(name="Init"),
        "spec.initContainers[0].name",
        f'Invalid value: "Init": {LABEL}',
    ),
    (
        "container name too long",
        lambda s: s["containers"][0].update(name="a" * 64),
        "spec.containers[0].name",
        f'Invalid value: "{"a" * 64}": must be no more than 63 characters',
    ),
    (
        "container name shared with an init container",
        lambda s: s["containers"][0].update(name="init"),
        "spec.containers[0].name",
        'Duplicate value: "init"',
    ),
    (
        "volume name with a slash",
        lambda s: s["volumes"][0].update(name="../data"),
        "spec.volumes[0].name",
        f'Invalid value: "../data": {LABEL}',
    ),
    (
        "duplicate volume name",
        lambda s: s["volumes"][1].update(name="data"),
        "spec.volumes[1].name",
        'Duplicate value: "data"',
    ),
    (
        "volume without name",
        lambda s: s["volumes"][0].pop("name"),
        "spec.volumes[0].name",
        "Required value",
    ),
    (
        "mount of an unknown volume",
        lambda s: mount(0)(s).update(name="nope"),
        "spec.containers[0].volumeMounts[0].name",
        'Not found: "nope"',
    ),
    (
        "mount without mountPath",
        lambda s: mount(0)(s).pop("mountPath"),
        "spec.containers[0].volumeMounts[0].mountPath",
        "Required value",
    ),
    (
        "two mounts at one path",
        lambda s: mount(1)(s).update(mountPath="/data"),
        "spec.containers[0].volumeMounts[1].mountPath",
        'Invalid value: "/data": must be unique',
    ),
    (
        "subPath with '..'",
        lambda s: mount(0)(s).update(subPath="a/../../x"),
        "spec.containers[0].volumeMounts[0].subPath",
        "Invalid value: \"a/../../x\": must not contain '..'",
    ),
    (
        "absolute subPath",
        lambda s: mount(0)(s).update(subPath="/etc"),
        "spec.containers[0].volumeMounts[0].subPath",
        'Invalid value: "/etc": must be a relative path',
    ),
    (
        "subPathExpr with '..'",
        lambda s: mount(2)(s).update(subPathExpr="$(POD)/.."),
        "spec.containers[0].volumeMounts[2].subPathExpr",
        "Invalid value: \"$(POD)/..\": must not contain '..'",
    ),
    (
        "items path with '..'",
        lambda s: s["volumes"][1]["configMap"]["items"][0].update(path="../../x"),
        "spec.volumes[1].configMap.items[0].path",
        "Invalid value: \"../../x\": must not contain '..'",
    ),
    (
        "items path starting with '..'",
        lambda s: s["volumes"][1]["configMap"]["items"][0].update(path="..data"),
        "spec.volumes[1].configMap.items[0].path",
        "Invalid value: \"..data\": must not start with '..'",
    ),
    (
        "absolute items path",
        lambda s: s["volumes"][1]["configMap"]["items"][0].update(path="/etc/passwd"),
        "spec.volumes[1].configMap.items[0].path",
        'Invalid value: "/etc/passwd": must be a relative path',
    ),
    (
        "items without key",
        lambda s: s["volumes"][1]["configMap"]["items"][0].pop("key"),
        "spec.volumes[1].configMap.items[0].key",
        "Required value",
    ),
    (
        "defaultMode above 0777",
        lambda s: s["volumes"][2]["secret"].update(defaultMode=0o1777),
        "spec.volumes[2].secret.defaultMode",
        "Invalid value: 1023: must be a number between 0 and 0777 (octal), both inclusive",
    ),
    (
        "hostPath with '..'",
        lambda s: s["volumes"][3]["hostPath"].update(path="/srv/../etc"),
        "spec.volumes[3].hostPath.path",
        "Invalid value: \"/srv/../etc\": must not contain '..'",
    ),
]


@pytest.mark.parametrize(
    ("change", "where", "detail"),
    [case[1:] for case in SPEC_CASES],
    ids=[case[0] for case in SPEC_CASES],
)
def test_each_rule_reports_kubes_path_and_message(
    change: Mutation, where: str, detail: str
) -> None:
    found = [(e.path, e.detail) for e in pod_rules.pod_spec_errors(mutated(change), path="spec")]
    assert (where, detail) in found


@pytest.mark.parametrize(
    "garbage",
    [None, [], "x", {"containers": "x"}, {"containers": [1, None]}, {"volumes": [{"name": 3}]}],
)
def test_garbage_never_raises(garbage: Any) -> None:
    assert isinstance(pod_rules.pod_spec_errors(garbage, path="spec"), list)


KEY_CASES: list[tuple[str, list[str]]] = [
    ("ok.key-1_A", []),
    ("..", ["must not be '..'"]),
    (".", ["must not be '.'"]),
    ("..data", ["must not start with '..'"]),
    ("a/b", [KEY]),
    ("../../etc/passwd", [KEY, "must not start with '..'"]),
    ("k" * 254, ["must be no more than 253 characters"]),
    ("bad key!", [KEY]),
]


@pytest.mark.parametrize(("key", "problems"), KEY_CASES)
def test_config_keys_follow_is_config_map_key(key: str, problems: list[str]) -> None:
    assert pod_rules.config_key_problems(key) == problems


def test_data_key_errors_cover_every_data_field() -> None:
    obj = {"data": {"../x": "1"}, "binaryData": {"ok": ""}, "stringData": {"..": "v"}}
    found = [(e.path, e.type, e.detail) for e in pod_rules.data_key_errors(obj)]
    assert found == [
        ("data[../x]", "Invalid", f'Invalid value: "../x": {KEY}'),
        ("data[../x]", "Invalid", "Invalid value: \"../x\": must not start with '..'"),
        ("stringData[..]", "Invalid", "Invalid value: \"..\": must not be '..'"),
    ]
    assert pod_rules.data_key_errors({"data": {"a": "1"}}, path="x") == []


def test_job_validation_applies_the_pod_rules_to_every_template() -> None:
    job = manifest("PyTorchJob")
    worker = job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]
    worker["containers"].append({"name": "../side", "image": "x", "command": ["y"]})
    worker["volumes"] = [{"name": "v", "emptyDir": {}}]
    worker["containers"][0]["volumeMounts"] = [{"name": "v", "mountPath": "/v", "subPath": ".."}]
    before = copy.deepcopy(job)
    errors = validation.validate(wire.parse_job(job)).errors
    where = "spec.pytorchReplicaSpecs[Worker].template.spec.containers"
    assert [(e.path, e.type) for e in errors] == [
        (f"{where}[0].volumeMounts[0].subPath", "Invalid"),
        (f"{where}[1].name", "Invalid"),
    ]
    assert job == before


def test_a_missing_container_name_is_reported_once() -> None:
    job = manifest("PyTorchJob")
    job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"].append(
        {"image": "x", "command": ["y"]}
    )
    paths = [e.path for e in validation.validate(wire.parse_job(job)).errors]
    assert paths == ["spec.pytorchReplicaSpecs[Worker].template.spec.containers[1].name"]


def test_trainop_validate_refuses_a_template_that_would_leave_the_sandbox(tmp_path: Path) -> None:
    bad = tmp_path / "escape.yaml"
    bad.write_text(
        "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: x}\n"
        "spec:\n  pytorchReplicaSpecs:\n    Master:\n      replicas: 1\n"
        "      template:\n        spec:\n"
        "          volumes: [{name: v, emptyDir: {}}]\n"
        "          containers:\n"
        "          - name: pytorch\n            image: i\n"
        "            volumeMounts: [{name: v, mountPath: /v, subPath: ../../etc}]\n"
    )
    result = CliRunner().invoke(main, ["validate", "-f", str(bad)])
    assert result.exit_code == 2
    where = "spec.pytorchReplicaSpecs[Master].template.spec.containers[0].volumeMounts[0].subPath"
    assert f"{bad}: {where}: Invalid value: \"../../etc\": must not contain '..'" in (result.output)
