"""The error tree: field errors render the way Kubernetes renders field.Error lists."""

import pytest

from trainop import errors


def test_field_error_renders_path_type_and_detail() -> None:
    err = errors.FieldError("spec.pytorchReplicaSpecs[Master].replicas", "Forbidden", "must be 1")
    assert str(err) == "spec.pytorchReplicaSpecs[Master].replicas: Forbidden: must be 1"


# (type, detail, value, kube's ErrorBody): the phrases of apimachinery's field.ErrorType, the
# value Go-style (strings quoted, numbers and booleans bare) for the types that show one.
BODIES = [
    ("Required", "", errors.OMITTED, "Required value"),
    ("Required", "must be specified", errors.OMITTED, "Required value: must be specified"),
    ("Required", "must be specified", "x", "Required value: must be specified"),
    (
        "Invalid",
        "must be greater than or equal to 0",
        -1,
        "Invalid value: -1: must be greater than or equal to 0",
    ),
    ("Invalid", "field is immutable", "a/b", 'Invalid value: "a/b": field is immutable'),
    ("Invalid", "must be a string", errors.OMITTED, "Invalid value: must be a string"),
    ("Invalid", "x", None, "Invalid value: null: x"),
    ("Invalid", "x", True, "Invalid value: true: x"),
    ("Invalid", "x", 1.0, "Invalid value: 1: x"),
    ("Invalid", "x", 'say "hi"', 'Invalid value: "say \\"hi\\"": x'),
    (
        "NotSupported",
        'supported values: "Never", "OnFailure"',
        "Always",
        'Unsupported value: "Always": supported values: "Never", "OnFailure"',
    ),
    ("Duplicate", "", "a", 'Duplicate value: "a"'),
    ("NotFound", "", "v", 'Not found: "v"'),
    ("Forbidden", "may not be set", "v", "Forbidden: may not be set"),
    (
        "TooLong",
        "may not be more than 63 bytes",
        "x" * 70,
        "Too long: may not be more than 63 bytes",
    ),
    ("TooMany", "must have at most 2 items", 3, "Too many: 3: must have at most 2 items"),
    ("Internal", "boom", errors.OMITTED, "Internal error: boom"),
]


@pytest.mark.parametrize(("kind", "detail", "value", "body"), BODIES)
def test_the_body_is_kubes_error_body(kind: str, detail: str, value: object, body: str) -> None:
    error = errors.FieldError("spec.x", kind, detail, value=value)
    assert error.body() == body
    assert str(error) == f"spec.x: {body}"


@pytest.mark.parametrize(
    ("kind", "detail"),
    [
        ("Required", "Required value"),
        ("Invalid", 'Invalid value: "string": spec.x is immutable'),
        ("NotSupported", 'Unsupported value: "a": supported values: "b"'),
        ("TooMany", "Too many: 3: must have at most 2 items"),
        ("FieldValueInvalid", "Invalid value: 3: must be at most 2"),  # a cause read back
    ],
)
def test_a_detail_already_in_kubes_words_is_not_doubled(kind: str, detail: str) -> None:
    assert str(errors.FieldError("spec.x", kind, detail)) == f"spec.x: {detail}"


def test_reasons_are_the_details_causes_reasons() -> None:
    reasons = {
        kind: errors.FieldError("p", kind, "d").reason
        for kind in ("Required", "Invalid", "NotSupported", "Duplicate", "Forbidden", "TooLong")
    }
    assert reasons == {
        "Required": "FieldValueRequired",
        "Invalid": "FieldValueInvalid",
        "NotSupported": "FieldValueNotSupported",
        "Duplicate": "FieldValueDuplicate",
        "Forbidden": "FieldValueForbidden",
        "TooLong": "FieldValueTooLong",
    }
    assert errors.FieldError("p", "FieldValueRequired", "Required value").reason == (
        "FieldValueRequired"
    )


def test_the_three_argument_form_still_builds_an_error_without_a_value() -> None:
    error = errors.FieldError("spec.x", "Invalid", "bad")
    assert error.value is errors.OMITTED
    assert error == errors.FieldError("spec.x", "Invalid", "bad")


def test_an_aggregate_is_one_error_or_a_bracketed_list_without_repeats() -> None:
    one = errors.FieldError("a", "Required", "")
    two = errors.FieldError("b", "Forbidden", "no")
    assert errors.aggregate([one]) == "a: Required value"
    assert errors.aggregate([one, two, one]) == "[a: Required value, b: Forbidden: no]"
    assert errors.aggregate([]) == ""


def test_invalid_job_error_lists_every_problem_with_its_source() -> None:
    exc = errors.InvalidJobError(
        [
            errors.FieldError("metadata.name", "Required", "name is required"),
            errors.FieldError("spec", "Required", "spec is required"),
        ],
        source="job.yaml",
    )
    assert len(exc.errors) == 2
    assert str(exc).startswith("job.yaml: metadata.name: Required value: name is required")
    assert isinstance(exc, errors.TrainopError)


def test_strings_are_quoted_as_gos_percent_q() -> None:
    assert errors.go_quote('a"b\\c') == '"a\\"b\\\\c"'
    assert errors.go_quote("line\nnext\t\x1e") == '"line\\nnext\\t\\x1e"'
    assert errors.go_quote("zero\u200bwidth, é and 😀 kept") == '"zero\\u200bwidth, é and 😀 kept"'
    assert errors.go_value({"b": 1, "a": [True]}) == '{"a":[true],"b":1}'


def test_a_cause_read_back_from_a_server_renders_as_it_was_sent() -> None:
    cause = errors.FieldError("spec.x", "FieldValueTypeInvalid", 'Invalid value: "string": bad')
    assert str(cause) == 'spec.x: Invalid value: "string": bad'
    assert cause.reason == "FieldValueTypeInvalid"


@pytest.mark.parametrize(
    ("value", "named"),
    [
        (None, "null"),
        (True, "boolean"),
        (3, "integer"),
        (1.5, "number"),
        ("x", "string"),
        ([1], "array"),
        ({"a": 1}, "object"),
    ],
)
def test_json_type_names_a_value_as_kube_does(value: object, named: str) -> None:
    assert errors.json_type(value) == named
