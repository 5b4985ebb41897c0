"""The admission webhook over real HTTPS on 127.0.0.1, its certificate checked against its CA."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.unit.api.builders import manifest
from tests.unit.controller.webhook_support import Served, admission_review, serving
from trainop.api.kinds import KINDS, kind_info
from trainop.controller import admission, certs

Manifest = dict[str, Any]
NOW = datetime(2026, 11, 20, tzinfo=UTC)
MANAGED_BY = "kueue.x-k8s.io/multikueue"
MX_WARNING = "MXJob was removed from Kubeflow Training Operator v1.9; trainop still runs it"
NPROC_WARNING = "spec.elasticPolicy.nProcPerNode is deprecated, use spec.nprocPerNode instead"


@pytest.fixture(scope="module")
def bundle() -> certs.CertBundle:
    return certs.generate(service="training-operator", namespace="kubeflow", now=NOW)


def run_served(cert_dir: Path, bundle: certs.CertBundle, body: Callable[[Served], Any]) -> None:
    async def main() -> None:
        async with serving(cert_dir, bundle=bundle) as served:
            await body(served)

    asyncio.run(main())


def specs(m: Manifest) -> dict[str, Any]:
    return next(v for k, v in m["spec"].items() if k.endswith("ReplicaSpecs"))


def first_container(m: Manifest, replica_type: str) -> dict[str, Any]:
    container: dict[str, Any] = specs(m)[replica_type]["template"]["spec"]["containers"][0]
    return container


def two_masters(m: Manifest) -> None:
    specs(m)["Master"] = specs(m)["Chief"]


def pytorch_launcher(m: Manifest) -> None:
    specs(m)["Launcher"] = specs(m)["Worker"]


def no_xgb_master(m: Manifest) -> None:
    del specs(m)["Master"]


def paddle_empty_image(m: Manifest) -> None:
    first_container(m, "Worker")["image"] = ""


def paddle_renamed_container(m: Manifest) -> None:
    first_container(m, "Worker")["name"] = "main"


def pytorch_escaping_sub_path(m: Manifest) -> None:
    specs(m)["Worker"]["template"]["spec"]["volumes"] = [{"name": "v", "emptyDir": {}}]
    first_container(m, "Worker")["volumeMounts"] = [
        {"name": "v", "mountPath": "/v", "subPath": ".."}
    ]


def mpi_two_launchers(m: Manifest) -> None:
    specs(m)["Launcher"]["replicas"] = 2


def mx_no_job_mode(m: Manifest) -> None:
    del m["spec"]["jobMode"]


def tf_replicas_as_text(m: Manifest) -> None:
    specs(m)["Worker"]["replicas"] = "two"


def jax_no_containers(m: Manifest) -> None:
    specs(m)["Worker"]["template"]["spec"]["containers"] = []


def xgb_two_problems(m: Manifest) -> None:
    specs(m)["Master"]["replicas"] = 3
    m["spec"]["runPolicy"] = {"backoffLimit": -1}


def bad_name(m: Manifest) -> None:
    m["metadata"]["name"] = "Bad_Name"


def pytorch_both_nproc(m: Manifest) -> None:
    m["spec"]["elasticPolicy"] = {"nProcPerNode": 2}
    m["spec"]["nprocPerNode"] = "2"


def jax_foreign_manager(m: Manifest) -> None:
    m["spec"]["runPolicy"] = {"managedBy": "example.com/other"}


# (kind, mutation, the exact denial message)
INVALID = [
    (
        "TFJob",
        two_masters,
        "spec.tfReplicaSpecs: Forbidden: must not have more than 1 Chief or Master role",
    ),
    (
        "TFJob",
        bad_name,
        'metadata.name: Invalid value: "Bad_Name": should match: a DNS-1035 label must consist '
        "of lower case alphanumeric characters or '-', start with an alphabetic character, and "
        "end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
        "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
    ),
    (
        "TFJob",
        tf_replicas_as_text,
        'spec.tfReplicaSpecs[Worker].replicas: Invalid value: "two": Input should',
    ),
    (
        "PyTorchJob",
        pytorch_launcher,
        'spec.pytorchReplicaSpecs[Launcher]: Unsupported value: "Launcher": supported values: '
        '"Master", "Worker"',
    ),
    (
        "PyTorchJob",
        pytorch_both_nproc,
        "spec.elasticPolicy.nProcPerNode: Forbidden: must not be used with spec.nprocPerNode",
    ),
    (
        "XGBoostJob",
        no_xgb_master,
        "spec.xgbReplicaSpecs[Master]: Required value: must be present",
    ),
    (
        "XGBoostJob",
        xgb_two_problems,
        "[spec.xgbReplicaSpecs[Master].replicas: Forbidden: must be 1, "
        "spec.runPolicy.backoffLimit: Invalid value: -1: must be greater than or equal to 0]",
    ),
    (
        "PaddleJob",
        paddle_empty_image,
        "spec.paddleReplicaSpecs[Worker].template.spec.containers[0].image: Required value: "
        "must be required",
    ),
    (
        "PaddleJob",
        paddle_renamed_container,
        "spec.paddleReplicaSpecs[Worker].template.spec.containers: Required value: "
        'must have at least one container with name "paddle"',
    ),
    (
        "JAXJob",
        jax_no_containers,
        "spec.jaxReplicaSpecs[Worker].template.spec.containers: Required value: must be specified",
    ),
    (
        "JAXJob",
        jax_foreign_manager,
        'spec.runPolicy.managedBy: Unsupported value: "example.com/other": supported values: ',
    ),
    ("MPIJob", mpi_two_launchers, "spec.mpiReplicaSpecs[Launcher].replicas: Forbidden: must be 1"),
    (
        "PyTorchJob",
        pytorch_escaping_sub_path,
        "spec.pytorchReplicaSpecs[Worker].template.spec.containers[0].volumeMounts[0].subPath: "
        "Invalid value: \"..\": must not contain '..'",
    ),
    ("MXJob", mx_no_job_mode, "spec.jobMode: Required value: must be specified"),
]


@pytest.mark.parametrize(
    ("kind", "mutate", "message"), INVALID, ids=[f"{k}-{m.__name__}" for k, m, _ in INVALID]
)
def test_an_invalid_job_is_denied_with_the_field_errors(
    tmp_path: Path,
    bundle: certs.CertBundle,
    kind: str,
    mutate: Callable[[Manifest], None],
    message: str,
) -> None:
    job = manifest(kind)
    mutate(job)

    async def body(served: Served) -> None:
        status, reply = await served.post(kind, admission_review(job, uid="uid-invalid"))
        assert status == 200
        assert reply["apiVersion"] == "admission.k8s.io/v1"
        assert reply["kind"] == "AdmissionReview"
        response = reply["response"]
        assert response["uid"] == "uid-invalid"
        assert response["allowed"] is False
        assert response["status"]["code"] == 403
        assert response["status"]["reason"] == "Forbidden"
        assert response["status"]["message"].startswith(message)

    run_served(tmp_path, bundle, body)


@pytest.mark.parametrize("kind", [info.kind for info in KINDS])
def test_a_valid_job_of_every_kind_is_allowed_on_create_and_update(
    tmp_path: Path, bundle: certs.CertBundle, kind: str
) -> None:
    job = manifest(kind)
    changed = manifest(kind)
    specs(changed)["Worker"]["replicas"] = 3

    async def body(served: Served) -> None:
        for review in (
            admission_review(job),
            admission_review(changed, operation="UPDATE", old=job),
        ):
            status, reply = await served.post(kind, review)
            assert status == 200
            assert reply["response"]["allowed"] is True, reply
            assert reply["response"]["uid"] == "0d9a4c8e-1"

    run_served(tmp_path, bundle, body)


@pytest.mark.parametrize("kind", [info.kind for info in KINDS])
def test_changing_managed_by_on_update_is_denied_for_every_kind(
    tmp_path: Path, bundle: certs.CertBundle, kind: str
) -> None:
    old = manifest(kind)
    new = manifest(kind, runPolicy={"managedBy": MANAGED_BY})

    async def body(served: Served) -> None:
        status, reply = await served.post(kind, admission_review(new, operation="UPDATE", old=old))
        assert status == 200
        assert reply["response"]["allowed"] is False
        assert reply["response"]["status"]["message"] == (
            f'spec.runPolicy.managedBy: Invalid value: "{MANAGED_BY}": field is immutable'
        )
        # The same value on both sides is no change.
        status, reply = await served.post(kind, admission_review(new, operation="UPDATE", old=new))
        assert reply["response"]["allowed"] is True

    run_served(tmp_path, bundle, body)


def test_deprecated_fields_and_mxjob_come_back_as_warnings(
    tmp_path: Path, bundle: certs.CertBundle
) -> None:
    elastic = manifest("PyTorchJob", elasticPolicy={"nProcPerNode": 2})
    both = manifest("PyTorchJob", elasticPolicy={"nProcPerNode": 2}, nprocPerNode="2")

    async def body(served: Served) -> None:
        _, reply = await served.post("PyTorchJob", admission_review(elastic))
        assert reply["response"]["allowed"] is True
        assert reply["response"]["warnings"] == [NPROC_WARNING]
        _, reply = await served.post("PyTorchJob", admission_review(both))
        assert reply["response"]["allowed"] is False
        assert reply["response"]["warnings"] == [NPROC_WARNING]
        _, reply = await served.post("MXJob", admission_review(manifest("MXJob")))
        assert reply["response"]["allowed"] is True
        assert reply["response"]["warnings"] == [MX_WARNING]
        _, reply = await served.post("TFJob", admission_review(manifest("TFJob")))
        assert "warnings" not in reply["response"]

    run_served(tmp_path, bundle, body)


@pytest.mark.parametrize("operation", ["DELETE", "CONNECT"])
def test_delete_and_connect_are_allowed_without_looking(
    tmp_path: Path, bundle: certs.CertBundle, operation: str
) -> None:
    broken = manifest("TFJob", name="Bad_Name")

    async def body(served: Served) -> None:
        review = admission_review(None, operation=operation, old=broken, uid="uid-del")
        status, reply = await served.post("TFJob", review)
        assert status == 200
        assert reply["response"] == {"uid": "uid-del", "allowed": True, "status": {"code": 200}}

    run_served(tmp_path, bundle, body)


def review_with(**request: Any) -> dict[str, Any]:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


MALFORMED: list[tuple[str, bytes | dict[str, Any], str]] = [
    ("not-json", b"{not json", "the body is not JSON"),
    ("not-an-object", b"[1, 2]", "expected an AdmissionReview object, got list"),
    ("wrong-kind", {"apiVersion": "v1", "kind": "Pod"}, "expected kind AdmissionReview"),
    (
        "no-request",
        {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"},
        "the AdmissionReview has no request",
    ),
    ("no-uid", review_with(operation="CREATE"), "request.uid: Required value"),
    (
        "unknown-operation",
        review_with(uid="u", operation="PATCH"),
        'request.operation: Unsupported value: "PATCH": supported values: "CREATE", "UPDATE", '
        '"DELETE", "CONNECT"',
    ),
    ("no-object", review_with(uid="u", operation="CREATE"), "request.object: Required value"),
    (
        "object-of-another-kind",
        admission_review(manifest("PyTorchJob")),
        "request.kind: this endpoint validates kubeflow.org/v1 TFJob",
    ),
    (
        "object-kind-differs-from-request-kind",
        review_with(uid="u", operation="CREATE", object=manifest("MPIJob")),
        "request.object.kind: this endpoint validates TFJob, got 'MPIJob'",
    ),
    (
        "update-without-old-object",
        review_with(uid="u", operation="UPDATE", object=manifest("TFJob")),
        "request.oldObject: Required value",
    ),
]


@pytest.mark.parametrize(
    ("body", "message"), [(b, m) for _, b, m in MALFORMED], ids=[i for i, _, _ in MALFORMED]
)
def test_a_malformed_review_is_a_400_naming_the_problem(
    tmp_path: Path, bundle: certs.CertBundle, body: bytes | dict[str, Any], message: str
) -> None:
    async def main(served: Served) -> None:
        status, reply = await served.post("TFJob", body)
        assert status == 400
        response = reply["response"]
        assert response["allowed"] is False
        assert response["status"]["code"] == 400
        assert response["status"]["reason"] == "BadRequest"
        assert response["status"]["message"].startswith(message)
        assert "Traceback" not in response["status"]["message"]

    run_served(tmp_path, bundle, main)


def test_a_400_still_echoes_the_uid_when_there_is_one(
    tmp_path: Path, bundle: certs.CertBundle
) -> None:
    review = review_with(uid="uid-400", operation="CREATE")

    async def body(served: Served) -> None:
        status, reply = await served.post("JAXJob", review)
        assert (status, reply["response"]["uid"]) == (400, "uid-400")

    run_served(tmp_path, bundle, body)


def test_a_v1beta1_review_is_answered_in_v1beta1(tmp_path: Path, bundle: certs.CertBundle) -> None:
    review = admission_review(manifest("XGBoostJob")) | {"apiVersion": "admission.k8s.io/v1beta1"}

    async def body(served: Served) -> None:
        _, reply = await served.post("XGBoostJob", review)
        assert reply["apiVersion"] == "admission.k8s.io/v1beta1"
        assert reply["response"]["allowed"] is True

    run_served(tmp_path, bundle, body)


def test_every_kind_has_its_upstream_path(tmp_path: Path, bundle: certs.CertBundle) -> None:
    async def body(served: Served) -> None:
        assert set(served.server.paths) == {
            f"/validate-kubeflow-org-v1-{k}"
            for k in (
                *("tfjob", "pytorchjob", "xgboostjob", "mpijob", "paddlejob", "jaxjob", "mxjob"),
                "dgljob",
            )
        }
        async with served.session.post(served.base_url + "/validate-kubeflow-org-v1-pod") as r:
            assert r.status == 404
        async with served.session.get(served.base_url + served.server.paths[0]) as r:
            assert r.status == 405

    run_served(tmp_path, bundle, body)


def test_webhook_names_follow_upstream() -> None:
    assert admission.webhook_name(kind_info("PyTorchJob")) == (
        "validator.pytorchjob.training-operator.kubeflow.org"
    )
    assert admission.CONFIGURATION_NAME == "validator.training-operator.kubeflow.org"
