"""A small kustomize: the subset of ``kustomize build`` that manifests/ uses, for tests.

No kustomize binary is published on PyPI (docs/design/020-deployment.md), so the tests render
the overlays with this. Supported kustomization fields, with kustomize v4/v5 semantics:
- ``resources``: YAML files (multi-document) and directories holding a kustomization;
- ``namespace``: set on every namespaced object (overriding any), and on the ServiceAccount
  subjects of (Cluster)RoleBindings that name a ServiceAccount of the build;
- ``labels`` (``pairs`` only, no ``includeSelectors``/``includeTemplates``): added to every
  object's ``metadata.labels``;
- ``images``: ``newName``/``newTag``/``digest`` for ``containers``/``initContainers`` anywhere;
- ``patches``: JSON 6902 patches (``op`` ``add``, ``replace`` or ``remove``; ``-`` appends to a
  list), inline (``patch``) or from a file (``path``), applied to the objects of the build that
  match ``target``'s ``kind``, ``name`` and ``namespace`` (those given); a patch must match at
  least one object, as kustomize requires.
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
FIELDS = frozenset({"apiVersion", "kind", "resources", "namespace", "labels", "images", "patches"})
TARGET_FIELDS = frozenset({"kind", "name", "namespace"})
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
    for patch in kustomization.get("patches", []):
        _patch(directory, objects, patch)
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


def _patch(directory: Path, objects: list[Obj], entry: Obj) -> None:
    if set(entry) - {"path", "patch", "target"} or set(entry.get("target", {})) - TARGET_FIELDS:
        raise UnsupportedError(f"{directory}: patch options {sorted(entry)}")
    text = entry["patch"] if "patch" in entry else (directory / entry["path"]).read_text()
    operations = yaml.load(text, Loader)
    if not isinstance(operations, list):
        raise UnsupportedError(f"{directory}: only JSON 6902 patches (a list of operations)")
    target = entry.get("target", {})
    matched = [o for o in objects if all(_field(o, k) == v for k, v in target.items())]
    if not matched:
        raise UnsupportedError(f"{directory}: no object matches patch target {target}")
    for obj in matched:
        for operation in operations:
            _apply(obj, operation)


def _field(obj: Obj, name: str) -> Any:
    return obj["kind"] if name == "kind" else obj["metadata"].get(name, "")


def _apply(obj: Obj, operation: Obj) -> None:
    """One JSON 6902 operation (RFC 6902 sections 4.1-4.3) on ``obj``, in place."""
    op = operation["op"]
    if op not in ("add", "replace", "remove"):
        raise UnsupportedError(f"JSON 6902 op {op}")
    *parents, last = [
        part.replace("~1", "/").replace("~0", "~") for part in operation["path"].split("/")[1:]
    ]
    node: Any = obj
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if isinstance(node, list):
        index = len(node) if last == "-" else int(last)
        if op != "add":
            node.pop(index)  # IndexError when missing, as kustomize fails
        if op != "remove":
            node.insert(index, operation["value"])
    elif op == "remove":
        del node[last]  # KeyError when missing, as kustomize fails
    elif op == "replace" and last not in node:
        raise KeyError(f"replace of missing {operation['path']}")
    else:
        node[last] = operation["value"]
