"""A job's generated files in one ConfigMap ``<job>-config``, mounted into its pods.

The shapes every job with generated files uses (MPI's hostfile and scripts): the ConfigMap, a
``configMap`` volume projecting chosen files with their modes, and its mount in the first
container. ``Framework.config_files`` is rendered here for the common engine (``children``
creates the ConfigMap, ``desired`` mounts it); the v2beta1 renderer (``mpi_v2beta1_objects``)
builds its ConfigMap and volume from the same shapes.

Pure; a pod passed to ``mount`` is the caller's own copy and is changed in place.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from trainop.api.types import Job
from trainop.engine.actions import Wire
from trainop.frameworks.base import ConfigFiles, Peers, append_to, containers_of
from trainop.frameworks.options import FrameworkOptions
from trainop.frameworks.topology import Topology


def name_of(job_name: str | None) -> str:
    """The ConfigMap's name: ``<job>-config``."""
    return f"{job_name}-config"


def config_map(metadata: Wire, data: Mapping[str, str]) -> Wire:
    """A ConfigMap holding ``data`` (file name → content)."""
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": dict(data)}


def volume(name: str, config_map_name: str, items: Iterable[tuple[str, int]]) -> Wire:
    """A volume projecting the files ``items`` names (each at its own name, with its mode)."""
    keys = [{"key": key, "path": key, "mode": mode} for key, mode in items]
    return {"name": name, "configMap": {"name": config_map_name, "items": keys}}


def of_job(
    job: Job,
    files: ConfigFiles,
    *,
    peers: Peers,
    topology: Topology,
    options: FrameworkOptions,
) -> Wire:
    """The ConfigMap of a plugin's ``files`` (metadata: the name; ``children`` adds the rest)."""
    data = files.render(job=job, peers=peers, topology=topology, options=options)
    return config_map({"name": name_of(job.metadata.name)}, data)


def mount(pod: Wire, job: Job, files: ConfigFiles, replica_type: str) -> None:
    """Mount the files ``files.items`` lists for ``replica_type`` (if any) into ``pod``."""
    items = files.items.get(replica_type)
    if items is None:
        return
    first = (containers_of(pod) or [{}])[0]
    append_to(first, "volumeMounts", [{"name": files.volume, "mountPath": files.mount_path}])
    projected = volume(files.volume, name_of(job.metadata.name), items)
    append_to(pod.setdefault("spec", {}), "volumes", [projected])
