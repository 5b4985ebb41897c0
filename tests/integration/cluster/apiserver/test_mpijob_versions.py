"""One ``mpijobs.kubeflow.org`` CRD serving v1 and v2beta1 on the embedded API server: a job
written through v2beta1 gets the v2beta1 CRD defaults (which mark its semantics), reads back
through v1 with every field, and a v1 job and a v2beta1 job of the same name live side by
side in two namespaces (docs/design/100-mpijob-v2beta1.md)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.cluster.apiserver.test_bad_input import Raw
from tests.integration.controller.cluster import start_cluster_server
from trainop.api import manifest, mpi_v2beta1

CONTAINER = {"name": "mpi", "image": "mpi-pi"}
REPLICAS = {
    "Launcher": {"replicas": 1, "template": {"spec": {"containers": [CONTAINER]}}},
    "Worker": {"replicas": 2, "template": {"spec": {"containers": [CONTAINER]}}},
}


@pytest.fixture(scope="module")
def raw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Raw]:
    for server in start_cluster_server(tmp_path_factory.mktemp("mpiversions")):
        yield Raw(server)


def path(version: str, namespace: str, name: str = "") -> str:
    base = f"/apis/kubeflow.org/{version}/namespaces/{namespace}/mpijobs"
    return f"{base}/{name}" if name else base


def create(raw: Raw, version: str, namespace: str, spec: dict[str, Any]) -> dict[str, Any]:
    if namespace != "default":
        raw.send(
            "POST",
            "/api/v1/namespaces",
            json.dumps(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
            ).encode(),
        )
    body = {
        "apiVersion": f"kubeflow.org/{version}",
        "kind": "MPIJob",
        "metadata": {"name": "pi"},
        "spec": spec,
    }
    code, obj = raw.send("POST", path(version, namespace), json.dumps(body).encode())
    assert code == 201, obj
    return obj  # type: ignore[no-any-return]


def test_a_v2beta1_job_is_defaulted_marked_and_reads_through_v1_unchanged(raw: Raw) -> None:
    created = create(raw, "v2beta1", "default", {"mpiReplicaSpecs": REPLICAS})
    spec = created["spec"]
    assert spec["sshAuthMountPath"] == "/root/.ssh"  # the v2beta1 CRD default marks it
    assert (spec["mpiImplementation"], spec["launcherCreationPolicy"]) == ("OpenMPI", "AtStartup")
    assert spec["slotsPerWorker"] == 1
    code, as_v1 = raw.send("GET", path("v1", "default", "pi"))
    assert code == 200
    assert as_v1["apiVersion"] == "kubeflow.org/v1"
    assert as_v1["spec"] == spec
    assert mpi_v2beta1.is_v2beta1_job(as_v1)
    manifest.parse_job(as_v1)  # the v1 model accepts it (union schema)


def test_v1_and_v2beta1_jobs_of_one_name_in_two_namespaces(raw: Raw) -> None:
    v1 = create(raw, "v1", "legacy", {"slotsPerWorker": 1, "mpiReplicaSpecs": REPLICAS})
    v2 = create(
        raw, "v2beta1", "modern", {"mpiReplicaSpecs": REPLICAS, "mpiImplementation": "MPICH"}
    )
    assert not mpi_v2beta1.is_v2beta1_job(v1)
    assert mpi_v2beta1.is_v2beta1_job(v2)
    # A v1 job read through v2beta1 gains nothing and keeps v1 semantics.
    code, v1_as_v2 = raw.send("GET", path("v2beta1", "legacy", "pi"))
    assert code == 200
    assert v1_as_v2["spec"] == v1["spec"]
    assert not mpi_v2beta1.is_v2beta1_job(v1_as_v2)
    code, listed = raw.send("GET", "/apis/kubeflow.org/v1/mpijobs")
    assert code == 200
    found = {(i["metadata"]["namespace"], mpi_v2beta1.is_v2beta1_job(i)) for i in listed["items"]}
    assert {("legacy", False), ("modern", True)} <= found


def test_a_v1_job_cannot_be_flipped_to_v2beta1_by_a_write_through_v2beta1(raw: Raw) -> None:
    create(raw, "v1", "flip", {"mpiReplicaSpecs": REPLICAS})
    code, current = raw.send("GET", path("v2beta1", "flip", "pi"))
    assert code == 200
    # A full update through v2beta1 is defaulted with v2beta1's CRD defaults on decoding,
    # which would add sshAuthMountPath: the update guard refuses it.
    code, refused = raw.send("PUT", path("v2beta1", "flip", "pi"), json.dumps(current).encode())
    assert code == 422, refused
    causes = [c["field"] for c in refused["details"]["causes"]]
    assert causes == ["spec.sshAuthMountPath"]
    code, after = raw.send("GET", path("v1", "flip", "pi"))
    assert not mpi_v2beta1.is_v2beta1_job(after)


def test_discovery_serves_both_versions_and_prefers_v1(raw: Raw) -> None:
    code, group = raw.send("GET", "/apis/kubeflow.org")
    assert code == 200
    versions = [v["version"] for v in group["versions"]]
    assert "v2beta1" in versions
    assert group["preferredVersion"]["version"] == "v1"
    code, listing = raw.send("GET", "/apis/kubeflow.org/v2beta1")
    assert code == 200
    assert [r["name"] for r in listing["resources"]] == ["mpijobs", "mpijobs/status"]
