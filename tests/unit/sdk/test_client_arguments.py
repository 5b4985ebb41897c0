"""``TrainingClient`` argument checks and builders, with no cluster (nothing is sent)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx2
import pytest

import trainop.sdk
from tests.unit.api.builders import manifest
from trainop import errors
from trainop.api.kinds import KINDS, kind_info
from trainop.kube.http import HttpClient
from trainop.sdk import InvalidArgumentError, TrainingClient, builders, constants


@pytest.fixture
def client() -> Iterator[TrainingClient]:
    unreachable = HttpClient(httpx2.AsyncClient(base_url="http://127.0.0.1:9"))
    with TrainingClient(client_configuration=unreachable) as training:
        yield training


def test_the_facade_exports_a_small_fixed_set() -> None:
    assert sorted(trainop.sdk.__all__) == [
        "Container",
        "InvalidArgumentError",
        "JobFailedError",
        "SdkError",
        "TrainingClient",
        "WaitTimeoutError",
        "build_job",
        "constants",
    ]


def test_an_unknown_default_kind_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown job kind 'FooJob'"):
        TrainingClient(client_configuration=HttpClient(httpx2.AsyncClient()), job_kind="FooJob")


def test_with_a_job_every_other_argument_must_be_none(client: TrainingClient) -> None:
    with pytest.raises(InvalidArgumentError, match="Argument `name` must be None"):
        client.create_job(manifest("PyTorchJob"), name="other")


def test_a_function_job_needs_a_name_a_worker_and_a_supported_kind(client: TrainingClient) -> None:
    def train() -> None:
        print("hi")

    with pytest.raises(ValueError, match="name must be set"):
        client.create_job(train_func=train)
    with pytest.raises(ValueError, match="at least one worker"):
        client.create_job(name="f", train_func=train, num_workers=0)
    with pytest.raises(ValueError, match="PaddleJob can't be created using function"):
        client.create_job(name="f", train_func=train, job_kind="PaddleJob")
    with pytest.raises(ValueError, match="TFJob doesn't support `num_procs_per_worker`"):
        client.create_job(name="f", train_func=train, job_kind="TFJob", num_procs_per_worker=2)
    with pytest.raises(ValueError, match="must be callable"):
        client.create_job(name="f", train_func="not a function", base_image="img")  # type: ignore[arg-type]


def test_replica_types_are_lower_case_names_as_upstream(client: TrainingClient) -> None:
    with pytest.raises(ValueError, match="replica type must be one of"):
        client.get_job_pods("j", replica_type="Master")


def test_expected_conditions_must_be_job_conditions(client: TrainingClient) -> None:
    with pytest.raises(ValueError, match="must be a subset"):
        client.wait_for_job_conditions("j", expected_conditions={"succeeded"})


def test_api_failures_are_api_errors_with_their_cause(client: TrainingClient) -> None:
    with pytest.raises(errors.UnreachableError) as failed:
        client.get_job("j")
    assert failed.value.__cause__ is not None


def test_a_pytorch_function_job_matches_upstream_layout() -> None:
    def train(args: dict[str, int]) -> None:
        print(args)

    job = builders.function_job(
        info=kind_info("PyTorchJob"),
        name="f",
        namespace=None,
        base_image="img",
        program=builders.Program(train_func=train, parameters={"lr": 1}),
        args=builders.FunctionJobArgs(num_workers=3, num_procs_per_worker=2),
        env_vars=builders.env_list({"A": 1}),
        resources_per_worker={"CPU": "1", "gpu": 2},
    )
    specs = job["spec"]["pytorchReplicaSpecs"]
    assert {t: s["replicas"] for t, s in specs.items()} == {"Master": 1, "Worker": 2}
    assert job["spec"]["nprocPerNode"] == "2"
    pod = specs["Master"]["template"]
    assert pod["metadata"]["annotations"] == {constants.ISTIO_SIDECAR_INJECTION: "false"}
    container = pod["spec"]["containers"][0]
    assert container["command"] == ["bash", "-c"]
    assert "train({'lr': 1})" in container["args"][0]
    assert 'torchrun "$program_path/ephemeral_script.py"' in container["args"][0]
    assert container["env"] == [{"name": "A", "value": "1"}]
    amounts = {"cpu": "1", "nvidia.com/gpu": 2}
    assert container["resources"] == {"requests": amounts, "limits": amounts}


LAYOUTS = {
    "TFJob": {"Worker": 1},
    "PyTorchJob": {"Master": 1, "Worker": 1},
    "XGBoostJob": {"Master": 1},
    "MPIJob": {"Launcher": 1, "Worker": 1},
    "PaddleJob": {"Worker": 1},
    "JAXJob": {"Worker": 1},
    "MXJob": {"Scheduler": 1, "Worker": 1},
    "DGLJob": {"Launcher": 1, "Worker": 1},
}


@pytest.mark.parametrize("kind", [info.kind for info in KINDS])
def test_build_job_makes_a_valid_job_of_every_kind(kind: str) -> None:
    job = trainop.sdk.build_job(
        info=kind_info(kind),
        name="b",
        replicas=LAYOUTS[kind],
        container=trainop.sdk.Container("img"),
    )
    assert job["kind"] == kind
    assert job["metadata"] == {"name": "b"}
    assert set(job["spec"][kind_info(kind).replica_specs_field]) == set(LAYOUTS[kind])


def test_build_job_names_the_field_a_kind_rejects() -> None:
    with pytest.raises(errors.InvalidJobError, match="Master"):
        trainop.sdk.build_job(
            info=kind_info("XGBoostJob"),
            name="b",
            replicas={"Worker": 1},
            container=trainop.sdk.Container("img"),
        )
