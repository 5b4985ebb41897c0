"""JobSet plugin (spec §3.3): pod DNS names, parallelism, and the JobSet itself.

``identify_pod_network``: every PodSet's pods are ``<tj>-<rj>-<replica>-<pod>.<subdomain>``
(subdomain = the template's ``network.subdomain``, else the TrainJob name), read lazily so later
count changes apply; under a network with one address for every pod (a local process session),
env values that are exactly such a name become that address (note 133).
``sync_parallel_count``: each PodSet count becomes its replicatedJob's ``parallelism`` and
``completions``. ``build``: the JobSet ``<tj>`` — applied only while it is
absent or either side is suspended (§2.4) — from the patched template with the PodSets written
back (volumes, image/command, env, ports, mounts), the initializer overrides, ``replicas: 1`` on
the ancestor jobs, the scheduler's pod labels/annotations, ``suspend`` = the TrainJob's,
labels/annotations from the runtime and the patches, and the controller ownerReference.
Validation lives in ``jobset_validate``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping

from trainop.api.trainer import constants as c
from trainop.engine.trainer import containers as k
from trainop.engine.trainer.containers import Raw, Wire, as_map, maps
from trainop.engine.trainer.info import PodSet, RuntimeInfo, ancestor, child, job_spec, pod_spec
from trainop.engine.trainer.plugins import jobset_validate
from trainop.engine.trainer.plugins.base import BuildContext, PlanError, Plugin, object_meta

_INITIALIZERS = {
    c.ANCESTOR_DATASET_INITIALIZER: ("dataset", c.DATASET_INITIALIZER),
    c.ANCESTOR_MODEL_INITIALIZER: ("model", c.MODEL_INITIALIZER),
}


def identify_pod_network(info: RuntimeInfo) -> None:
    subdomain = str(as_map(info.template.get("network")).get("subdomain") or info.name)
    for pod_set in info.pod_sets:
        pod_set.jobset_name, pod_set.subdomain = info.name, subdomain
    if info.network.address is not None:
        _address_named_pods(info)


def _address_named_pods(info: RuntimeInfo) -> None:
    """Under a network that does not resolve pod names (a local process session, note 133):
    an env value that *is* one of this JobSet's pod DNS names (what ``trainop convert`` writes
    for v1's ``MASTER_ADDR``) becomes that pod's address. Whole values only, never parts of
    them; on a cluster (``address`` None) nothing changes."""
    names = {endpoint for pod_set in info.pod_sets for endpoint in pod_set.endpoints()}
    for pod_set in info.pod_sets:
        for container in [*pod_set.containers, *pod_set.init_containers]:
            for entry in maps(container.get("env")):
                value = entry.get("value")
                if isinstance(value, str) and value in names:
                    entry["value"] = info.network.host(value)


def sync_parallel_count(info: RuntimeInfo) -> None:
    """Every PodSet's count as its replicatedJob's parallelism and completions (paired by
    index; §3.2 step 4 — completions in the template are overwritten, as upstream does)."""
    for pod_set, job in zip(info.pod_sets, info.template["replicatedJobs"], strict=False):
        spec = job_spec(job)
        spec["parallelism"] = pod_set.count
        spec["completions"] = pod_set.count


def is_suspended(obj: Raw | None) -> bool:
    return bool(as_map(as_map(obj).get("spec")).get("suspend"))


def _write_container(target: Wire, source: Raw) -> None:
    if source.get("command"):
        target["command"] = copy.deepcopy(source["command"])
    if source.get("image"):
        target["image"] = source["image"]
    k.upsert_env(target, maps(source.get("env")))
    for port in maps(source.get("ports")):
        k.upsert_port(target, port)
    for mount in maps(source.get("volumeMounts")):
        k.upsert_mount(target, mount)


def _write_back(job: Wire, pod_set: PodSet) -> None:
    """§3.3 Build step 2: the PodSet's edits into its replicatedJob's pod spec."""
    spec = pod_spec(job)
    for volume in pod_set.volumes:
        k.upsert_volume(spec, volume)
    for key, edited in (
        ("containers", pod_set.containers),
        ("initContainers", pod_set.init_containers),
    ):
        current = maps(spec.get(key))
        for i, source in enumerate(edited):
            if i >= len(current):
                current.append({"name": source.get("name")})
            _write_container(current[i], source)
        if current:
            spec[key] = current


def _initializers(info: RuntimeInfo, job: Wire) -> None:
    """§3.3 Build step 3 for one replicatedJob."""
    step = ancestor(job)
    if step not in _INITIALIZERS:
        return
    job["replicas"] = 1
    field, container_name = _INITIALIZERS[step]
    config = as_map(info.spec.get("initializer")).get(field)
    if not isinstance(config, Mapping):
        return
    container = k.named(maps(pod_spec(job).get("containers")), container_name)
    if container is None:
        return
    if config.get("storageUri") is not None:
        k.upsert_env(container, [k.env(c.STORAGE_URI_ENV, str(config["storageUri"]))])
    k.upsert_env(container, maps(config.get("env")))
    secret = as_map(config.get("secretRef")).get("name")
    if secret:
        env_from = maps(container.get("envFrom"))
        container["envFrom"] = [*env_from, {"secretRef": {"name": secret}}]


def _pod_metadata(info: RuntimeInfo, job: Wire) -> None:
    if not (info.pod_labels or info.pod_annotations):
        return
    meta = child(child(job_spec(job), "template"), "metadata")
    for key, values in (("labels", info.pod_labels), ("annotations", info.pod_annotations)):
        if values:
            meta[key] = {**as_map(meta.get(key)), **values}


def desired_jobset(info: RuntimeInfo) -> Wire:
    """The JobSet ``<tj>`` (steps 1-6 of §3.3 Build)."""
    jobs = info.template["replicatedJobs"]
    if len(jobs) < len(info.pod_sets):
        detail = (
            f"runtime template has {len(jobs)} replicatedJobs but runtime info has "
            f"{len(info.pod_sets)} podSets"
        )
        raise PlanError(detail)
    for pod_set, job in zip(info.pod_sets, jobs, strict=False):
        _write_back(job, pod_set)
    for job in jobs:
        _initializers(info, job)
        if ancestor(job) == c.ANCESTOR_TRAINER:
            job["replicas"] = 1
        _pod_metadata(info, job)
    spec = copy.deepcopy(info.template)
    spec["suspend"] = bool(info.spec.get("suspend"))
    metadata = object_meta(info, info.name)
    if info.labels:
        metadata["labels"] = dict(info.labels)
    if info.annotations:
        metadata["annotations"] = dict(info.annotations)
    return {
        "apiVersion": c.JOBSET_API_VERSION,
        "kind": c.JOBSET,
        "metadata": metadata,
        "spec": spec,
    }


def build(info: RuntimeInfo, context: BuildContext) -> list[Wire]:
    """The JobSet when it is absent or either side is suspended, else nothing (§2.4)."""
    if (
        context.jobset is not None
        and not is_suspended(info.trainjob)
        and not is_suspended(context.jobset)
    ):
        return []
    return [desired_jobset(info)]


PLUGIN = Plugin(
    "JobSet",
    identify_pod_network=identify_pod_network,
    build=build,
    validate=jobset_validate.validate,
)
