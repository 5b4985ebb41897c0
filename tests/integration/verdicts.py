"""Mutated example manifests and the verdicts of ``trainop validate`` and the API server.

Shared by the one-verdict fuzz test (``test_one_verdict.py``) and anyone who wants to count
disagreements over many cases. ``mutated_manifests()`` draws (an example job from
``examples/``, mutated 1-3 times; a field-validation mode): a value anywhere replaced by any
JSON value, a value of the same type, an integer at the edge of int32/int64 or a whole-number
float, a field removed, or an unknown field added. ``validate_verdict`` runs ``trainop
validate`` in-process through click's runner; ``server_verdict`` creates the job with
``dryRun=All`` through the embedded API server's real HTTP endpoint, as kubectl would.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner
from hypothesis import strategies as st

from tests.integration.cluster.apiserver.test_bad_input import Raw
from trainop.api.kinds import KINDS
from trainop.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
PLURALS = {info.kind: info.plural for info in KINDS}
SERVED = {
    (info.kind, f"kubeflow.org/{version}")
    for info in KINDS
    for version in ("v1", *(v.name for v in info.other_versions))
}
MODES = ("Strict", "Warn", "Ignore")
NAMESPACE = "default"


def examples() -> list[dict[str, Any]]:
    """Every training job of every YAML file under ``examples/`` (v1 and MPIJob v2beta1)."""
    found = []
    for path in sorted(ROOT.glob("examples/**/*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            if isinstance(document, dict) and _served(document):
                found.append(document)
    return found


def _served(document: dict[str, Any]) -> bool:
    kind, version = document.get("kind"), document.get("apiVersion")
    return isinstance(kind, str) and isinstance(version, str) and (kind, version) in SERVED


EXAMPLES = examples()


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path to a value inside ``value`` (map keys and list indexes)."""
    if isinstance(value, dict):
        for key, child in value.items():
            yield (*prefix, key)
            yield from paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield (*prefix, index)
            yield from paths(child, (*prefix, index))


DELETE = object()
EDGES = [2**31 - 1, 2**31, -(2**31) - 1, 2**53 + 1, 2**63 - 1, 2**63, -(2**63) - 1, 1e300]
SCALARS = (
    st.none()
    | st.booleans()
    | st.sampled_from([-1, 0, 1, 2, 3, 10**9, 1.5, 2.0, *EDGES])
    | st.text(max_size=6)
    | st.sampled_from(["Never", "OnFailure", "ExitCode", "Always", "", "..", "Worker", "-x", "1"])
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=5), inner, max_size=2)
    ),
    max_leaves=4,
)
UNKNOWN_KEYS = st.sampled_from(["foo", "replica", "Replicas", "restart_policy", "x-y", ""])


def _like(value: Any) -> st.SearchStrategy[Any]:
    """Values of the same type as ``value`` (mutations that keep a job plausible)."""
    if isinstance(value, bool):
        return st.booleans()
    if isinstance(value, int):
        return st.integers(-2, 9) | st.sampled_from([*EDGES, float(value)])
    if isinstance(value, str):
        return st.text(max_size=8) | st.sampled_from(["", "..", "a/b", "Never", "x" * 70])
    return VALUES


def value_at(job: Any, where: tuple[Any, ...]) -> Any:
    """The value at ``where`` in ``job``, or None where the way there is gone."""
    value = job
    for part in where:
        try:
            value = value[part]
        except (KeyError, IndexError, TypeError):
            return None
    return value


def set_at(job: Any, where: tuple[Any, ...], value: Any) -> None:
    """Set (or, with ``DELETE``, remove) the value at ``where``; nothing where the way is gone."""
    parent = value_at(job, where[:-1])
    last = where[-1]
    if isinstance(parent, dict) or (isinstance(parent, list) and isinstance(last, int)):
        try:
            if value is DELETE:
                del parent[last]
            else:
                parent[last] = value
        except (KeyError, IndexError):
            return


@st.composite
def mutated_manifests(draw: st.DrawFn) -> tuple[dict[str, Any], str]:
    """(a mutated example job, a fieldValidation mode)."""
    job = copy.deepcopy(draw(st.sampled_from(EXAMPLES)))
    for _ in range(draw(st.integers(1, 3))):
        everywhere = list(paths(job))
        if not everywhere:
            break
        in_spec = [p for p in everywhere if p[0] == "spec"] or everywhere
        where = draw(st.sampled_from(in_spec if draw(st.integers(0, 9)) else everywhere))
        if draw(st.integers(0, 5)) == 0:
            parent = value_at(job, where)
            if isinstance(parent, dict):
                parent[draw(UNKNOWN_KEYS)] = draw(VALUES)
                continue
        set_at(job, where, draw(st.just(DELETE) | VALUES | _like(value_at(job, where))))
    return job, draw(st.sampled_from(MODES))


@dataclass(frozen=True)
class Verdict:
    """Accepted or not, and what was said (for the report of a disagreement)."""

    accepted: bool
    said: str
    answer: Any = None  # the server's body: the object it would store, or a Status


# kube's field.ErrorType phrases, one of which follows the path of every field error line
_PHRASES = (
    r"(Required value|Invalid value|Unsupported value|Duplicate value|Not found|Forbidden|"
    r"Too long|Too many|Internal error)(: |$)"
)


def validate_verdict(job: dict[str, Any], mode: str | None, tmp: Path) -> Verdict:
    """``trainop validate`` on ``job`` (as a YAML file); it must exit 0 or 2, never raise,
    and every line of a refusal must name a field."""
    path = tmp / "job.yaml"
    path.write_text(yaml.safe_dump(job, allow_unicode=True))
    args = ["validate", "-f", str(path)]
    if mode is not None:
        args += ["--field-validation", mode]
    result = CliRunner().invoke(main, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        result.exc_info,
        job,
    )
    output = result.output
    assert result.exit_code in (0, 2), (result.exit_code, output, job)
    if result.exit_code == 2:
        field_line = re.compile(re.escape(str(path)) + r": (?P<path>.+?): " + _PHRASES)
        errors = [line for line in output.split("\n") if line.startswith(str(path))]
        assert errors, (output, job)
        assert all(field_line.match(line) for line in errors), (output, job)
    return Verdict(result.exit_code == 0, output)


def server_verdict(raw: Raw, job: dict[str, Any], mode: str | None) -> Verdict:
    """A ``dryRun=All`` create of ``job`` at the endpoint its kind and apiVersion name (the
    first example's endpoint when they name none); never a 5xx."""
    body = copy.deepcopy(job)
    meta = body.get("metadata")
    if isinstance(meta, dict) and isinstance(meta.get("namespace"), str) and meta["namespace"]:
        meta["namespace"] = NAMESPACE  # kubectl posts to the namespace the manifest names
    kind, version = (
        (body["kind"], body["apiVersion"])
        if _served(body)
        else (EXAMPLES[0]["kind"], EXAMPLES[0]["apiVersion"])
    )
    query = "dryRun=All" + (f"&fieldValidation={mode}" if mode else "")
    url = f"/apis/{version}/namespaces/{NAMESPACE}/{PLURALS[kind]}?{query}"
    code, answer = raw.send("POST", url, json.dumps(body).encode())
    assert code < 500, (code, answer, job)
    return Verdict(code in (200, 201), json.dumps(answer)[:2000], answer)
