"""A small kustomize: the subset of ``kustomize build`` that manifests/ uses, for tests.

No kustomize binary is published on PyPI (docs/design/020-deployment.md), so the tests render
the overlays with this. Supported kustomization fields, with kustomize v4/v5 semantics:
- ``resources``: YAML files (multi-document) and directories holding a kustomization;
- ``namespace``: set on every namespaced object (overriding any), and on the ServiceAccount
  subjects of (Cluster)RoleBindings that name a ServiceAccount of the build;
- ``labels`` (``pairs`` only, no ``includeSelectors``/``includeTemplates``): added to every
  object's ``metadata.labels``;
- ``images``: ``newName``/``newTag``/``digest`` for ``containers``/``initContainers`` anywhere.
Any other field raises ``UnsupportedError``, so a manifest can never use a feature this renderer
would silently ignore; ``test_manifests`` compares the result with a real kustomize when one
is given in ``$KUSTOMIZE``. Object order is not kustomize's (compare by identity).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

Obj = dict[str, Any]
# The CRDs are ~0.6 MB each: parse with libyaml when PyYAML has it (10x faster).
Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
FIELDS = frozenset({"apiVersion", "kind", "resources", "namespace", "labels", "images"})
CLUSTER_SCOPED = frozenset(
    {"Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding",
     "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"}
)  # fmt: skip
NAMESPACED = frozenset(
    {"ServiceAccount", "Role", "RoleBinding", "Deployment", "Service", "Secret", "ConfigMap"}
)


class UnsupportedError(Exception):
    """The kustomization uses something this renderer does not implement."""


def identity(obj: Obj) -> tuple[str, str, str]:
    meta = obj["metadata"]
    return (obj["kind"], meta.get("namespace", ""), meta["name"])


def build(directory: Path) -> list[Obj]:
    """The objects ``kustomize build directory`` would print."""
    kustomization: Obj = yaml.load((directory / "kustomization.yaml").read_text(), Loader) or {}
    unknown = set(kustomization) - FIELDS
    if unknown:
        raise UnsupportedError(f"{directory}: {sorted(unknown)}")
    objects = [
        obj for entry in kustomization.get("resources", []) for obj in _load(directory / entry)
    ]
    ids = [identity(obj) for obj in objects]
    if len(set(ids)) != len(ids):
        raise UnsupportedError(f"{directory}: duplicate objects")
    for entry in kustomization.get("labels", []):
        _add_labels(objects, entry)
    if "namespace" in kustomization:
        _set_namespace(objects, kustomization["namespace"])
    for image in kustomization.get("images", []):
        _set_image(objects, image)
    return objects


def _load(path: Path) -> list[Obj]:
    if path.is_dir():
        return build(path)
    return [doc for doc in yaml.load_all(path.read_text(), Loader) if doc]


def _add_labels(objects: list[Obj], entry: Obj) -> None:
    if set(entry) - {"pairs"}:
        raise UnsupportedError(f"labels options {sorted(set(entry) - {'pairs'})}")
    for obj in objects:
        obj["metadata"].setdefault("labels", {}).update(entry["pairs"])


def _set_namespace(objects: list[Obj], namespace: str) -> None:
    for obj in objects:
        if obj["kind"] in NAMESPACED:
            obj["metadata"]["namespace"] = namespace
        elif obj["kind"] not in CLUSTER_SCOPED:
            raise UnsupportedError(f"scope of {obj['kind']} unknown to the renderer")
    accounts = {o["metadata"]["name"]: o["metadata"]["namespace"] for o in objects
                if o["kind"] == "ServiceAccount"}  # fmt: skip
    for obj in objects:
        for subject in obj.get("subjects", []) if obj["kind"].endswith("RoleBinding") else []:
            if subject.get("kind") == "ServiceAccount" and subject["name"] in accounts:
                subject["namespace"] = accounts[subject["name"]]


def _containers(node: Any) -> Iterator[Obj]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("containers", "initContainers") and isinstance(value, list):
                yield from value
            else:
                yield from _containers(value)
    elif isinstance(node, list):
        for item in node:
            yield from _containers(item)


def split_image(image: str) -> tuple[str, str, str]:
    """(name, tag, digest) of an image reference; a registry port is not a tag."""
    name, _, digest = image.partition("@")
    slash = name.rfind("/")
    colon = name.rfind(":")
    if colon > slash:
        return name[:colon], name[colon + 1 :], digest
    return name, "", digest


def _set_image(objects: list[Obj], rule: Obj) -> None:
    if set(rule) - {"name", "newName", "newTag", "digest"}:
        raise UnsupportedError(f"images options {sorted(rule)}")
    for obj in objects:
        for container in _containers(obj):
            name, tag, digest = split_image(container.get("image", ""))
            if name != rule["name"]:
                continue
            if "digest" in rule:
                suffix = f"@{rule['digest']}"
            elif "newTag" in rule:
                suffix = f":{rule['newTag']}"
            else:
                suffix = (f":{tag}" if tag else "") + (f"@{digest}" if digest else "")
            container["image"] = rule.get("newName", name) + suffix
