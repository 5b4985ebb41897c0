"""The sandbox's own checks, called directly: each holds even when validation was skipped."""

from __future__ import annotations

import base64
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from trainop.cluster.kubelet import sandbox
from trainop.cluster.kubelet.sandbox import Sandbox, SandboxError

UP = "../" * 40


@pytest.fixture
def box(tmp_path: Path) -> Sandbox:
    return Sandbox.of(tmp_path / "root", "ns", "pod", "uid")


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    path = tmp_path / "outside"
    path.mkdir()
    (path / "file").write_text("precious")
    return path


def pod_of(*volumes: dict[str, Any], containers: list[dict[str, Any]] | None = None) -> Any:
    spec = {"containers": containers or [{"name": "main"}], "volumes": list(volumes)}
    return {"metadata": {"name": "pod"}, "spec": spec}


def test_container_paths_are_normalised_as_inside_a_container() -> None:
    assert sandbox.container_path("/a/../../../etc") == "/etc"
    assert sandbox.container_path("//x/./y/") == "/x/y"
    assert sandbox.container_path("rel/../../z") == "/z"


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "../x", "a\0b"])
def test_a_name_is_one_path_component(box: Sandbox, name: str) -> None:
    for build in (box.volume, box.fs, box.logs):
        with pytest.raises(SandboxError, match="single path component"):
            build(name)


def test_prepare_refuses_what_kubernetes_refuses(box: Sandbox) -> None:
    pod = pod_of({"name": "../v", "emptyDir": {}})
    with pytest.raises(SandboxError, match=r"spec\.volumes\[0\]\.name"):
        sandbox.prepare(box, pod, {}, {})
    assert not box.path.exists()


def test_a_projected_key_never_leaves_the_volume(box: Sandbox, outside: Path) -> None:
    key = UP + str(outside / "file").lstrip("/")
    pod = pod_of({"name": "cfg", "configMap": {"name": "cm"}})
    with pytest.raises(SandboxError, match=r"must not contain '\.\.'"):
        sandbox.prepare(box, pod, {"cm": {"data": {key: "owned"}}}, {})
    assert (outside / "file").read_text() == "precious"


def test_a_projected_file_does_not_follow_a_planted_symlink(box: Sandbox, outside: Path) -> None:
    volume = box.volume("cfg")
    volume.mkdir(parents=True)
    (volume / "k").symlink_to(outside / "file")
    (volume / "sub").symlink_to(outside)
    items = [{"key": "k", "path": "k"}, {"key": "k", "path": "sub/k"}]
    pod = pod_of({"name": "cfg", "configMap": {"name": "cm", "items": items}})
    with pytest.raises(SandboxError, match="sub is not a directory"):
        sandbox.prepare(box, pod, {"cm": {"data": {"k": "owned"}}}, {})
    assert (outside / "file").read_text() == "precious"
    assert sorted(os.listdir(outside)) == ["file"]
    assert (volume / "k").read_text() == "owned"
    assert not (volume / "k").is_symlink()


def test_secret_files_keep_their_mode_inside_private_directories(box: Sandbox) -> None:
    secret = {"data": {"token": base64.b64encode(b"t").decode()}}
    pod = pod_of({"name": "sec", "secret": {"secretName": "s", "defaultMode": 0o440}})
    volumes = sandbox.prepare(box, pod, {}, {"s": secret})
    for _ in range(2):  # a retry rewrites a read-only file
        volumes = sandbox.prepare(box, pod, {}, {"s": secret})
    path = volumes["sec"] / "token"
    assert stat.S_IMODE(path.stat().st_mode) == 0o440
    for directory in (box.path, box.path / "volumes", volumes["sec"], box.home, box.tmp):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700, directory


