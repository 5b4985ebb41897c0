"""Bodies of the pods and Services a job should have (spec 4.4, 4.6, 7).

A pod is its replica's template with: the replica's labels (and ``job-role: master`` on the
primary replica), the template's annotations, a controller owner reference, the framework's env
appended to the containers it targets, the replica's restart policy (``ExitCode`` → ``Never``),
the framework's decorations, then its capabilities' (``exec_access``: the account;
``config_files``: the files' volume and mount). A Service is headless, selects exactly one
replica's pod and exposes the ports of the default container.

Invariants: templates are deep-copied once per pod, never mutated; the copy is the pod's own
body, which the framework's decorator then edits in place (``PodDecorator``), so no two pods
and no pod and its job share a mutable object. Neighbours: ``gang`` decorates pods
further; ``plan`` decides which of these to create.
"""

from __future__ import annotations

from typing import Any

from trainop.api.types import Job
from trainop.engine import config_files, exec_access, naming
from trainop.engine.actions import Event, Wire
from trainop.frameworks.base import Framework, PodWording, Replica, containers_of
from trainop.frameworks.options import FrameworkOptions
from trainop.frameworks.topology import Topology
from trainop.frameworks.wirecopy import wire_copy

RESTART_POLICY_WARNING = Event(
    "Warning",
    "SetPodTemplateRestartPolicy",
    "Restart policy in pod template will be overwritten by restart policy in replica spec",
)


def _env_targets(framework: Framework, containers: list[Wire]) -> list[Wire]:
    if framework.env_containers == "all":
        return containers
    if framework.env_containers == "first":
        return containers[:1]
    named = framework.info.default_container
    return [c for c in containers if c.get("name") == named][:1]


def _pod_metadata(job: Job, framework: Framework, replica: Replica, template: Wire) -> Wire:
    """The pod's metadata; ``template`` is the pod's own deep copy, so its values are taken."""
    meta = template.get("metadata") or {}
    labels = {**(meta.get("labels") or {}), **naming.replica_labels(job, framework, replica)}
    if naming.is_primary(job, framework, replica):
        labels[naming.JOB_ROLE_LABEL] = "master"
    extra: dict[str, Any] = {"labels": labels}
    for key in ("annotations", "finalizers"):
        if meta.get(key):
            extra[key] = meta[key]
    return naming.owned_metadata(job, naming.pod_name(job, replica), **extra)


def pod(
    *,
    job: Job,
    framework: Framework,
    replica: Replica,
    topology: Topology,
    options: FrameworkOptions,
) -> tuple[Wire, tuple[Event, ...]]:
    """The pod of ``replica`` and the warnings building it raised."""
    spec = job.spec.replica_specs[replica.type]
    template = wire_copy(dict(spec.template))
    body: Wire = {"apiVersion": "v1", "kind": "Pod"}
    body["metadata"] = _pod_metadata(job, framework, replica, template)
    body["spec"] = template.get("spec") or {}
    found = framework.env(job=job, replica=replica, topology=topology, options=options)
    for container in _env_targets(framework, containers_of(body)):
        # Fresh entries per container (``to_wire`` builds new dicts): none shared.
        container["env"] = [*(container.get("env") or []), *(var.to_wire() for var in found)]
    events = (
        _restart_policy_warnings(framework, replica) if body["spec"].get("restartPolicy") else ()
    )
    policy = spec.restart_policy or framework.info.default_restart_policy
    body["spec"]["restartPolicy"] = "Never" if policy == "ExitCode" else policy
    if framework.decorate_pod is not None:
        # ``body`` is this call's own (the template was deep-copied above): the decorator edits
        # it in place instead of copying the whole pod again.
        body = framework.decorate_pod(job=job, replica=replica, pod=body, options=options)
    for access in framework.exec_access:
        exec_access.run_as_account(body, job, access, replica.type)
    if framework.config_files is not None:
        config_files.mount(body, job, framework.config_files, replica.type)
    return body, events


def _restart_policy_warnings(framework: Framework, replica: Replica) -> tuple[Event, ...]:
    reason = framework.pod_wording.get(replica.type, PodWording()).restart_policy_warning
    if reason is None:
        return ()
    return (Event("Warning", reason, RESTART_POLICY_WARNING.message),)


def service(*, job: Job, framework: Framework, replica: Replica) -> Wire:
    """The headless Service giving ``replica``'s pod its stable DNS name."""
    labels = naming.replica_labels(job, framework, replica)
    template = job.spec.replica_specs[replica.type].template
    named = [
        c for c in containers_of(template) if c.get("name") == framework.info.default_container
    ]
    ports = [
        {"name": port.get("name"), "port": port.get("containerPort")}
        for container in named[:1]
        for port in container.get("ports") or []
    ]
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": naming.owned_metadata(job, naming.pod_name(job, replica), labels=labels),
        "spec": {"clusterIP": "None", "selector": dict(labels), "ports": ports},
    }
