"""CustomResourceDefinitions: accept them, then serve their resources generically.

Role: when a CRD is written, check the parts kube-apiserver insists on (name is
``<plural>.<group>``, exactly one storage version, a scope, names), mark it ``Established``
and ``NamesAccepted`` at once (there is no separate controller to wait for), and register
one ``ResourceType`` plus one ``CustomSchema`` per served version. Deleting a CRD stops
serving it; its objects are removed by the deletion handler. At start-up every stored CRD is
installed again.

Versions share storage; no conversion webhook is called: an object read through another
version only has its ``apiVersion`` changed (conversion strategy ``None``).
"""

from __future__ import annotations

from typing import Any

from trainop.cluster.apiserver.admission import crdschema
from trainop.cluster.apiserver.rest import resources
from trainop.cluster.apiserver.rest.call import ApiState
from trainop.errors import FieldError

CRD_STORE_KEY = "apiextensions.k8s.io/customresourcedefinitions"


def errors(obj: dict[str, Any]) -> list[FieldError]:
    """CRD rules beyond its JSON schema."""
    spec = obj.get("spec") or {}
    names = spec.get("names") or {}
    out: list[FieldError] = []
    plural, group = names.get("plural"), spec.get("group")
    if obj.get("metadata", {}).get("name") != f"{plural}.{group}":
        out.append(
            FieldError(
                path="metadata.name",
                type="Invalid",
                detail='must be spec.names.plural+"."+spec.group',
                value=obj.get("metadata", {}).get("name"),
            )
        )
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        out.append(
            FieldError(
                path="spec.scope",
                type="NotSupported",
                detail='supported values: "Cluster", "Namespaced"',
                value=spec.get("scope"),
            )
        )
    versions = spec.get("versions") or []
    if sum(1 for v in versions if v.get("storage")) != 1:
        out.append(
            FieldError(
                path="spec.versions",
                type="Invalid",
                detail="must have exactly one version marked as storage version",
            )
        )
    if not names.get("kind"):
        out.append(FieldError(path="spec.names.kind", type="Required", detail="Required value"))
    return out


def accept(obj: dict[str, Any]) -> None:
    """Set the status a CRD gets once established (in place)."""
    spec = obj["spec"]
    names = dict(spec["names"])
    names.setdefault("singular", names["kind"].lower())
    names.setdefault("listKind", f"{names['kind']}List")
    condition = {"status": "True", "lastTransitionTime": obj["metadata"]["creationTimestamp"]}
    obj["status"] = {
        "acceptedNames": names,
        "storedVersions": [v["name"] for v in spec["versions"] if v.get("storage")],
        "conditions": [
            {
                **condition,
                "type": "NamesAccepted",
                "reason": "NoConflicts",
                "message": "no conflicts found",
            },
            {
                **condition,
                "type": "Established",
                "reason": "InitialNamesAccepted",
                "message": "the initial names have been accepted",
            },
        ],
    }


def install(state: ApiState, obj: dict[str, Any]) -> None:
    """Serve every served version of the CRD ``obj`` (replacing older definitions)."""
    spec = obj["spec"]
    names, group = spec["names"], spec["group"]
    state.registry.remove_group_resource(group=group, plural=names["plural"])
    for version in spec.get("versions") or []:
        if not version.get("served", True):
            continue
        rt = _resource_type(group, names, spec["scope"] == "Namespaced", version)
        state.registry.add(rt)
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        key = (group, version["name"], names["plural"])
        if schema:
            state.schemas[key] = crdschema.CustomSchema(schema)
        else:
            state.schemas.pop(key, None)


def uninstall(state: ApiState, obj: dict[str, Any]) -> None:
    """Stop serving the resource of CRD ``obj``."""
    spec = obj["spec"]
    plural, group = spec["names"]["plural"], spec["group"]
    state.registry.remove_group_resource(group=group, plural=plural)
    for key in [k for k in state.schemas if k[0] == group and k[2] == plural]:
        del state.schemas[key]


def install_stored(state: ApiState) -> None:
    """Serve the CRDs found in the store at start-up."""
    for stored in state.store.select(resource=CRD_STORE_KEY):
        install(state, stored.obj)


def _resource_type(
    group: str, names: dict[str, Any], namespaced: bool, version: dict[str, Any]
) -> resources.ResourceType:
    subs = version.get("subresources") or {}
    scale = subs.get("scale")
    scale_paths = None
    if isinstance(scale, dict):
        scale_paths = (
            scale.get("specReplicasPath", ".spec.replicas"),
            scale.get("statusReplicasPath", ".status.replicas"),
            scale.get("labelSelectorPath", ""),
        )
    return resources.ResourceType(
        group=group,
        version=version["name"],
        plural=names["plural"],
        singular=names.get("singular") or names["kind"].lower(),
        kind=names["kind"],
        namespaced=namespaced,
        short_names=tuple(names.get("shortNames") or ()),
        subresources=tuple(s for s in ("status", "scale") if s in subs),
        strategic_merge=False,
        custom=True,
        scale_paths=scale_paths,
        categories=tuple(names.get("categories") or ()),
    )
