"""``persistentVolumeClaim`` volumes in the kubelet: lookup, sandbox, read-only copies."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from trainop.cluster.kubelet import claims, sandbox
from trainop.cluster.kubelet.environment import ConfigError
from trainop.kube.fake import FakeClient

Obj = dict[str, Any]


def pod(*volumes: Obj, mounts: list[Obj] | None = None) -> Obj:
    container = {"name": "main", "image": "i", "volumeMounts": mounts or []}
    meta = {"name": "p", "namespace": "ns"}
    return {"metadata": meta, "spec": {"containers": [container], "volumes": list(volumes)}}


def claim_volume(name: str, claim_name: str, **extra: Any) -> Obj:
    return {"name": name, "persistentVolumeClaim": {"claimName": claim_name, **extra}}


async def resolved(client: FakeClient, manifest: Obj) -> dict[str, Path | str]:
    return await claims.resolve(client, manifest)


def test_resolve_answers_the_bound_volumes_directory_or_kubelets_reason(tmp_path: Path) -> None:
    client = FakeClient()

    async def body() -> dict[str, Path | str]:
        bound = {"metadata": {"name": "good", "namespace": "ns"},
                 "spec": {"volumeName": "pv-good"}, "status": {"phase": "Bound"}}  # fmt: skip
        made = await client.create(claims.CLAIMS, bound, namespace="ns")
        ref = {"namespace": "ns", "name": "good", "uid": made["metadata"]["uid"]}
        volume = {"metadata": {"name": "pv-good"},
                  "spec": {"hostPath": {"path": str(tmp_path)}, "claimRef": ref}}  # fmt: skip
        await client.create(claims.VOLUMES, volume)
        pending = {"metadata": {"name": "later", "namespace": "ns"}, "spec": {},
                   "status": {"phase": "Pending"}}  # fmt: skip
        await client.create(claims.CLAIMS, pending, namespace="ns")
        lost = {"metadata": {"name": "lost", "namespace": "ns"}, "spec": {"volumeName": "gone"},
                "status": {"phase": "Bound"}}  # fmt: skip
        await client.create(claims.CLAIMS, lost, namespace="ns")
        manifest = pod(
            *(claim_volume(f"v{i}", n) for i, n in enumerate(["good", "later", "nope", "lost"]))
        )
        return await resolved(client, manifest)

    found = asyncio.run(body())
    assert found["good"] == tmp_path
    assert found["later"] == (
        'error processing PVC ns/later: PVC ns/later has non-bound phase ("Pending") '
        'or empty pvc.Spec.VolumeName ("")'
    )
    assert found["nope"] == (
        "error processing PVC ns/nope: failed to fetch PVC from API server: "
        'persistentvolumeclaims "nope" not found'
    )
    assert found["lost"] == (
        "error processing PVC ns/lost: failed to fetch PV gone from API server: "
        'persistentvolumes "gone" not found'
    )


def test_prepare_mounts_a_claims_directory_and_refuses_an_unusable_one(tmp_path: Path) -> None:
    data = tmp_path / "claim"
    data.mkdir()
    box = sandbox.Sandbox(tmp_path / "pod")
    manifest = pod(claim_volume("data", "c"))
    assert sandbox.prepare(box, manifest, {}, {}, {"c": data}) == {"data": data}
    with pytest.raises(ConfigError, match="not bound"):
        sandbox.prepare(box, manifest, {}, {}, {"c": "PVC ns/c is not bound"})
    with pytest.raises(ConfigError, match='persistentvolumeclaim "c" not found'):
        sandbox.prepare(box, manifest, {}, {}, {})
    with pytest.raises(ConfigError, match="does not exist"):
        sandbox.prepare(box, manifest, {}, {}, {"c": tmp_path / "missing"})


def test_a_read_only_claim_volume_makes_every_mount_of_it_read_only() -> None:
    manifest = pod(claim_volume("ro", "c", readOnly=True), claim_volume("rw", "d"))
    mounts = [{"name": "ro", "mountPath": "/a"}, {"name": "rw", "mountPath": "/b"}]
    container = {"name": "main", "volumeMounts": mounts}
    changed = claims.read_only_mounts(manifest, container)
    assert changed["volumeMounts"] == [
        {"name": "ro", "mountPath": "/a", "readOnly": True},
        {"name": "rw", "mountPath": "/b"},
    ]
    assert container["volumeMounts"][0] == {"name": "ro", "mountPath": "/a"}  # not changed
    plain = {"name": "main", "volumeMounts": [mounts[1]]}
    assert claims.read_only_mounts(manifest, plain) is plain
    assert claims.claim_volumes(manifest) == {"ro", "rw"}


def test_a_read_only_mount_of_a_claim_links_a_copy_without_write_permission(tmp_path: Path) -> None:
    data = tmp_path / "claim"
    (data / "sub").mkdir(parents=True)
    (data / "sub" / "f").write_text("original")
    (data / "escape").symlink_to("/etc")
    box = sandbox.Sandbox(tmp_path / "pod")
    mounts = [{"name": "data", "mountPath": "/ro", "readOnly": True},
              {"name": "data", "mountPath": "/rw"}]  # fmt: skip
    manifest = pod(claim_volume("data", "c"), mounts=mounts)
    volumes = sandbox.prepare(box, manifest, {}, {}, {"c": data})
    container = manifest["spec"]["containers"][0]
    sandbox.mount(box, container, volumes, claims.claim_volumes(manifest))
    view = Path(os.path.realpath(box.mapped("main", "/ro")))
    assert view != data
    assert (view / "sub" / "f").read_text() == "original"
    assert os.readlink(view / "escape") == "/etc"  # copied as a link, not followed
    assert not (view / "sub" / "f").stat().st_mode & 0o222
    assert not (view / "sub").stat().st_mode & 0o222
    assert Path(os.path.realpath(box.mapped("main", "/rw"))) == data  # the claim itself
    if os.geteuid() != 0:  # root ignores permissions; the copy still keeps the claim intact
        with pytest.raises(PermissionError):
            (view / "sub" / "f").write_text("changed")
    box.remove()
    assert not box.path.exists()
    assert (data / "sub" / "f").read_text() == "original"
