"""The error tree: field errors render the way Kubernetes renders field.Error lists."""

from trainop import errors


def test_field_error_renders_path_type_and_detail() -> None:
    err = errors.FieldError("spec.pytorchReplicaSpecs[Master].replicas", "Forbidden", "must be 1")
    assert str(err) == "spec.pytorchReplicaSpecs[Master].replicas: Forbidden: must be 1"


def test_invalid_job_error_lists_every_problem_with_its_source() -> None:
    exc = errors.InvalidJobError(
        [
            errors.FieldError("metadata.name", "Required", "name is required"),
            errors.FieldError("spec", "Required", "spec is required"),
        ],
        source="job.yaml",
    )
    assert len(exc.errors) == 2
    assert str(exc).startswith("job.yaml: metadata.name: Required")
    assert isinstance(exc, errors.TrainopError)
