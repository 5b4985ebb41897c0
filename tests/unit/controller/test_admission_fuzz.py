"""Fuzzing the admission decision: any job, any envelope, gives a 200 decision or a 400, never
an exception (which the server would have to turn into a 500)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.api.builders import manifest
from tests.unit.api.test_manifest_fuzz import json_values, mutated_manifests
from tests.unit.controller.webhook_support import admission_review
from trainop.api.kinds import KINDS, kind_info
from trainop.controller import admission

KIND_NAMES = {info.kind for info in KINDS}


def check(kind: str, review: object) -> None:
    reply = admission.review(kind_info(kind), json.dumps(review).encode())
    response = reply.body["response"]
    assert reply.body["kind"] == "AdmissionReview"
    if reply.status == 400:
        assert response["allowed"] is False
        assert response["status"]["reason"] == "BadRequest"
        return
    assert reply.status == 200
    assert response["uid"] == "0d9a4c8e-1"
    assert response["allowed"] is (response["status"]["code"] == 200)
    if not response["allowed"]:
        assert response["status"]["message"]


@settings(max_examples=200, deadline=None)
@given(mutated_manifests(), st.sampled_from(["CREATE", "UPDATE"]), st.booleans())
def test_any_job_gets_a_decision(obj: Any, operation: str, old_is_mutated: bool) -> None:
    declared = obj.get("kind") if isinstance(obj, dict) else None
    kind = (
        declared if isinstance(declared, str) and declared in KIND_NAMES else "TFJob"
    )  # otherwise: a 400 for the kind
    new = obj if isinstance(obj, dict) else manifest(kind)
    old = obj if old_is_mutated and isinstance(obj, dict) else manifest(kind)
    review = admission_review(new, operation=operation, old=old)
    check(kind, review)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["request", "uid", "operation", "kind", "object", "oldObject"]), json_values)
def test_any_envelope_gets_a_decision_or_a_400(field: str, value: Any) -> None:
    review = admission_review(
        manifest("PyTorchJob"), operation="UPDATE", old=manifest("PyTorchJob")
    )
    if field == "request":
        review["request"] = value
    else:
        review["request"][field] = value
    reply = admission.review(kind_info("PyTorchJob"), json.dumps(review).encode())
    assert reply.status in (200, 400)
    assert reply.body["response"]["allowed"] in (True, False)
