"""The generated CRDs: shape, structural schemas, examples valid against them, freshness."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from trainop.api import crds, kinds
from trainop.cli import manifests as manifests_cli

ROOT = Path(__file__).resolve().parents[3]
# examples/trainjob/ holds Trainer v2 manifests (tests/unit/api/trainer/test_trainjob_examples.py)
EXAMPLES = sorted(p for p in (ROOT / "examples").glob("*/*.yaml") if p.parent.name != "trainjob")


@pytest.fixture(scope="module")
def definitions() -> dict[str, Any]:
    return manifests_cli.load_definitions()


@pytest.fixture(scope="module")
def built(definitions: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {info.kind: crds.build_crd(info, definitions=definitions) for info in kinds.KINDS}


def _schema(crd: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def _nodes(node: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema node below ``node`` (properties, items, additionalProperties, anyOf)."""
    yield path, node
    for key, child in node.get("properties", {}).items():
        yield from _nodes(child, f"{path}.{key}")
    if "items" in node:
        yield from _nodes(node["items"], f"{path}[]")
    if isinstance(node.get("additionalProperties"), dict):
        yield from _nodes(node["additionalProperties"], f"{path}{{}}")
    for number, branch in enumerate(node.get("anyOf", [])):
        yield from _nodes(branch, f"{path}|{number}")


