"""Defaulting of kubeflow.org/v1 jobs (spec section 2), applied in memory and never persisted.

``apply_defaults`` returns a new job; its input is never mutated. Rules shared by kinds are
driven by ``kinds.KindInfo`` data; kind-only rules are the spec's ``with_kind_defaults``. As
upstream, defaults are not written back to the API server: ``kubectl get -o yaml`` shows what
the user wrote. Unlike upstream, a template without containers is left as it is instead of
crashing (validation reports it).
"""

from __future__ import annotations

import copy

from trainop.api.fields import Mapping
from trainop.api.kinds import KindInfo, info_of
from trainop.api.types import Job, ReplicaSpec, RunPolicy


def apply_defaults(job: Job) -> Job:
    """``job`` with every defaulting rule of its kind applied."""
    info = info_of(job)
    specs = normalize_replica_types(job.spec.replica_specs, info)
    defaulted = {rt: _default_replica(rt, spec, info) for rt, spec in specs.items()}
    spec = job.spec.model_copy(update={"replica_specs": defaulted}).with_kind_defaults()
    run_policy = spec.run_policy or RunPolicy()
    if run_policy.clean_pod_policy is None:
        default = info.default_clean_pod_policy
        run_policy = run_policy.model_copy(update={"clean_pod_policy": default})
    return job.model_copy(update={"spec": spec.model_copy(update={"run_policy": run_policy})})


def normalize_replica_types(
    specs: dict[str, ReplicaSpec], info: KindInfo
) -> dict[str, ReplicaSpec]:
    """Move keys such as ``worker`` or ``WORKER`` to the canonical ``Worker`` (not for MPI).

    When both a canonical key and a differently-cased one exist, the canonical entry is kept;
    validation reports the duplicate.
    """
    canonical = {rt.lower(): rt for rt in info.normalized_types}
    result: dict[str, ReplicaSpec] = {}
    for key, spec in specs.items():
        target = canonical.get(key.lower(), key)
        if target in result and target != key:
            continue
        result[target] = spec
    return result


def _default_replica(replica_type: str, spec: ReplicaSpec, info: KindInfo) -> ReplicaSpec:
    update: dict[str, object] = {}
    if spec.replicas is None:
        update["replicas"] = 0 if replica_type in info.zero_default_types else 1
    if spec.restart_policy is None:
        update["restart_policy"] = info.default_restart_policy
    if info.inserts_default_port:
        template = with_default_port(spec.template, info)
        if template is not spec.template:
            update["template"] = template
    return spec.model_copy(update=update) if update else spec


def with_default_port(template: Mapping, info: KindInfo) -> Mapping:
    """The template with the kind's default port on its default container, if it lacks one.

    The default container is the one named ``info.default_container``, else the first. The
    input is returned unchanged (same object) when nothing needs adding or the template has no
    usable container.
    """
    pod_spec = template.get("spec")
    containers = pod_spec.get("containers") if isinstance(pod_spec, dict) else None
    if not isinstance(containers, list) or not containers:
        return template
    index = next(
        (
            i
            for i, c in enumerate(containers)
            if isinstance(c, dict) and c.get("name") == info.default_container
        ),
        0,
    )
    container = containers[index]
    ports = container.get("ports") if isinstance(container, dict) else None
    if not isinstance(container, dict) or not isinstance(ports, list | None):
        return template
    if any(isinstance(p, dict) and p.get("name") == info.default_port_name for p in ports or []):
        return template
    result = copy.deepcopy(template)
    new_port = {"name": info.default_port_name, "containerPort": info.default_port}
    result["spec"]["containers"][index]["ports"] = [*(ports or []), new_port]
    return result
