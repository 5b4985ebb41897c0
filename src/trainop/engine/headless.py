"""Pods that reach each other by name through one headless Service named after the job.

A pod whose ``hostname`` and ``subdomain`` are set, selected by a headless Service named as the
subdomain, gets the DNS record ``<hostname>.<subdomain>.<ns>.svc``: that is how a launcher finds
its workers (MPIJob v2beta1: ``hostfile`` lines, ssh). ``service`` is that Service,
``pod_from_template`` a pod body from a replica's template with those fields (and the replica's
restart policy), ``is_ready`` the readiness a launcher may wait for.

Pure: templates are deep-copied, never mutated. Used by ``mpi_v2beta1_objects``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from trainop.engine.actions import Wire


def service(metadata: Wire, selector: Mapping[str, str], *, publish_not_ready: bool) -> Wire:
    """The headless Service over the pods ``selector`` selects; ``publish_not_ready``: records
    exist before the pods are Ready (a launcher that is also a host needs its own record)."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata,
        "spec": {
            "clusterIP": "None",
            "selector": dict(selector),
            "publishNotReadyAddresses": publish_not_ready,
        },
    }


def pod_from_template(
    template: Mapping[str, Any], *, hostname: str, subdomain: str, restart_policy: str | None
) -> tuple[Wire, Wire, Wire]:
    """A copy of ``template`` as (metadata, spec, first container), with its DNS name and the
    restart policy set (``ClusterFirstWithHostNet`` DNS for a pod on the host's network)."""
    copied = copy.deepcopy(dict(template))
    metadata, spec = copied.setdefault("metadata", {}), copied.setdefault("spec", {})
    spec["hostname"], spec["subdomain"] = hostname, subdomain
    if spec.get("hostNetwork"):
        spec["dnsPolicy"] = "ClusterFirstWithHostNet"
    spec["restartPolicy"] = restart_policy
    containers = spec.setdefault("containers", [{}])
    return metadata, spec, containers[0]


def is_ready(pod: Mapping[str, Any]) -> bool:
    """Whether ``pod`` reports the condition ``Ready=True``."""
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
