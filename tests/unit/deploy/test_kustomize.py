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


def test_json_6902_patches_add_replace_and_remove_on_their_target_only(tmp_path: Path) -> None:
    other = {**POD_OWNER, "metadata": {"name": "other"}}
    write(tmp_path / "base", {"resources": ["all.yaml"]}, **{"all.yaml": [POD_OWNER, other]})
    operations = [
        {"op": "add", "path": "/spec/template/spec/containers/0/args", "value": ["--a"]},
        {"op": "add", "path": "/spec/template/spec/containers/0/args/-", "value": "--b"},
        {"op": "add", "path": "/spec/template/spec/containers/0/args/0", "value": "--first"},
        {"op": "replace", "path": "/spec/template/spec/containers/1/image", "value": "new:3"},
        {"op": "remove", "path": "/spec/template/spec/initContainers"},
        {"op": "add", "path": "/metadata/annotations", "value": {"x~y/z": "1"}},
        {"op": "replace", "path": "/metadata/annotations/x~0y~1z", "value": "2"},
    ]
    (tmp_path / "ops.yaml").write_text(yaml.safe_dump(operations))
    target = {"kind": "Deployment", "name": "d"}
    overlay = write(tmp_path, {"resources": ["base"],
                               "patches": [{"path": "ops.yaml", "target": target}]})  # fmt: skip
    out = {obj["metadata"]["name"]: obj for obj in kustomize.build(overlay)}
    pod = out["d"]["spec"]["template"]["spec"]
    assert pod == {"containers": [{"name": "c", "image": "app", "args": ["--first", "--a", "--b"]},
                                  {"name": "s", "image": "new:3"}]}  # fmt: skip
    assert out["d"]["metadata"]["annotations"] == {"x~y/z": "2"}
    assert out["other"] == other, "only the target is patched"


def test_a_patch_that_matches_nothing_or_misses_its_path_fails(tmp_path: Path) -> None:
    write(tmp_path, {"resources": ["x.yaml"],
                     "patches": [{"patch": "[]", "target": {"name": "nobody"}}]},
          **{"x.yaml": [POD_OWNER]})  # fmt: skip
    with pytest.raises(kustomize.UnsupportedError, match="no object matches"):
        kustomize.build(tmp_path)
    missing = "[{op: replace, path: /spec/replicas, value: 2}]"
    write(tmp_path, {"resources": ["x.yaml"], "patches": [{"patch": missing}]})
    with pytest.raises(KeyError):
        kustomize.build(tmp_path)


@pytest.mark.parametrize(
    ("image", "parts"),
    [("app", ("app", "", "")), ("reg:5000/a/b:2", ("reg:5000/a/b", "2", "")),
     ("a:1@sha256:ff", ("a", "1", "sha256:ff"))],
)  # fmt: skip
def test_image_references_split_like_kustomize(image: str, parts: tuple[str, str, str]) -> None:
    assert kustomize.split_image(image) == parts


@pytest.mark.parametrize(
    "kustomization",
    [{"replicas": []}, {"labels": [{"pairs": {"a": "b"}, "includeSelectors": True}]},
     {"resources": ["x.yaml"], "namespace": "n"},
     {"resources": ["x.yaml"], "patches": [{"patch": "kind: Widget\nmetadata: {name: w}"}]},
     {"resources": ["x.yaml"], "patches": [{"patch": "[]", "target": {"kind": "Gadget"}}]},
     {"resources": ["x.yaml"],
      "patches": [{"patch": "[]", "target": {"kind": "Widget", "labelSelector": "a=b"}}]},
     {"resources": ["x.yaml"], "patches": [{"patch": "[{op: move, from: /a, path: /b}]"}]}],
)  # fmt: skip
def test_anything_unimplemented_is_refused(
    tmp_path: Path, kustomization: dict[str, object]
) -> None:
    odd = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    write(tmp_path, kustomization, **{"x.yaml": [odd]})
    with pytest.raises(kustomize.UnsupportedError):
        kustomize.build(tmp_path)
