"""The write path's shortcuts give the answers of the slow ways they replace: the integer
pre-scan never hides a number ``admission.integers`` would refuse, pooled uids are random
version-4 UUIDs, reused timestamps are the second's own, a ``/status`` update built on a
decoded copy leaves the stored object alone."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trainop.cluster.apiserver import store
from trainop.cluster.apiserver.admission import integers
from trainop.cluster.apiserver.rest import objects, resources

POD = "io.k8s.api.core.v1.Pod"


def _pod(**spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "generation": 3, "labels": {"a": "1"}},
        "spec": {"containers": [{"name": "c", "ports": [{"containerPort": 80}]}], **spec},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }


@pytest.mark.parametrize(
    ("spec", "refused"),
    [
        ({}, False),
        ({"terminationGracePeriodSeconds": 30}, False),
        ({"hostNetwork": True}, False),  # a bool is not a number to Go's decoder here
        ({"terminationGracePeriodSeconds": 1e300}, True),  # kube: cannot unmarshal number
        ({"terminationGracePeriodSeconds": 30.0}, True),
        ({"activeDeadlineSeconds": 2**63}, True),  # beyond int64
        ({"activeDeadlineSeconds": 2**40}, False),  # an int64 field: fits
    ],
)
def test_the_prescan_lets_through_only_what_the_schema_walk_accepts(
    spec: dict[str, Any], refused: bool
) -> None:
    pod = _pod(**spec)
    assert (integers.first_bad(POD, pod) is not None) is refused
    if not objects.may_hold_bad_integer(pod):
        assert not refused  # skipping the walk never hides a refusal


def test_the_prescan_sends_floats_and_big_integers_anywhere_to_the_walk() -> None:
    assert objects.may_hold_bad_integer({"a": [{"b": 1.5}]})
    assert objects.may_hold_bad_integer({"a": [[2**31]]})
    assert objects.may_hold_bad_integer({"a": -(2**31) - 1})
    assert not objects.may_hold_bad_integer({"a": [True, False, None, "1e300", 2**31 - 1]})


def test_pooled_uids_are_distinct_random_version_4_uuids() -> None:
    uids = [objects.new_uid() for _ in range(600)]  # more than one pool of random bytes
    assert len(set(uids)) == 600
    for text in uids:
        parsed = uuid.UUID(text)
        assert parsed.version == 4
        assert str(parsed) == text


def test_a_reused_timestamp_is_always_its_own_second() -> None:
    base = datetime(2026, 11, 27, 23, 59, 59, 10, tzinfo=UTC)
    assert objects.timestamp(base) == "2026-11-27T23:59:59Z"
    assert objects.timestamp(base.replace(microsecond=999_999)) == "2026-11-27T23:59:59Z"
    assert objects.timestamp(base + timedelta(seconds=1)) == "2026-11-28T00:00:00Z"
    # the same instant in another zone is written as given (kube's clock is UTC)
    other = base.astimezone(timezone(timedelta(hours=1)))
    assert objects.timestamp(other) == "2026-11-28T00:59:59Z"


def test_a_status_update_leaves_the_stored_object_alone() -> None:
    rt = resources.Registry().find(group="", version="v1", plural="pods")
    assert rt is not None
    old = _pod()
    before = repr(old)
    new = objects.prepare_update(rt, old, {"status": {"phase": "Succeeded"}}, subresource="status")
    new["metadata"]["labels"]["a"] = "changed"
    assert repr(old) == before
    assert new["status"] == {"phase": "Succeeded"}
    assert new["spec"] == old["spec"]


def _reference_may_hold(value: Any) -> bool:
    """The question ``may_hold_bad_integer`` answers, asked the plain recursive way."""
    if isinstance(value, dict):
        return any(_reference_may_hold(v) for v in value.values())
    if isinstance(value, list):
        return any(_reference_may_hold(v) for v in value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return isinstance(value, float) or not -(2**31) <= value <= 2**31 - 1


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**40), max_value=2**40)
    | st.floats(allow_nan=False)
    | st.text(max_size=3),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(_JSON)
def test_the_prescan_answers_as_the_plain_walk_does(value: Any) -> None:
    assert objects.may_hold_bad_integer(value) is _reference_may_hold(value)


@given(st.dictionaries(st.text(max_size=4), _JSON | st.text(), max_size=5))
def test_the_reused_encoder_writes_what_json_dumps_writes(obj: dict[str, Any]) -> None:
    expected = json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()
    assert store.encode(obj) == expected


def test_the_encoder_writes_unicode_as_utf8_and_compactly() -> None:
    assert store.encode({"a": ["é", 1.5, None, True]}) == '{"a":["é",1.5,null,true]}'.encode()
