"""Discovery documents: ``/version``, ``/api``, ``/apis``, group and group/version lists.

Built from the registry on every request, so a CRD is discoverable as soon as it is created.
Only the unaggregated documents are served (kubectl falls back to them when the aggregated
``apidiscovery.k8s.io/v2`` format is not answered). Pods and services are in the ``all``
category (``kubectl get all``). The OpenAPI documents are ``openapi``'s.
"""

from __future__ import annotations

from typing import Any

from trainop.cluster.apiserver.http import status
from trainop.cluster.apiserver.rest import resources

GIT_VERSION = "v1.31.0"
# What ``kubectl get all`` lists here (kube's "all" also has controllers trainop does not run).
ALL_CATEGORY = ("pods", "services")
STREAMS = {
    "exec": "PodExecOptions",
    "attach": "PodAttachOptions",
    "portforward": "PodPortForwardOptions",
}


def version() -> dict[str, Any]:
    """The ``/version`` document (the Kubernetes version whose schemas we validate with)."""
    return {
        "major": "1",
        "minor": "31",
        "gitVersion": GIT_VERSION,
        "gitCommit": "trainop-local",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "n/a",
        "compiler": "python",
        "platform": "local",
    }


def api_versions(address: str) -> dict[str, Any]:
    """``/api``: the core group's versions."""
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}],
    }


def _group(name: str, versions: list[str]) -> dict[str, Any]:
    entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": entries, "preferredVersion": entries[0]}


def api_groups(registry: resources.Registry) -> dict[str, Any]:
    """``/apis``: every named group and its versions."""
    groups = [_group(g, vs) for g, vs in registry.groups().items()]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(registry: resources.Registry, group: str) -> dict[str, Any]:
    """``/apis/GROUP``."""
    versions = registry.groups().get(group)
    if not versions:
        raise status.path_not_found(f"/apis/{group}")
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(group, versions)}


def resource_list(registry: resources.Registry, group: str, version: str) -> dict[str, Any]:
    """``/api/v1`` or ``/apis/GROUP/VERSION``: resources with verbs and subresources."""
    entries: list[dict[str, Any]] = []
    for rt in registry:
        if rt.group == group and rt.version == version:
            entries.extend(_entries(rt))
    if not entries:
        raise status.path_not_found(f"/apis/{group}/{version}")
    gv = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": entries}


def _entries(rt: resources.ResourceType) -> list[dict[str, Any]]:
    main: dict[str, Any] = {
        "name": rt.plural,
        "singularName": rt.singular,
        "namespaced": rt.namespaced,
        "kind": rt.kind,
        "verbs": list(rt.verbs),
    }
    if rt.short_names:
        main["shortNames"] = list(rt.short_names)
    categories = list(rt.categories)
    if rt.group == "" and rt.plural in ALL_CATEGORY:
        categories.append("all")
    if categories:
        main["categories"] = categories
    out = [main]
    for sub in rt.subresources:
        verbs = {
            "log": ["get"],
            "binding": ["create"],
            "token": ["create"],
            **{key: ["create", "get"] for key in STREAMS},
        }.get(sub, ["get", "patch", "update"])
        kind = {
            "scale": "Scale",
            "log": "Pod",
            "binding": "Binding",
            "token": "TokenRequest",
            **STREAMS,
        }.get(sub, rt.kind)
        entry: dict[str, Any] = {
            "name": f"{rt.plural}/{sub}",
            "singularName": "",
            "namespaced": rt.namespaced,
            "kind": kind,
            "verbs": verbs,
        }
        if sub == "scale":
            entry.update(group="autoscaling", version="v1")
        if sub == "token":
            entry.update(group="authentication.k8s.io", version="v1")
        out.append(entry)
    return out
