"""The generated Trainer v2 and JobSet CRDs: identity (spec 1.1), structural schemas, the
defaults, limits and CEL rules of spec 1.2-1.6 carried into the schema, and freshness."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

from trainop.api import k8s_schema
from trainop.api.trainer import crds
from trainop.cli import manifests as manifests_cli

ROOT = Path(__file__).resolve().parents[4]


@pytest.fixture(scope="module")
def built() -> dict[str, dict[str, Any]]:
    definitions = manifests_cli.load_definitions()
    return {crd["spec"]["names"]["kind"]: crd for crd in crds.build_crds(definitions)}


def _schema(crd: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def _at(crd: dict[str, Any], path: str) -> dict[str, Any]:
    node = _schema(crd)
    for part in path.split("."):
        node = node["items"] if part == "[]" else node["properties"][part]
    return node


def _nodes(node: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    yield path, node
    for key, child in node.get("properties", {}).items():
        yield from _nodes(child, f"{path}.{key}")
    if "items" in node:
        yield from _nodes(node["items"], f"{path}[]")
    if isinstance(node.get("additionalProperties"), dict):
        yield from _nodes(node["additionalProperties"], f"{path}{{}}")


KINDS = ("TrainJob", "TrainingRuntime", "ClusterTrainingRuntime", "JobSet")


@pytest.mark.parametrize(
    ("kind", "name", "scope", "status", "columns"),
    [
        ("TrainJob", "trainjobs.trainer.kubeflow.org", "Namespaced", True, ["State", "Age"]),
        ("TrainingRuntime", "trainingruntimes.trainer.kubeflow.org", "Namespaced", False, []),
        (
            "ClusterTrainingRuntime",
            "clustertrainingruntimes.trainer.kubeflow.org",
            "Cluster",
            False,
            [],
        ),
        (
            "JobSet",
            "jobsets.jobset.x-k8s.io",
            "Namespaced",
            True,
            ["TerminalState", "Restarts", "Completed", "Suspended", "Age"],
        ),
    ],
)
def test_identity(
    built: dict[str, Any], kind: str, name: str, scope: str, status: bool, columns: list[str]
) -> None:
    crd = built[kind]
    assert crd["metadata"]["name"] == name
    assert crd["spec"]["scope"] == scope
    names = crd["spec"]["names"]
    assert names["listKind"] == f"{kind}List"
    assert names["singular"] == kind.lower()
    assert "shortNames" not in names
    assert "categories" not in names
    (version,) = crd["spec"]["versions"]
    expected_version = "v1alpha2" if kind == "JobSet" else "v1alpha1"
    assert (version["name"], version["served"], version["storage"]) == (
        expected_version,
        True,
        True,
    )
    assert ("subresources" in version) is status
    assert [c["name"] for c in version.get("additionalPrinterColumns", [])] == columns


def test_trainjob_printer_columns(built: dict[str, Any]) -> None:
    (version,) = built["TrainJob"]["spec"]["versions"]
    assert version["additionalPrinterColumns"] == [
        {"jsonPath": ".status.conditions[-1:].type", "name": "State", "type": "string"},
        {"jsonPath": ".metadata.creationTimestamp", "name": "Age", "type": "date"},
    ]


@pytest.mark.parametrize("kind", KINDS)
def test_crd_is_a_valid_custom_resource_definition(built: dict[str, Any], kind: str) -> None:
    version = k8s_schema.KUBERNETES_VERSION.lstrip("v")
    kubernetes_validate.validate(built[kind], version, strict=True)


@pytest.mark.parametrize("kind", KINDS)
def test_schema_is_structural(built: dict[str, Any], kind: str) -> None:
    untyped = []
    for path, node in _nodes(_schema(built[kind])):
        assert not {"$ref", "title", "const", "nullable", "anyOf"} - {"anyOf"} & set(node), path
        exempt = node.get("x-kubernetes-preserve-unknown-fields") or node.get(
            "x-kubernetes-int-or-string"
        )
        if "type" not in node and not exempt:
            untyped.append(path)
    assert untyped == []


@pytest.mark.parametrize("kind", KINDS)
def test_list_map_keys_are_required_or_defaulted(built: dict[str, Any], kind: str) -> None:
    for path, node in _nodes(_schema(built[kind])):
        for key in node.get("x-kubernetes-list-map-keys", []):
            items = node["items"]
            assert key in items.get("required", []) or "default" in items["properties"][key], (
                path,
                key,
            )


@pytest.mark.parametrize(
    ("path", "default"),
    [
        ("spec.runtimeRef.apiGroup", "trainer.kubeflow.org"),
        ("spec.runtimeRef.kind", "ClusterTrainingRuntime"),
        ("spec.suspend", False),
        ("spec.managedBy", "trainer.kubeflow.org/trainjob-controller"),
    ],
)
def test_trainjob_defaults(built: dict[str, Any], path: str, default: object) -> None:
    assert _at(built["TrainJob"], path)["default"] == default


@pytest.mark.parametrize(
    ("path", "default"),
    [
        ("spec.mlPolicy.mpi.numProcPerNode", 1),
        ("spec.mlPolicy.mpi.mpiImplementation", "OpenMPI"),
        ("spec.mlPolicy.mpi.sshAuthMountPath", "/root/.ssh"),
        ("spec.mlPolicy.mpi.runLauncherAsNode", False),
        ("spec.mlPolicy.flux.numProcPerNode", 1),
        ("spec.podGroupPolicy.coscheduling.scheduleTimeoutSeconds", 60),
        ("spec.podGroupPolicy.volcano.networkTopology.mode", "hard"),
        ("spec.podGroupPolicy.volcano.networkTopology.highestTierAllowed", 1),
        ("spec.template.spec.replicatedJobs.[].groupName", "default"),
        ("spec.template.spec.replicatedJobs.[].replicas", 1),
        ("spec.template.spec.failurePolicy.restartStrategy", "Recreate"),
    ],
)
def test_runtime_defaults(built: dict[str, Any], path: str, default: object) -> None:
    for kind in ("TrainingRuntime", "ClusterTrainingRuntime"):
        assert _at(built[kind], path)["default"] == default
    assert "default" not in _at(built["TrainingRuntime"], "spec.mlPolicy.numNodes")


def test_mpi_implementation_enum(built: dict[str, Any]) -> None:
    node = _at(built["ClusterTrainingRuntime"], "spec.mlPolicy.mpi.mpiImplementation")
    assert node["enum"] == ["OpenMPI", ""]


@pytest.mark.parametrize(
    ("path", "key", "value"),
    [
        ("spec.runtimeRef.name", "maxLength", 253),
        ("spec.runtimeRef.name", "minLength", 1),
        ("spec.trainer.image", "maxLength", 500),
        ("spec.trainer.command", "maxItems", 128),
        ("spec.trainer.command.[]", "maxLength", 1048576),
        ("spec.trainer.env", "maxItems", 128),
        ("spec.trainer.env", "x-kubernetes-list-map-keys", ["name"]),
        ("spec.trainer.numNodes", "minimum", 0),
        ("spec.trainer.numNodes", "format", "int32"),
        ("spec.initializer.dataset.storageUri", "maxLength", 2048),
        ("spec.runtimePatches", "maxItems", 16),
        ("spec.runtimePatches", "x-kubernetes-list-map-keys", ["manager"]),
        ("spec.activeDeadlineSeconds", "minimum", 1),
        ("status", "minProperties", 1),
        ("status.conditions", "maxItems", 8),
        ("status.jobsStatus", "maxItems", 100),
        ("status.trainerStatus.metrics", "maxItems", 256),
        ("status.trainerStatus.progressPercentage", "maximum", 100),
    ],
)
def test_trainjob_limits(built: dict[str, Any], path: str, key: str, value: object) -> None:
    assert _at(built["TrainJob"], path)[key] == value


def test_patch_pod_spec_limits_and_rules(built: dict[str, Any]) -> None:
    pod = _at(
        built["TrainJob"],
        "spec.runtimePatches.[].trainingRuntimeSpec.template.spec.replicatedJobs.[]"
        ".template.spec.template.spec",
    )["properties"]
    immutable = [{"message": "field is immutable", "rule": "self == oldSelf"}]
    for name in ("serviceAccountName", "volumes", "initContainers", "containers"):
        assert pod[name]["x-kubernetes-validations"] == immutable, name
    for name in ("imagePullSecrets", "securityContext", "terminationGracePeriodSeconds"):
        assert pod[name]["x-kubernetes-validations"] == immutable, name
    for name in ("nodeSelector", "affinity", "tolerations", "schedulingGates"):
        assert "x-kubernetes-validations" not in pod[name], name
    assert pod["terminationGracePeriodSeconds"]["minimum"] == 0
    assert pod["tolerations"]["x-kubernetes-list-type"] == "atomic"
    assert (pod["volumes"]["maxItems"], pod["containers"]["maxItems"]) == (128, 64)
    assert pod["schedulingGates"]["maxItems"] == 16


def test_trainjob_cel_rules(built: dict[str, Any]) -> None:
    schema = _schema(built["TrainJob"])
    messages = [rule["message"] for rule in schema["x-kubernetes-validations"]]
    assert messages == [
        "metadata.name must match RFC 1035 DNS label format",
        "metadata.name must be no more than 63 characters",
    ]
    for field in ("runtimeRef", "initializer", "trainer", "activeDeadlineSeconds"):
        rules = _at(built["TrainJob"], f"spec.{field}")["x-kubernetes-validations"]
        assert rules == [{"message": "field is immutable", "rule": "self == oldSelf"}]
    managed = _at(built["TrainJob"], "spec.managedBy")["x-kubernetes-validations"]
    assert [r["message"] for r in managed] == [
        "ManagedBy must be trainer.kubeflow.org/trainjob-controller or kueue.x-k8s.io/multikueue "
        "if set",
        "field is immutable",
    ]
    uri = _at(built["TrainJob"], "spec.initializer.model.storageUri")["x-kubernetes-validations"]
    assert uri[0]["message"] == "storageUri may be empty, or it must be a valid URI (scheme://...)"


def test_runtime_cel_rules(built: dict[str, Any]) -> None:
    crd = built["ClusterTrainingRuntime"]
    assert _at(crd, "spec.mlPolicy")["x-kubernetes-validations"][0]["message"] == (
        "Only one of the policy can be configured"
    )
    jobset = _at(crd, "spec.template.spec")
    assert jobset["x-kubernetes-validations"][0]["message"] == (
        "StartupPolicy and DependsOn APIs are mutually exclusive"
    )
    for name in ("network", "successPolicy", "failurePolicy", "startupPolicy"):
        assert jobset["properties"][name]["x-kubernetes-validations"] == [
            {"message": "Value is immutable", "rule": "self == oldSelf"}
        ]
    assert _at(crd, "spec")["minProperties"] == 1
    assert _at(crd, "spec.template")["minProperties"] == 1


def test_job_templates_are_official_job_template_specs(built: dict[str, Any]) -> None:
    template = _at(built["TrainingRuntime"], "spec.template.spec.replicatedJobs.[].template")
    pod = template["properties"]["spec"]["properties"]["template"]["properties"]["spec"]
    assert "containers" in pod["required"]
    assert set(template["properties"]["metadata"]["properties"]) == {
        "annotations",
        "finalizers",
        "labels",
        "name",
        "namespace",
    }


def test_jobset_keeps_unknown_fields_where_the_subset_stops(built: dict[str, Any]) -> None:
    schema = _schema(built["JobSet"])
    assert schema["properties"]["spec"]["x-kubernetes-preserve-unknown-fields"] is True
    assert schema["properties"]["status"]["x-kubernetes-preserve-unknown-fields"] is True
    runtime = _at(built["TrainingRuntime"], "spec.template.spec")
    assert "x-kubernetes-preserve-unknown-fields" not in runtime


def test_checked_in_crds_are_fresh() -> None:
    files = manifests_cli.generated_files(definitions=manifests_cli.load_definitions())
    trainer = {
        k: v
        for k, v in files.items()
        if k.startswith(("manifests/trainer/crds/", "manifests/trainer/jobset/"))
    }
    assert sorted(trainer) == [
        "manifests/trainer/crds/clustertrainingruntimes.yaml",
        "manifests/trainer/crds/trainingruntimes.yaml",
        "manifests/trainer/crds/trainjobs.yaml",
        "manifests/trainer/jobset/jobsets.yaml",
    ]
    assert manifests_cli.stale_files(ROOT, trainer) == [], "run `make manifests` and commit"


@pytest.mark.parametrize("kind", ["TrainJob", "JobSet"])
def test_conditions_are_a_list_map_by_type(built: dict[str, Any], kind: str) -> None:
    conditions = _at(built[kind], "status.conditions")
    assert conditions["x-kubernetes-list-type"] == "map"
    assert conditions["x-kubernetes-list-map-keys"] == ["type"]
    assert "type" in conditions["items"]["required"]