def _spec(crd: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = _schema(crd)["properties"]["spec"]
    return spec


@pytest.mark.parametrize("info", kinds.KINDS, ids=lambda i: i.kind)
def test_crd_names_scope_and_version(info: kinds.KindInfo, built: dict[str, Any]) -> None:
    crd = built[info.kind]
    assert crd["metadata"]["name"] == f"{info.plural}.kubeflow.org"
    assert crd["spec"]["scope"] == "Namespaced"
    assert "shortNames" not in crd["spec"]["names"]
    version, *others = crd["spec"]["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1", True, True)
    # MPIJob also serves v2beta1, never stored (docs/design/100); every other kind is v1 only.
    assert [v["name"] for v in others] == [v.name for v in info.other_versions]
    assert not any(v["storage"] for v in others)
    columns = [c["name"] for c in version["additionalPrinterColumns"]]
    assert columns == (["Age", "State"] if info.kind == "MPIJob" else ["State", "Age"])
    assert version["subresources"]["status"] == {}


@pytest.mark.parametrize("info", kinds.KINDS, ids=lambda i: i.kind)
def test_crd_is_a_valid_custom_resource_definition(
    info: kinds.KindInfo, built: dict[str, Any]
) -> None:
    # Strict: an unknown key anywhere in the schema (a typo, a JSON-Schema-only keyword that
    # JSONSchemaProps lacks) fails here, as it would fail `kubectl apply --validate=strict`.
    version = crds.k8s_schema.KUBERNETES_VERSION.lstrip("v")
    kubernetes_validate.validate(built[info.kind], version, strict=True)


@pytest.mark.parametrize("info", kinds.KINDS, ids=lambda i: i.kind)
def test_scale_subresource_only_for_scalable_kinds(
    info: kinds.KindInfo, built: dict[str, Any]
) -> None:
    scale = built[info.kind]["spec"]["versions"][0]["subresources"].get("scale")
    if not info.has_scale:
        assert scale is None
        return
    assert scale == {
        "specReplicasPath": f".spec.{info.replica_specs_field}.Worker.replicas",
        "statusReplicasPath": ".status.replicaStatuses.Worker.active",
        "labelSelectorPath": ".status.replicaStatuses.Worker.selector",
    }


@pytest.mark.parametrize("info", kinds.KINDS, ids=lambda i: i.kind)
def test_schema_is_structural(info: kinds.KindInfo, built: dict[str, Any]) -> None:
    untyped = []
    for path, node in _nodes(_schema(built[info.kind])):
        assert not {"$ref", "title", "const", "nullable"} & set(node), path
        assert not ("properties" in node and "additionalProperties" in node), path
        exempt = node.get("x-kubernetes-preserve-unknown-fields") or node.get(
            "x-kubernetes-int-or-string"
        )
        if "type" not in node and not exempt and "|" not in path.rsplit(".", 1)[-1]:
            untyped.append(path)
    assert untyped == []


@pytest.mark.parametrize("info", kinds.KINDS, ids=lambda i: i.kind)
def test_list_map_keys_are_required_or_defaulted(
    info: kinds.KindInfo, built: dict[str, Any]
) -> None:
    # The API server rejects a CRD whose list-map keys are neither required nor defaulted.
    for path, node in _nodes(_schema(built[info.kind])):
        for key in node.get("x-kubernetes-list-map-keys", []):
            items = node["items"]
            assert key in items.get("required", []) or "default" in items["properties"][key], (
                path,
                key,
            )


@pytest.mark.parametrize("info", kinds.KINDS, ids=lambda i: i.kind)
def test_schema_rules_from_upstream(info: kinds.KindInfo, built: dict[str, Any]) -> None:
    schema = _schema(built[info.kind])
    assert schema["properties"]["metadata"] == {"type": "object"}
    spec = _spec(built[info.kind])
    assert info.replica_specs_field in spec["required"]
    run_policy = spec["properties"]["runPolicy"]["properties"]
    assert run_policy["suspend"] == {
        "type": "boolean",
        "default": False,
        "description": run_policy["suspend"]["description"],
    }
    queue = run_policy["schedulingPolicy"]["properties"]["queue"]
    assert queue["x-kubernetes-validations"] == [
        {"rule": "self == oldSelf", "message": "spec.runPolicy.schedulingPolicy.queue is immutable"}
    ]
    condition = schema["properties"]["status"]["properties"]["conditions"]["items"]
    assert set(condition["required"]) == {"type", "status"}


def test_only_mxjob_requires_job_mode(built: dict[str, Any]) -> None:
    required = {kind: _spec(crd)["required"] for kind, crd in built.items()}
    assert "jobMode" in required["MXJob"]
    assert [k for k, r in required.items() if "jobMode" in r] == ["MXJob"]


def test_template_is_the_official_pod_template(built: dict[str, Any]) -> None:
    replica = _spec(built["TFJob"])["properties"]["tfReplicaSpecs"]["additionalProperties"]
    template = replica["properties"]["template"]
    assert set(template["properties"]["metadata"]["properties"]) == {
        "annotations",
        "finalizers",
        "labels",
        "name",
        "namespace",
    }
    pod = template["properties"]["spec"]
    assert "containers" in pod["required"]
    container = pod["properties"]["containers"]["items"]
    assert "name" in container["required"]
    cpu = container["properties"]["resources"]["properties"]["limits"]["additionalProperties"]
    assert cpu["x-kubernetes-int-or-string"] is True


def test_elastic_metrics_are_official_metric_specs(built: dict[str, Any]) -> None:
    policy = _spec(built["PyTorchJob"])["properties"]["elasticPolicy"]["properties"]
    metrics = policy["metrics"]
    assert metrics["type"] == "array"
    assert "resource" in metrics["items"]["properties"]
    assert metrics["items"]["required"] == ["type"]


def test_recursive_definitions_end_in_an_open_object() -> None:
    definitions = {"a.Loop": {"type": "object", "properties": {"next": {"$ref": "#/$defs/a.Loop"}}}}
    schema = crds.k8s_schema.resolve("a.Loop", definitions=definitions)
    assert schema["properties"]["next"] == {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
    }


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_example_validates_against_its_crd_schema(path: Path, built: dict[str, Any]) -> None:
    for document in yaml.safe_load_all(path.read_text()):
        jsonschema.Draft202012Validator(_schema(built[document["kind"]])).validate(document)


def test_crd_schema_rejects_a_container_without_name(built: dict[str, Any]) -> None:
    document = yaml.safe_load((ROOT / "examples/jax/simple.yaml").read_text())
    del document["spec"]["jaxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["name"]
    with pytest.raises(jsonschema.ValidationError, match="'name' is a required property"):
        jsonschema.Draft202012Validator(_schema(built["JAXJob"])).validate(document)


def test_checked_in_files_are_fresh(definitions: dict[str, Any]) -> None:
    files = manifests_cli.generated_files(definitions=definitions)
    assert manifests_cli.stale_files(ROOT, files) == [], "run `make manifests` and commit"
    assert len([f for f in files if f.startswith("manifests/crds/")]) == len(kinds.KINDS)
