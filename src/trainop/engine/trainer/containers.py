"""Edits of raw container and pod-spec dicts shared by the TrainJob plugins (spec §3.3-3.7).

Everything here works on plain mappings as read from the API and tolerates malformed shapes
(a list where a map belongs reads as empty), because the webhook calls the same code on
objects that were never validated. The upserts follow upstream's apply-configuration rules:
env by ``name`` (replace in place, else append), volumes by ``name``, volume mounts by
``mountPath``, ports by ``containerPort`` or by a name both ports carry.

Device detection (``gpu_count``, ``cpu_count``) serves Torch, MPI and XGBoost, which all read
"the GPU count" the same way (§3.4 step 3).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from trainop.engine import quantities

Raw = Mapping[str, Any]
Wire = dict[str, Any]
COMPLETION_INDEX_PATH = "metadata.annotations['batch.kubernetes.io/job-completion-index']"


def as_map(value: object) -> Raw:
    """``value`` if it is a mapping, else an empty one."""
    return value if isinstance(value, Mapping) else {}


def as_list(value: object) -> list[Any]:
    """``value`` if it is a list, else an empty one."""
    return value if isinstance(value, list) else []


def maps(value: object) -> list[Wire]:
    """The mapping items of a list (anything else is skipped)."""
    return [item for item in as_list(value) if isinstance(item, dict)]


def env(name: str, value: str) -> Wire:
    """An env var with a literal value."""
    return {"name": name, "value": value}


def completion_index_env(name: str) -> Wire:
    """An env var holding the pod's completion index (the node rank)."""
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": COMPLETION_INDEX_PATH}}}


def upsert(items: list[Wire], new: Raw, key: str) -> None:
    """Replace the item whose ``key`` equals ``new[key]`` in place, or append ``new``."""
    for i, item in enumerate(items):
        if item.get(key) == new.get(key):
            items[i] = dict(new)
            return
    items.append(dict(new))


def upsert_env(container: Wire, entries: Sequence[Raw]) -> None:
    """Upsert each env var of ``entries`` into ``container`` by name."""
    current = maps(container.get("env"))
    for entry in entries:
        if isinstance(entry, Mapping) and entry.get("name"):
            upsert(current, entry, "name")
    if current:
        container["env"] = current


def upsert_port(container: Wire, port: Raw) -> None:
    """Upsert ``port``: same ``containerPort``, or the same name when both are named.

    Upstream also matches two unnamed ports as "the same name" and so replaces the first
    unnamed template port; we do not (docs/design/111).
    """
    ports = maps(container.get("ports"))
    for i, item in enumerate(ports):
        same_name = bool(port.get("name")) and item.get("name") == port.get("name")
        if item.get("containerPort") == port.get("containerPort") or same_name:
            ports[i] = dict(port)
            break
    else:
        ports.append(dict(port))
    container["ports"] = ports


def upsert_mount(container: Wire, mount: Raw) -> None:
    """Upsert a volume mount by ``mountPath``."""
    mounts = maps(container.get("volumeMounts"))
    upsert(mounts, mount, "mountPath")
    container["volumeMounts"] = mounts


def upsert_volume(pod_spec: Wire, volume: Raw) -> None:
    """Upsert a pod volume by ``name``."""
    volumes = maps(pod_spec.get("volumes"))
    upsert(volumes, volume, "name")
    pod_spec["volumes"] = volumes


def named(containers: Sequence[Wire], name: str) -> Wire | None:
    """The first container called ``name``."""
    return next((c for c in containers if c.get("name") == name), None)


def gpu_count(resources: Raw) -> int:
    """The value of the first resource whose name contains ``gpu`` (any case), looked up in
    requests first, then limits; 0 when none (spec §3.4 step 3)."""
    for section in ("requests", "limits"):
        for name, value in as_map(resources.get(section)).items():
            if "gpu" in str(name).lower():
                return int(quantities.parse(value).amount)
    return 0


def cpu_count(resources: Raw) -> int:
    """CPUs for ``numProcPerNode: auto`` without GPUs: requests.cpu if non-zero, else
    limits.cpu, rounded up; at least 1 (spec §3.4 step 4)."""
    amount = quantities.parse(as_map(resources.get("requests")).get("cpu", 0)).amount
    if amount == 0:
        amount = quantities.parse(as_map(resources.get("limits")).get("cpu", 0)).amount
    return max(1, math.ceil(amount))
