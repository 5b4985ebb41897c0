"""The shipped Trainer runtimes in a local session (note 133).

``trainop local up`` and ``trainop run`` install what a Kubeflow Trainer installation puts on a
cluster: the ClusterTrainingRuntimes of ``manifests/trainer/overlays/runtimes/`` (the v2.3.0
runtimes: ``torch-distributed``, ``jax-distributed`` ...) and the ``kubeflow-trainer-public``
ConfigMap (with its namespace, Role and RoleBinding) that the Kubeflow SDK reads, so a TrainJob
can name a shipped runtime and ``TrainerClient().list_runtimes()`` lists them. The images in
those runtimes do not matter to the process runtime (commands run as host processes); under
Podman or Docker they are pulled like any pod's image.

The documents are read from the overlay in the order its ``kustomization.yaml`` lists them.
The overlay is a file of the source tree, not of the package: an installation without it (a
wheel) installs nothing and says so (``install`` returns no names). An object that exists is
replaced, so a session started again on the same state directory gets this version's runtimes.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import yaml

from trainop import errors
from trainop.api.trainer import constants as c
from trainop.controller.trainjob_caches import RUNTIME_RESOURCES
from trainop.kube.client import Client
from trainop.kube.resources import Resource, resource_for

# libyaml's loader where PyYAML has it: the overlay parses in ~20 ms instead of ~0.1-0.3 s.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
OVERLAY = Path(__file__).resolve().parents[3] / "manifests" / "trainer" / "overlays" / "runtimes"


def documents(overlay: Path = OVERLAY) -> list[dict[str, Any]]:
    """The overlay's objects in kustomization order (empty when the overlay is absent)."""
    listing = overlay / "kustomization.yaml"
    if not listing.is_file():
        return []
    found: list[dict[str, Any]] = []
    for name in yaml.safe_load(listing.read_text(encoding="utf-8")).get("resources") or []:
        text = (overlay / str(name)).read_text(encoding="utf-8")
        found += [d for d in yaml.load_all(text, Loader=_LOADER) if isinstance(d, dict)]
    return found


def _resource(obj: dict[str, Any]) -> Resource:
    if obj.get("apiVersion") == c.API_VERSION and obj.get("kind") in RUNTIME_RESOURCES:
        return RUNTIME_RESOURCES[str(obj["kind"])]
    return resource_for(api_version=str(obj["apiVersion"]), kind=str(obj["kind"]))


async def _put(client: Client, obj: dict[str, Any]) -> None:
    resource = _resource(obj)
    meta = obj["metadata"]
    namespace = meta.get("namespace") if resource.namespaced else None
    try:
        await client.create(resource, obj, namespace=namespace)
    except errors.AlreadyExistsError:
        if obj.get("kind") == "Namespace":
            return
        current = await client.get(resource, name=meta["name"], namespace=namespace)
        meta["resourceVersion"] = current["metadata"]["resourceVersion"]
        await client.replace(resource, obj, namespace=namespace)


async def install(client: Client, overlay: Path = OVERLAY) -> list[str]:
    """Create (or bring up to date) every object of the overlay; the runtimes' names."""
    wanted = documents(overlay)
    namespaces = [d for d in wanted if d.get("kind") == "Namespace"]
    for namespace in namespaces:  # before what lives in them
        await _put(client, namespace)
    await asyncio.gather(*(_put(client, d) for d in wanted if d.get("kind") != "Namespace"))
    return [str(d["metadata"]["name"]) for d in wanted if d.get("kind") in RUNTIME_RESOURCES]
