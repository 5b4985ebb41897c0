"""Fuzz: mutated example jobs through the embedded API server's admission and the controller.

Every example job (``examples/*/*.yaml``) is mutated by hypothesis (a value anywhere replaced
by another JSON value of any type, or removed; replica counts pushed to the edges) and
submitted over real HTTP to the embedded API server with the real CRDs, while the real
``Manager`` and the ``SimulatedKubelet`` run on a fake clock (``cluster``). Asserted:

- no submission gets a 5xx: a job is stored (201) or refused with a 4xx ``Status``; nor does
  a merge patch of a stored job with another mutated example's spec;
- every stored job passes ``manifest.check_job``, the check of ``trainop validate`` and of
  the webhook (admission equals validation: the engine never sees a job the webhook refuses);
- within a bounded number of reconciles (the controller settles, then one more fake second)
  every stored job has a condition, or stays without one with a ``Warning`` event that says
  why (a job another controller manages, ``runPolicy.managedBy``, is left alone by design).

Bounded: a dozen examples of up to five jobs each, under a low replica ceiling so that no
example starts hundreds of pods; well under 60 s.
"""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.integration.cluster.apiserver.conftest import RunningServer
from tests.integration.cluster.apiserver.test_bad_input import Raw
from tests.integration.controller.cluster import Cluster, run_cluster, start_cluster_server
from tests.integration.verdicts import DELETE, paths, set_at, value_at
from trainop.api import manifest as wire
from trainop.api.kinds import KINDS
from trainop.api.types import MANAGED_BY_VALUES
from trainop.cluster.apiserver import Limits
from trainop.kube.resources import EVENTS

ROOT = Path(__file__).resolve().parents[3]
PLURALS = {info.kind: info.plural for info in KINDS}
CEILING = 8


def examples() -> list[dict[str, Any]]:
    found = []
    for path in sorted(ROOT.glob("examples/*/*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            if not isinstance(document, dict) or document.get("kind") not in PLURALS:
                continue
            if document.get("apiVersion") == "kubeflow.org/v1":  # v2beta1 MPIJobs: note 100
                found.append(document)
    return found


EXAMPLES = examples()


SCALARS = (
    st.none()
    | st.booleans()
    | st.sampled_from([-1, 0, 1, 2, 3, CEILING + 1, 10**9, 2**31, 1.5])
    | st.text(max_size=6)
    | st.sampled_from(["Never", "OnFailure", "ExitCode", "Always", "", "..", "Worker", "-x"])
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=5), inner, max_size=2)
    ),
    max_leaves=4,
)


@st.composite
def mutated_job(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """(the example's kind, the mutated example)."""
    job = copy.deepcopy(draw(st.sampled_from(EXAMPLES)))
    kind = job["kind"]
    for _ in range(draw(st.integers(1, 3))):
        everywhere = list(paths(job))
        in_spec = [p for p in everywhere if p[0] == "spec"] or everywhere
        where = draw(
            st.sampled_from(in_spec) if draw(st.integers(0, 9)) else st.sampled_from(everywhere)
        )
        replacement = draw(st.just(DELETE) | VALUES | _like(value_at(job, where)))
        set_at(job, where, replacement)
    return kind, job


def _like(value: Any) -> st.SearchStrategy[Any]:
    """Values of the same type as ``value`` (mutations that keep a job plausible)."""
    if isinstance(value, bool):
        return st.booleans()
    if isinstance(value, int):
        return st.integers(-2, CEILING + 1) | st.just(10**9)
    if isinstance(value, str):
        return st.text(max_size=8) | st.sampled_from(["", "..", "a/b", "Never", "x" * 70])
    return VALUES


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    limits = Limits(max_replicas_per_job=CEILING, max_pods=400)
    yield from start_cluster_server(tmp_path_factory.mktemp("fuzz"), limits=limits)


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    jobs=st.lists(mutated_job(), min_size=1, max_size=5),
    patches=st.lists(mutated_job(), max_size=3),
)
def test_mutated_examples_are_refused_or_handled(
    server: RunningServer,
    jobs: list[tuple[str, dict[str, Any]]],
    patches: list[tuple[str, dict[str, Any]]],
) -> None:
    raw = Raw(server)

    async def body(cluster: Cluster) -> None:
        stored: list[dict[str, Any]] = []
        for index, (kind, original) in enumerate(jobs):
            job = copy.deepcopy(original)
            plural = PLURALS[kind]
            meta = job.get("metadata")
            if isinstance(meta, dict):
                if isinstance(meta.get("name"), str):
                    meta["name"] = f"{meta['name'][:40]}-{index}"
                meta.pop("namespace", None)
            url = f"/apis/kubeflow.org/v1/namespaces/{cluster.namespace}/{plural}"
            code, answer = raw.send("POST", url, json.dumps(job).encode())
            assert code < 500, (code, answer, job)
            if code == 201:
                stored.append(answer)
            else:
                assert answer["kind"] == "Status", answer
        for job, (_, source) in zip(list(stored), patches, strict=False):
            # A merge patch of another mutated example's spec (replica types mix, fields
            # change type or vanish): judged by the update rules, never a 5xx.
            spec = source.get("spec")
            url = (
                f"/apis/kubeflow.org/v1/namespaces/{cluster.namespace}/"
                f"{PLURALS[job['kind']]}/{job['metadata']['name']}"
            )
            headers = {"Content-Type": "application/merge-patch+json"}
            patch = json.dumps({"spec": spec}).encode()
            code, answer = raw.send("PATCH", url, patch, headers)
            assert code < 500, (code, answer, spec)
            if code == 200:
                stored[stored.index(job)] = answer
        for job in stored:
            assert wire.check_job(job).ok, (wire.check_job(job).errors, job)
        await cluster.settle()
        await cluster.advance(1)
        events = await cluster.client.list(EVENTS, namespace=cluster.namespace)
        for job in stored:
            name, kind = job["metadata"]["name"], job["kind"]
            now = await cluster.job_now(kind, name)
            if (job["spec"].get("runPolicy") or {}).get("managedBy") not in (
                None,
                MANAGED_BY_VALUES[0],
            ):
                continue  # another controller's job: left alone, as upstream does
            conditions = (now.get("status") or {}).get("conditions") or []
            warned = [
                e
                for e in events.items
                if e.get("type") == "Warning" and e["involvedObject"].get("name") == name
            ]
            assert conditions or warned, (now, [e.get("message") for e in events.items])

    run_cluster(server, body)


def test_the_fuzz_starts_from_every_kind() -> None:
    assert {job["kind"] for job in EXAMPLES} == set(PLURALS)
    assert all(wire.check_job(job).ok for job in EXAMPLES)


def test_examples_are_stored_under_the_fuzz_limits(server: RunningServer) -> None:
    raw = Raw(server)
    for job in EXAMPLES:
        body = copy.deepcopy(job)
        body["metadata"] = {"name": f"ex-{uuid.uuid4().hex[:6]}"}
        url = f"/apis/kubeflow.org/v1/namespaces/default/{PLURALS[job['kind']]}"
        code, answer = raw.send("POST", url, json.dumps(body).encode())
        assert code == 201, answer
