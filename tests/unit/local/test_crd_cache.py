"""The on-disk cache of a local session's CRDs: a hit is what a build gives, any change of input
or a broken file builds afresh, and a cache that cannot be written is no error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from trainop.local import crd_cache


class CountingBuild:
    def __init__(self, result: list[dict[str, Any]]) -> None:
        self.result, self.calls = result, 0

    def __call__(self) -> list[dict[str, Any]]:
        self.calls += 1
        return json.loads(json.dumps(self.result))


CRDS = [{"kind": "CustomResourceDefinition", "metadata": {"name": "pytorchjobs.kubeflow.org"}}]


def test_second_session_reads_what_the_first_built(tmp_path: Path) -> None:
    build = CountingBuild(CRDS)
    assert crd_cache.session_crds(tmp_path, build=build) == CRDS
    assert crd_cache.session_crds(tmp_path, build=build) == CRDS
    assert build.calls == 1
    assert [p.name for p in tmp_path.iterdir()] == [f"crds-{crd_cache.inputs_digest()}.json"]


def test_each_hit_is_a_fresh_tree(tmp_path: Path) -> None:
    crd_cache.session_crds(tmp_path, build=CountingBuild(CRDS))
    first = crd_cache.session_crds(tmp_path, build=CountingBuild(CRDS))
    first[0]["metadata"]["resourceVersion"] = "7"  # what install does on AlreadyExists
    assert crd_cache.session_crds(tmp_path, build=CountingBuild(CRDS)) == CRDS


def test_a_broken_file_is_rebuilt_and_replaced(tmp_path: Path) -> None:
    path = tmp_path / f"crds-{crd_cache.inputs_digest()}.json"
    path.write_text('[{"kind": "Custom')
    build = CountingBuild(CRDS)
    assert crd_cache.session_crds(tmp_path, build=build) == CRDS
    assert build.calls == 1
    assert json.loads(path.read_text()) == CRDS


def test_an_unwritable_cache_still_builds(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    build = CountingBuild(CRDS)
    assert crd_cache.session_crds(blocked / "cache", build=build) == CRDS
    assert crd_cache.session_crds(blocked / "cache", build=build) == CRDS
    assert build.calls == 2


def test_the_digest_follows_the_api_sources(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    before = crd_cache.inputs_digest()
    fake = tmp_path / "trainop" / "api"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    monkeypatch.setattr(crd_cache.trainop.api, "__file__", str(fake / "__init__.py"))
    changed = crd_cache.inputs_digest()
    (fake / "models.py").write_text("X = 1\n")
    assert len({before, changed, crd_cache.inputs_digest()}) == 3


def test_cache_dir_honours_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TRAINOP_CACHE_DIR", str(tmp_path / "mine"))
    assert crd_cache.cache_dir() == tmp_path / "mine"
    monkeypatch.delenv("TRAINOP_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert crd_cache.cache_dir() == tmp_path / "xdg" / "trainop"


def test_the_real_build_is_what_a_hit_returns(tmp_path: Path) -> None:
    built = crd_cache.session_crds(tmp_path)
    names = [crd["metadata"]["name"] for crd in built]
    assert "pytorchjobs.kubeflow.org" in names
    assert "trainjobs.trainer.kubeflow.org" in names
    assert len(names) == len(set(names))
    assert crd_cache.session_crds(tmp_path) == crd_cache.build_session_crds()
