"""The test renderer itself: kustomize's semantics where manifests/ relies on them."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.unit.deploy import kustomize


def write(directory: Path, kustomization: dict[str, object], **files: object) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    for name, documents in files.items():
        (directory / name).write_text(yaml.safe_dump_all(documents))  # type: ignore[call-overload]
    return directory


POD_OWNER = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "d"},
    "spec": {"template": {"spec": {
        "initContainers": [{"name": "i", "image": "reg:5000/tool:1"}],
        "containers": [{"name": "c", "image": "app"}, {"name": "s", "image": "other:2"}],
    }}},
}  # fmt: skip


def test_an_overlay_sets_namespace_labels_and_images_through_a_base(tmp_path: Path) -> None:
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa"}}
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "b"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "r"},
        "subjects": [{"kind": "ServiceAccount", "name": "sa"},
                     {"kind": "ServiceAccount", "name": "elsewhere", "namespace": "x"}],
    }  # fmt: skip
    write(tmp_path / "base", {"resources": ["all.yaml"], "labels": [{"pairs": {"a": "b"}}]},
          **{"all.yaml": [account, binding, POD_OWNER]})  # fmt: skip
    images = [{"name": "app", "newTag": "1.0"}, {"name": "reg:5000/tool", "newName": "t"}]
    overlay = write(tmp_path / "overlay", {"namespace": "ns", "resources": ["../base"],
                                            "images": images})  # fmt: skip
    out = {obj["kind"]: obj for obj in kustomize.build(overlay)}
    assert out["ServiceAccount"]["metadata"] == {"name": "sa", "namespace": "ns",
                                                 "labels": {"a": "b"}}  # fmt: skip
    assert "namespace" not in out["ClusterRoleBinding"]["metadata"]
    assert [s.get("namespace") for s in out["ClusterRoleBinding"]["subjects"]] == ["ns", "x"]
    pod = out["Deployment"]["spec"]["template"]["spec"]
    assert [c["image"] for c in pod["initContainers"] + pod["containers"]] == [
        "t:1", "app:1.0", "other:2"
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("image", "parts"),
    [("app", ("app", "", "")), ("reg:5000/a/b:2", ("reg:5000/a/b", "2", "")),
     ("a:1@sha256:ff", ("a", "1", "sha256:ff"))],
)  # fmt: skip
def test_image_references_split_like_kustomize(image: str, parts: tuple[str, str, str]) -> None:
    assert kustomize.split_image(image) == parts


@pytest.mark.parametrize(
    "kustomization",
    [{"patches": []}, {"labels": [{"pairs": {"a": "b"}, "includeSelectors": True}]},
     {"resources": ["x.yaml"], "namespace": "n"}],
)  # fmt: skip
def test_anything_unimplemented_is_refused(
    tmp_path: Path, kustomization: dict[str, object]
) -> None:
    odd = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    write(tmp_path, kustomization, **{"x.yaml": [odd]})
    with pytest.raises(kustomize.UnsupportedError):
        kustomize.build(tmp_path)