@pytest.mark.parametrize(
    "context",
    [{"runAsUser": 1000}, {"runAsGroup": 3000}, {"fsGroup": 2000}],
)
def test_a_pod_run_as_another_user_gets_the_clusters_volume_modes(
    box: Sandbox, context: dict[str, Any]
) -> None:
    """The container runtimes' ``--user`` must reach its volumes: emptyDir 0777, configMap
    and secret 0755, inside the 0700 sandbox; the session's own uid changes nothing."""
    volumes = [{"name": "scratch", "emptyDir": {}}, {"name": "sec", "secret": {"secretName": "s"}}]
    secret = {"data": {"token": base64.b64encode(b"t").decode()}}
    as_user = pod_of(*volumes, containers=[{"name": "main", "securityContext": context}])
    found = sandbox.prepare(box, as_user, {}, {"s": secret})
    assert stat.S_IMODE(found["scratch"].stat().st_mode) == 0o777
    assert stat.S_IMODE(found["sec"].stat().st_mode) == 0o755
    assert stat.S_IMODE(box.path.stat().st_mode) == 0o700
    own = pod_of(*volumes)
    own["spec"]["securityContext"] = {"runAsUser": os.geteuid()}
    assert not sandbox.runs_as_another_user(own)
    assert sandbox.runs_as_another_user(as_user)


def test_a_sub_path_must_resolve_inside_its_volume(box: Sandbox, outside: Path) -> None:
    volume = box.volume("data")
    volume.mkdir(parents=True)
    (volume / "evil").symlink_to(outside)
    for sub, reason in (("evil/new", "outside the volume"), ("a/../../x", "must not contain")):
        container = {"name": "main", "volumeMounts": [{"name": "data", "mountPath": "/d"}]}
        container["volumeMounts"][0]["subPath"] = sub
        with pytest.raises(SandboxError, match=reason):
            sandbox.mount(box, container, {"data": volume})
    assert sorted(os.listdir(outside)) == ["file"]


def test_a_mount_never_replaces_an_existing_file(box: Sandbox, outside: Path) -> None:
    volume = box.volume("data")
    volume.mkdir(parents=True)
    (volume / "kept").write_text("mine")
    mounts = [
        {"name": "data", "mountPath": "/d"},
        {"name": "other", "mountPath": "/d/kept"},  # a file of the first volume
    ]
    other = box.volume("other")
    other.mkdir()
    with pytest.raises(SandboxError, match="already exists"):
        sandbox.mount(
            box, {"name": "main", "volumeMounts": mounts}, {"data": volume, "other": other}
        )
    assert (volume / "kept").read_text() == "mine"


def test_mounting_twice_is_idempotent(box: Sandbox) -> None:
    volume = box.volume("data")
    volume.mkdir(parents=True)
    container = {"name": "main", "volumeMounts": [{"name": "data", "mountPath": "/d/../x"}]}
    for _ in range(2):
        sandbox.mount(box, container, {"data": volume})
    assert os.readlink(box.fs("main") / "x") == str(volume)


def test_a_mount_inside_a_host_path_mount_is_refused(box: Sandbox, outside: Path) -> None:
    scratch = box.volume("scratch")
    scratch.mkdir(parents=True)
    mounts = [{"name": "scratch", "mountPath": "/h/new"}, {"name": "host", "mountPath": "/h"}]
    with pytest.raises(SandboxError, match="outside the pod sandbox"):
        sandbox.mount(
            box, {"name": "main", "volumeMounts": mounts}, {"host": outside, "scratch": scratch}
        )
    assert sorted(os.listdir(outside)) == ["file"]


def test_working_dir_is_created_only_inside_the_sandbox(box: Sandbox, outside: Path) -> None:
    default = Path("/")
    escaping = {"name": "main", "workingDir": "/" + UP + str(outside).lstrip("/") + "/new"}
    cwd = sandbox.working_dir(box, escaping, default)
    assert sandbox.is_within(cwd, box.path)
    assert cwd.is_dir()
    (box.fs("main") / "h").symlink_to(outside)  # as mount() links a hostPath volume
    through_host = {
        "name": "main",
        "workingDir": "/h/new",
        "volumeMounts": [{"name": "host", "mountPath": "/h"}],
    }
    with pytest.raises(SandboxError, match="outside the sandbox"):
        sandbox.working_dir(box, through_host, default)
    assert sorted(os.listdir(outside)) == ["file"]
