"""Child Jobs as JobSet builds them (spec 2.3, 2.14; golden cases G1, G2).

A replicatedJob ``<rj>`` with ``replicas`` n gives Jobs ``<js>-<rj>-0`` .. ``<js>-<rj>-<n-1>``.
Each is a copy of the replicatedJob's Job template, owned by the JobSet (controller), with
``spec.suspend`` the JobSet's, the pod subdomain when DNS hostnames are on, and JobSet's label
set on both the Job's and its pod template's metadata (also as annotations): names, uid,
restart attempt, replica counts, indexes, a SHA-1 job key, group labels, the coordinator.
Only the exclusive-placement annotations travel from the JobSet's own metadata.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Collection, Sequence
from typing import Any

from trainop.cluster.controllers.jobset import keys
from trainop.cluster.controllers.jobset.spec import (
    Raw,
    ReplicatedJob,
    as_int,
    as_map,
    dns_hostnames,
    name_of,
    namespace_of,
    replicated_jobs,
    restarts,
    spec_of,
    subdomain,
)
from trainop.cluster.controllers.volumes import jobsetclaims


def job_name(jobset: str, replicated_job: str, index: int) -> str:
    """``<js>-<rj>-<index>``: the Job's name, and the prefix of its pods' hostnames."""
    return f"{jobset}-{replicated_job}-{index}"


def job_key(namespace: str, name: str) -> str:
    """The ``job-key`` label: SHA-1 of ``<ns>/<job>`` in hex (upstream says SHA-256 but
    computes SHA-1; spec 2.3 QUIRK)."""
    return hashlib.sha1(f"{namespace}/{name}".encode()).hexdigest()


def coordinator_endpoint(jobset: Raw) -> str | None:
    """``<js>-<rj>-<jobIndex>-<podIndex>.<subdomain>`` when ``spec.coordinator`` is set."""
    coordinator = spec_of(jobset).get("coordinator")
    if not isinstance(coordinator, dict):
        return None
    job = job_name(
        name_of(jobset),
        str(coordinator.get("replicatedJob") or ""),
        as_int(coordinator.get("jobIndex")),
    )
    return f"{job}-{as_int(coordinator.get('podIndex'))}.{subdomain(jobset)}"


def child_labels(
    jobset: Raw, all_jobs: Sequence[ReplicatedJob], position: int, index: int
) -> dict[str, str]:
    """JobSet's label set for Job ``index`` of the replicatedJob at ``position``."""
    rj = all_jobs[position]
    before = all_jobs[:position]
    same_group = [r for r in all_jobs if r.group == rj.group]
    name = job_name(name_of(jobset), rj.name, index)
    labels = {
        keys.JOBSET_NAME: name_of(jobset),
        keys.JOBSET_UID: str(as_map(jobset.get("metadata")).get("uid") or ""),
        keys.REPLICATED_JOB: rj.name,
        keys.RESTART_ATTEMPT: str(restarts(jobset)),
        keys.REPLICATED_JOB_REPLICAS: str(rj.replicas),
        keys.GLOBAL_REPLICAS: str(sum(r.replicas for r in all_jobs)),
        keys.JOB_INDEX: str(index),
        keys.JOB_KEY: job_key(namespace_of(jobset), name),
        keys.JOB_GLOBAL_INDEX: str(sum(r.replicas for r in before) + index),
        keys.GROUP_NAME: rj.group,
        keys.GROUP_REPLICAS: str(sum(r.replicas for r in same_group)),
        keys.JOB_GROUP_INDEX: str(sum(r.replicas for r in before if r.group == rj.group) + index),
    }
    endpoint = coordinator_endpoint(jobset)
    if endpoint is not None:
        labels[keys.COORDINATOR] = endpoint
    return labels


def owner_reference(jobset: Raw) -> dict[str, Any]:
    """The controller reference every child object carries."""
    meta = as_map(jobset.get("metadata"))
    return {
        "apiVersion": keys.API_VERSION,
        "kind": keys.KIND,
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _placement(jobset: Raw, template_annotations: Raw) -> dict[str, str]:
    """Exclusive-placement annotations: the template's, else the JobSet's."""
    own = as_map(as_map(jobset.get("metadata")).get("annotations"))
    found = {}
    for key in (keys.EXCLUSIVE_TOPOLOGY, keys.NODE_SELECTOR_STRATEGY):
        value = template_annotations.get(key, own.get(key))
        if value is not None:
            found[key] = str(value)
    return found


def construct_job(
    jobset: Raw, all_jobs: Sequence[ReplicatedJob], position: int, index: int
) -> dict[str, Any]:
    """The child Job ``index`` of the replicatedJob at ``position`` (a new object)."""
    rj = all_jobs[position]
    template = rj.template
    meta = as_map(template.get("metadata"))
    stamp = child_labels(jobset, all_jobs, position, index)
    annotations = {
        **as_map(meta.get("annotations")),
        **_placement(jobset, as_map(meta.get("annotations"))),
    }
    spec = copy.deepcopy(dict(as_map(template.get("spec"))))
    spec["suspend"] = spec_of(jobset).get("suspend") is True
    pod = spec["template"] = dict(as_map(spec.get("template")))
    pod_meta = pod["metadata"] = dict(as_map(pod.get("metadata")))
    pod_meta["labels"] = {**as_map(pod_meta.get("labels")), **stamp}
    pod_meta["annotations"] = {**as_map(pod_meta.get("annotations")), **stamp}
    if dns_hostnames(jobset):
        pod["spec"] = {**as_map(pod.get("spec")), "subdomain": subdomain(jobset)}
    pod["spec"] = dict(as_map(pod.get("spec")))
    jobsetclaims.add_claim_volumes(jobset, pod["spec"])  # volumeClaimPolicies (note 132)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": job_name(name_of(jobset), rj.name, index),
            "namespace": namespace_of(jobset),
            "labels": {**as_map(meta.get("labels")), **stamp},
            "annotations": {**annotations, **stamp},
            "ownerReferences": [owner_reference(jobset)],
        },
        "spec": spec,
    }


def missing_jobs(jobset: Raw, position: int, taken: Collection[str]) -> list[dict[str, Any]]:
    """The Jobs of the replicatedJob at ``position`` whose names no owned Job holds (an owned
    Job of any state, a previous attempt's included, blocks its name)."""
    all_jobs = replicated_jobs(jobset)
    rj = all_jobs[position]
    return [
        construct_job(jobset, all_jobs, position, index)
        for index in range(rj.replicas)
        if job_name(name_of(jobset), rj.name, index) not in taken
    ]
