"""Pure pieces of the embedded API server's admission: body decoding, ceilings, quantities."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.unit.api.builders import manifest
from trainop.api.kinds import KINDS, kind_info
from trainop.cluster.apiserver.admission import limits, quantities
from trainop.cluster.apiserver.http import bodies, status


def test_decode_accepts_json_up_to_the_depth_bound() -> None:
    text = b"[" * bodies.MAX_DEPTH + b"]" * bodies.MAX_DEPTH
    assert bodies.decode(text) is not None
    with pytest.raises(status.RequestError) as deep:
        bodies.decode(b"[" + text + b"]")
    assert deep.value.status == 400


def test_decode_refuses_surrogates_wherever_they_are() -> None:
    for text in (b'{"a": ["\\ud800"]}', b'{"\\udc00": 1}', b'"\xed\xbf\xbf"'):
        with pytest.raises(status.RequestError) as bad:
            bodies.decode(text)
        assert bad.value.status == 400, text
    assert bodies.decode(b'"\\ud83d\\ude00"') == "\U0001f600"


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(),
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
        ),
        max_leaves=30,
    )
)
def test_decode_round_trips_what_json_can_carry(value: object) -> None:
    raw = json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        with pytest.raises(status.RequestError):
            bodies.decode(raw)
        return
    assert bodies.decode(raw) == value


@pytest.mark.parametrize("kind", [info.kind for info in KINDS])
def test_replica_ceiling_names_the_field_per_kind(kind: str) -> None:
    info = kind_info(kind)
    job = manifest(kind)
    rt = list(job["spec"][info.replica_specs_field])[-1]
    job["spec"][info.replica_specs_field][rt]["replicas"] = 10**9
    errors = limits.replica_errors(info, job, 1024)
    assert [e.path for e in errors] == [f"spec.{info.replica_specs_field}[{rt}].replicas"]
    assert limits.replica_errors(info, manifest(kind), 1024) == []
    assert limits.replica_errors(info, job, None) == []


def test_replica_ceiling_ignores_what_validation_reports() -> None:
    info = kind_info("PyTorchJob")
    for odd in ("many", -5, True, None, 1.5):
        job = manifest("PyTorchJob")
        job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = odd
        assert limits.replica_errors(info, job, 2) == []
    assert limits.replica_errors(info, {"spec": "x"}, 2) == []


def test_pod_quota() -> None:
    limits.check_pod_quota("p", 3, 4)
    limits.check_pod_quota("p", 10**6, None)
    with pytest.raises(status.RequestError) as refused:
        limits.check_pod_quota("p", 4, 4)
    assert (refused.value.status, refused.value.reason) == (403, "Forbidden")


@pytest.mark.parametrize(
    ("value", "text"),
    [(1, "1"), (0, "0"), (0.5, "500m"), (1.5e9, "1500M"), (0.1, "100m"), (2**30, "1073741824")],
)
def test_canonical_quantities(value: float, text: str) -> None:
    assert quantities.canonical(value) == text


def test_quantities_are_normalised_only_where_the_schema_says_quantity() -> None:
    pod = {
        "metadata": {"name": "p", "generation": 1},
        "spec": {
            "priority": 5,
            "containers": [
                {"name": "c", "ports": [{"containerPort": 80}], "resources": {"limits": {"cpu": 2}}}
            ],
        },
    }
    quantities.normalize("io.k8s.api.core.v1.Pod", pod)
    assert pod["spec"]["containers"][0]["resources"]["limits"]["cpu"] == "2"
    assert pod["spec"]["containers"][0]["ports"][0]["containerPort"] == 80
    assert pod["spec"]["priority"] == 5
    assert pod["metadata"]["generation"] == 1
    quota = {"spec": {"hard": {"pods": 10, "requests.cpu": "4"}}}
    quantities.normalize("io.k8s.api.core.v1.ResourceQuota", quota)
    assert quota["spec"]["hard"] == {"pods": "10", "requests.cpu": "4"}


@pytest.mark.parametrize("text", ["abc", "1.2.3", "1Ki2", "--1", "1 m", "", "1e", "0x10"])
def test_strings_that_are_not_quantities_are_reported(text: str) -> None:
    pod = {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": text}}}]}}
    assert quantities.normalize("io.k8s.api.core.v1.Pod", pod) == text


@pytest.mark.parametrize("text", ["1", "500m", "1.5", ".5", "1Gi", "1e3", "+2", "-1", "1E-3", "2k"])
def test_quantity_strings_are_kept_as_written(text: str) -> None:
    pod = {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": text}}}]}}
    assert quantities.normalize("io.k8s.api.core.v1.Pod", pod) is None
    assert pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] == text
