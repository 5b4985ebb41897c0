"""JobSet ``volumeClaimPolicies`` (JobSet v0.12.0, spec §2.15), pure: the claims and volumes.

A JobSet may declare claims shared by all its Jobs: for each template ``T`` of each policy
the JobSet controller creates the claim ``<T>-<jobset>`` in the JobSet's namespace (the
template's labels plus ``jobset.sigs.k8s.io/jobset-name``), owned by the JobSet only when the
policy's ``retentionPolicy.whenDeleted`` is ``Delete`` (the default; ``Retain`` keeps the
claim, and its data, after the JobSet is gone), and every Job whose containers or init
containers mount a volume named ``T`` gets the volume ``T`` reading that claim (unless its
pod template already has a volume of that name). The torchtune runtimes of Trainer v2.3 share
their ``initializer`` claim between the initializer steps and the trainer this way.

``claims`` and ``add_claim_volumes`` are what the JobSet controller
(``cluster.controllers.jobset``) calls when it creates the claims (§2.2 step 8) and builds a
child Job (§2.3). The claims are then bound by the local provisioner like any other.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

Obj = dict[str, Any]
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
JOBSET_API_VERSION = "jobset.x-k8s.io/v1alpha2"


def _templates(jobset: Mapping[str, Any]) -> list[tuple[Obj, str]]:
    """Each claim template with its policy's ``whenDeleted`` (default ``Delete``)."""
    found = []
    for policy in (jobset.get("spec") or {}).get("volumeClaimPolicies") or []:
        when = ((policy.get("retentionPolicy") or {}).get("whenDeleted")) or "Delete"
        found += [(template, str(when)) for template in policy.get("templates") or []]
    return found


def claim_name(template_name: str, jobset_name: str) -> str:
    """The name of the claim made from template ``template_name``: ``<template>-<jobset>``."""
    return f"{template_name}-{jobset_name}"


def claims(jobset: Mapping[str, Any]) -> list[Obj]:
    """The claims the JobSet's ``volumeClaimPolicies`` ask for (module docstring)."""
    meta = jobset.get("metadata") or {}
    owner = {
        "apiVersion": JOBSET_API_VERSION,
        "kind": "JobSet",
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }
    out = []
    for template, when in _templates(jobset):
        tmeta = template.get("metadata") or {}
        labels = {**(tmeta.get("labels") or {}), JOBSET_NAME_LABEL: str(meta.get("name", ""))}
        metadata: Obj = {
            "name": claim_name(str(tmeta.get("name", "")), str(meta.get("name", ""))),
            "namespace": meta.get("namespace"),
            "labels": labels,
        }
        if tmeta.get("annotations"):
            metadata["annotations"] = dict(tmeta["annotations"])
        if when == "Delete":
            metadata["ownerReferences"] = [owner]
        out.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": metadata,
                "spec": copy.deepcopy(template.get("spec") or {}),
            }
        )
    return out


def add_claim_volumes(jobset: Mapping[str, Any], pod_spec: Obj) -> None:
    """Give ``pod_spec`` (a child Job's pod template spec) a claim volume for each template
    its containers mount, in place (module docstring)."""
    jobset_name = str((jobset.get("metadata") or {}).get("name", ""))
    containers = [*(pod_spec.get("initContainers") or []), *(pod_spec.get("containers") or [])]
    mounted = {str(m.get("name")) for c in containers for m in c.get("volumeMounts") or []}
    volumes = pod_spec.setdefault("volumes", [])
    present = {str(v.get("name")) for v in volumes}
    for template, _ in _templates(jobset):
        name = str((template.get("metadata") or {}).get("name", ""))
        if name in mounted and name not in present:
            source = {"claimName": claim_name(name, jobset_name)}
            volumes.append({"name": name, "persistentVolumeClaim": source})
            present.add(name)
    if not volumes:
        del pod_spec["volumes"]
