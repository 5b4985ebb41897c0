"""The sandbox is a boundary: no manifest makes the kubelet touch a file outside it.

Each test plants a decoy tree outside the kubelet's root, runs one hostile pod through the real
process kubelet and the embedded API server, and asserts that the decoy tree hashes the same
before and after, plus the pod's outcome. Names and paths that Kubernetes refuses may also be
refused by the API server's admission (then the pod never reaches the kubelet, and the decoy
still must not change); the kubelet's own checks are what these tests exercise otherwise.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pytest

from tests.integration.cluster.kubelet.conftest import Site
from tests.integration.cluster.kubelet.harness import Local, pod, py, run_local
from trainop import errors
from trainop.kube.client import Obj
from trainop.kube.resources import CONFIGMAPS

UP = "../" * 40  # more than enough to climb from any sandbox directory to /


def plant_decoy(tmp_path: Path) -> Path:
    decoy = tmp_path / "decoy"
    (decoy / "dir").mkdir(parents=True)
    (decoy / "victim.txt").write_text("precious")
    (decoy / "dir" / "nested.txt").write_text("also precious")
    (decoy / "secret.txt").write_text("s")
    (decoy / "secret.txt").chmod(0o600)
    return decoy


def tree_hash(root: Path) -> dict[str, tuple[str, int, str]]:
    """Every entry under ``root`` (symlinks not followed): kind, mode and content or target."""
    found: dict[str, tuple[str, int, str]] = {}
    for directory, dirs, files in os.walk(root, followlinks=False):
        for name in [*dirs, *files]:
            path = Path(directory) / name
            info = path.lstat()
            if path.is_symlink():
                found[str(path.relative_to(root))] = ("link", info.st_mode, os.readlink(path))
            elif path.is_dir():
                found[str(path.relative_to(root))] = ("dir", info.st_mode, "")
            else:
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
                found[str(path.relative_to(root))] = ("file", info.st_mode, digest)
    return found


def escape(decoy: Path, *rest: str) -> str:
    """A relative path that climbs out of the sandbox into ``decoy``."""
    return UP + str(decoy).lstrip("/") + "".join("/" + r for r in rest)


async def submit(env: Local, manifest: Obj, resource: Any = None) -> bool:
    """Create the object; False when the API server refuses it as invalid (422)."""
    try:
        await env.create(manifest) if resource is None else await env.create(manifest, resource)
    except errors.ApiError as exc:
        if exc.status != 422:
            raise
        return False
    return True


async def outcome(env: Local, name: str) -> dict[str, Any]:
    status: dict[str, Any] = (await env.phase(name, "Succeeded", "Failed"))["status"]
    return status


def check(site: Site, decoy: Path, body: Any, **options: Any) -> None:
    before = tree_hash(decoy)
    run_local(site.server, site.logs, site.root, body, **options)
    assert tree_hash(decoy) == before


def assert_config_error(status: dict[str, Any], *words: str) -> None:
    assert status["phase"] == "Failed", status
    assert status["reason"] == "CreateContainerConfigError", status
    for word in words:
        assert word in status["message"], status


def test_dotdot_in_mount_path_stays_inside_the_container_root(site: Site, tmp_path: Path) -> None:
    decoy = plant_decoy(tmp_path)
    mounted = "/" + escape(decoy, "victim.txt")
    code = "import os; print(os.path.isdir(os.environ['TRAINOP_ROOT'] + os.path.normpath(%r)))"
    container = py(code % mounted, volumeMounts=[{"name": "v", "mountPath": mounted}])
    manifest = pod("mount-up", container, volumes=[{"name": "v", "emptyDir": {}}])

    async def body(env: Local) -> None:
        if await submit(env, manifest):
            status = await outcome(env, "mount-up")
            assert status["phase"] == "Succeeded", status  # a container's /.. is /

    check(site, decoy, body)


def test_dotdot_in_sub_path_fails_the_pod(site: Site, tmp_path: Path) -> None:
    decoy = plant_decoy(tmp_path)
    mounts = [{"name": "v", "mountPath": "/data", "subPath": escape(decoy, "new")}]
    manifest = pod(
        "sub-up", py("pass", volumeMounts=mounts), volumes=[{"name": "v", "emptyDir": {}}]
    )

    async def body(env: Local) -> None:
        if await submit(env, manifest):
            assert_config_error(await outcome(env, "sub-up"), "subPath", "must not contain '..'")

    check(site, decoy, body)


def test_dotdot_in_a_config_map_key_writes_nothing_outside(site: Site, tmp_path: Path) -> None:
    decoy = plant_decoy(tmp_path)
    config_map = {"metadata": {"name": "evil-key"}, "data": {escape(decoy, "victim.txt"): "owned"}}
    volumes = [{"name": "cfg", "configMap": {"name": "evil-key"}}]
    container = py("pass", volumeMounts=[{"name": "cfg", "mountPath": "/cfg"}])
    manifest = pod("key-up", container, volumes=volumes)

    async def body(env: Local) -> None:
        if await submit(env, config_map, CONFIGMAPS):
            await env.create(manifest)
            assert_config_error(await outcome(env, "key-up"), "must not contain '..'")

    check(site, decoy, body, config_timeout=1.0)


def test_dotdot_in_items_path_fails_the_pod(site: Site, tmp_path: Path) -> None:
    decoy = plant_decoy(tmp_path)
    items = [{"key": "k", "path": escape(decoy, "victim.txt")}]
    volumes = [{"name": "cfg", "configMap": {"name": "items-cm", "items": items}}]
    container = py("pass", volumeMounts=[{"name": "cfg", "mountPath": "/cfg"}])
    manifest = pod("items-up", container, volumes=volumes)

    async def body(env: Local) -> None:
        await env.create({"metadata": {"name": "items-cm"}, "data": {"k": "owned"}}, CONFIGMAPS)
        if await submit(env, manifest):
            assert_config_error(await outcome(env, "items-up"), "path", "must not contain '..'")

    check(site, decoy, body)


def test_dotdot_in_working_dir_stays_inside_the_container_root(site: Site, tmp_path: Path) -> None:
    decoy = plant_decoy(tmp_path)
    wanted = "/" + escape(decoy, "made-by-kubelet")
    code = "import os; assert os.getcwd().startswith(os.environ['TRAINOP_ROOT']), os.getcwd()"
    manifest = pod("cwd-up", py(code, workingDir=wanted))

    async def body(env: Local) -> None:
        if await submit(env, manifest):
            status = await outcome(env, "cwd-up")
            assert status["phase"] == "Succeeded", status

    check(site, decoy, body)


@pytest.mark.parametrize("where", ["containers", "initContainers"])
def test_dotdot_in_a_container_name_fails_the_pod(site: Site, tmp_path: Path, where: str) -> None:
    decoy = plant_decoy(tmp_path)
    evil = py("pass", name=escape(decoy, "made-by-container"))
    spec: dict[str, Any] = {"initContainers": [evil]} if where == "initContainers" else {}
    manifest = pod(f"name-up-{where.lower()}", *([py("pass")] if spec else [evil]), **spec)

    async def body(env: Local) -> None:
        if await submit(env, manifest):
            status = await outcome(env, manifest["metadata"]["name"])
            assert_config_error(status, "name", "RFC 1123 label")

    check(site, decoy, body)


def test_dotdot_in_a_volume_name_fails_the_pod(site: Site, tmp_path: Path) -> None:
    decoy = plant_decoy(tmp_path)
    name = escape(decoy, "made-by-volume")
    manifest = pod(
        "vol-up",
        py("pass", volumeMounts=[{"name": name, "mountPath": "/v"}]),
        volumes=[{"name": name, "emptyDir": {}}],
    )

    async def body(env: Local) -> None:
        if await submit(env, manifest):
            assert_config_error(await outcome(env, "vol-up"), "volumes[0].name")

    check(site, decoy, body)


def test_a_mount_path_never_replaces_an_existing_file(site: Site, tmp_path: Path) -> None:
    decoy = plant_decoy(tmp_path)
    mounts = [
        {"name": "host", "mountPath": "/host"},
        {"name": "scratch", "mountPath": "/host/victim.txt"},
    ]
    volumes = [
        {"name": "host", "hostPath": {"path": str(decoy), "type": "Directory"}},
        {"name": "scratch", "emptyDir": {}},
    ]
    manifest = pod("clobber", py("pass", volumeMounts=mounts), volumes=volumes)

    async def body(env: Local) -> None:
        await env.create(manifest)
        assert_config_error(await outcome(env, "clobber"), "/host/victim.txt")

    check(site, decoy, body, config_timeout=1.0)


def test_a_sub_path_does_not_follow_a_planted_symlink_out(site: Site, tmp_path: Path) -> None:
    decoy = plant_decoy(tmp_path)
    volumes = [
        {"name": "data", "emptyDir": {}},
        {"name": "late", "configMap": {"name": "late"}},  # missing at first: the pod waits
    ]
    mounts = [
        {"name": "data", "mountPath": "/data", "subPath": "evil/made-by-kubelet"},
        {"name": "late", "mountPath": "/late"},
    ]
    manifest = pod("planted", py("pass", volumeMounts=mounts), volumes=volumes)

    async def body(env: Local) -> None:
        created = await env.create(manifest)
        await env.wait("planted", waiting_for_config)
        uid = created["metadata"]["uid"]
        volume = site.root / env.namespace / "planted" / uid / "volumes" / "data"
        (volume / "evil").symlink_to(decoy)  # as a container could have done earlier
        await env.create({"metadata": {"name": "late"}, "data": {"k": "v"}}, CONFIGMAPS)
        assert_config_error(await outcome(env, "planted"), "subPath", "evil/made-by-kubelet")

    check(site, decoy, body, config_timeout=4.0)


def waiting_for_config(found: Obj) -> bool:
    statuses = (found.get("status") or {}).get("containerStatuses") or []
    return any(
        ((s.get("state") or {}).get("waiting") or {}).get("reason") == "CreateContainerConfigError"
        for s in statuses
    )


def test_the_decoy_hash_sees_a_change(tmp_path: Path) -> None:
    """The detector itself: a deleted, rewritten or added entry changes the hash."""
    decoy = plant_decoy(tmp_path)
    before = tree_hash(decoy)
    for change in (
        lambda: (decoy / "victim.txt").write_text("owned"),
        lambda: (decoy / "new").mkdir(),
        lambda: (decoy / "secret.txt").chmod(0o644),
    ):
        change()
        assert tree_hash(decoy) != before
        before = tree_hash(decoy)
