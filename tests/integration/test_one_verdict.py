"""One verdict: ``trainop validate``, the embedded API server and the webhook agree.

Every training job of every example under ``examples/`` (v1 kinds and MPIJob v2beta1) is
mutated by hypothesis (``verdicts.mutated_manifests``: any JSON value anywhere, integers at the
edges of int32 and int64, whole-number floats, removed fields, unknown fields) and judged in a
``fieldValidation`` mode drawn from Strict, Warn and Ignore:

- ``trainop validate --field-validation MODE`` (in-process, click's runner) never raises; it
  exits 0, or 2 with every error line naming a field;
- its verdict is the embedded API server's on a ``dryRun=All`` create over real HTTP with
  ``fieldValidation=MODE``, on every case: kube's leniencies (unknown fields pruned unless
  Strict, whole-number floats read as integers; docs/design/002) are the server's and the
  command's alike, so no case is excluded;
- the webhook (``controller.admission.review``) allows every job the server stores, as the
  server stores it, and answers any mutated job without raising.

``TRAINOP_FUZZ_EXAMPLES`` sets the number of cases (default 200, CI; thousands locally).
The server runs without the local replica ceiling, a limit of the local machine that
``trainop validate`` does not judge (``trainop run`` and the server do).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from tests.integration import verdicts
from tests.integration.cluster.apiserver.conftest import RunningServer
from tests.integration.cluster.apiserver.test_bad_input import Raw
from tests.integration.controller.cluster import start_cluster_server
from trainop.api.kinds import kind_info
from trainop.cluster.apiserver import Limits
from trainop.controller import admission

CASES = int(os.environ.get("TRAINOP_FUZZ_EXAMPLES", "200"))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    limits = Limits(max_replicas_per_job=None, max_pods=None)
    yield from start_cluster_server(tmp_path_factory.mktemp("verdict"), limits=limits)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("manifests")


def _review(job: dict[str, Any]) -> admission.Reply:
    """The webhook's reply to a CREATE of ``job`` (read through v1, as it is configured)."""
    kind = job.get("kind") if isinstance(job.get("kind"), str) else "PyTorchJob"
    info = kind_info(str(kind)) if kind in verdicts.PLURALS else kind_info("PyTorchJob")
    request = {
        "uid": "u-1",
        "operation": "CREATE",
        "kind": {"group": "kubeflow.org", "version": "v1", "kind": info.kind},
        "object": {**job, "apiVersion": "kubeflow.org/v1"},
    }
    review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
    return admission.review(info, json.dumps(review).encode())


@settings(
    max_examples=CASES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=verdicts.mutated_manifests())
def test_validate_and_the_server_give_one_verdict(
    server: RunningServer, workdir: Path, case: tuple[dict[str, Any], str]
) -> None:
    job, mode = case
    said = verdicts.validate_verdict(job, mode, workdir)
    stored = verdicts.server_verdict(Raw(server), job, mode)
    assert said.accepted == stored.accepted, (mode, said.said, stored.said, job)
    assert _review(job).status in (200, 400)
    if stored.accepted:
        reply = _review(stored.answer)
        assert reply.body["response"]["allowed"], (reply.body, stored.said)


def test_every_example_is_valid_in_every_mode(server: RunningServer, workdir: Path) -> None:
    assert {job["kind"] for job in verdicts.EXAMPLES} >= {"PyTorchJob", "MPIJob", "TFJob"}
    assert any(job["apiVersion"] == "kubeflow.org/v2beta1" for job in verdicts.EXAMPLES)
    for job in verdicts.EXAMPLES:
        for mode in verdicts.MODES:
            assert verdicts.validate_verdict(job, mode, workdir).accepted, job
            assert verdicts.server_verdict(Raw(server), job, mode).accepted, job
