"""The runtime snapshot ConfigMap of a TrainJob (spec §2.3, KEP-2599), built and read back.

On its first pass a TrainJob copies its runtime into ``<tj>-runtime-snapshot`` (data key
``runtime``: the whole runtime object as YAML, owned by the TrainJob, no labels); from then on
the controller plans from the snapshot, so runtime edits and deletion no longer affect it.
``runtime_from_snapshot`` checks the snapshot before use and raises ``SnapshotError`` with
upstream's messages (the controller prefixes them per runtime kind, ``ERROR_PREFIXES``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from trainop.api.trainer import constants as c
from trainop.engine.trainer.containers import Raw, Wire, as_map, maps
from trainop.errors import TrainopError

_PREFIX = "invalid runtime snapshot: "
# How the controller introduces a snapshot read error, by runtime kind (upstream's wording).
ERROR_PREFIXES = {
    c.TRAINING_RUNTIME: "unable to get runtime snapshot: ",
    c.CLUSTER_TRAINING_RUNTIME: "getting runtime snapshot: ",
}
CREATE_ERROR_PREFIX = "creating runtime snapshot: applying runtime snapshot ConfigMap: "


class SnapshotError(TrainopError):
    """A runtime snapshot ConfigMap that cannot be used; ``str`` is upstream's message."""


def name(trainjob: Raw) -> str:
    return f"{as_map(trainjob.get('metadata')).get('name', '')}{c.SNAPSHOT_SUFFIX}"


def config_map(trainjob: Raw, runtime: Raw) -> Wire:
    """The snapshot of ``runtime`` for ``trainjob``, with the controller ownerReference."""
    meta = as_map(trainjob.get("metadata"))
    owner = {
        "apiVersion": c.API_VERSION,
        "kind": c.TRAINJOB,
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name(trainjob),
            "namespace": meta.get("namespace", ""),
            "ownerReferences": [owner],
        },
        "data": {c.SNAPSHOT_DATA_KEY: yaml.safe_dump(_plain(runtime), sort_keys=False)},
    }


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _owned(trainjob: Raw, configmap: Raw) -> bool:
    uid = as_map(trainjob.get("metadata")).get("uid")
    owners = maps(as_map(configmap.get("metadata")).get("ownerReferences"))
    controller = next((o for o in owners if o.get("controller") is True), None)
    return controller is not None and controller.get("uid") == uid


def _identity(ref: Raw) -> tuple[str, str, str]:
    def shown(value: object) -> str:
        return "<any>" if value is None else str(value)

    return shown(ref.get("name")), shown(ref.get("apiGroup")), shown(ref.get("kind"))


def runtime_from_snapshot(trainjob: Raw, configmap: Raw) -> dict[str, Any]:
    """The runtime object the snapshot holds, after upstream's four checks."""
    if not _owned(trainjob, configmap):
        raise SnapshotError(_PREFIX + "a snapshot configmap exists but is owned by another object")
    data = as_map(configmap.get("data"))
    if c.SNAPSHOT_DATA_KEY not in data:
        raise SnapshotError(
            _PREFIX + f'snapshot ConfigMap missing "{c.SNAPSHOT_DATA_KEY}" data key'
        )
    try:
        runtime = yaml.safe_load(str(data[c.SNAPSHOT_DATA_KEY]))
    except yaml.YAMLError as exc:
        raise SnapshotError(_PREFIX + f"unable to unmarshal the snapshot: {exc}") from exc
    if not isinstance(runtime, dict):
        shown = type(runtime).__name__
        raise SnapshotError(
            _PREFIX + f"unable to unmarshal the snapshot: not an object but {shown}"
        )
    ref = as_map(as_map(trainjob.get("spec")).get("runtimeRef"))
    group = str(runtime.get("apiVersion", "")).partition("/")[0]
    found = (
        str(as_map(runtime.get("metadata")).get("name", "")),
        group,
        str(runtime.get("kind", "")),
    )
    wanted = _identity(ref)
    matches = all(w == f for w, f in zip(wanted, found, strict=True) if w != "<any>")
    if not matches:
        raise SnapshotError(
            _PREFIX
            + "the snapshot refers to the wrong runtime: expecting a runtime with name, api "
            f'group and kind of "{wanted[0]}", "{wanted[1]}", "{wanted[2]}" but found runtime '
            f'with name, api group and kind of "{found[0]}", "{found[1]}", "{found[2]}"'
        )
    return runtime
