"""Test support for the engine suites: canonical jobs, a pure ``apply_plan``, pod fakes.

``apply_plan`` plays the API server and kubelet minimally: creates add the body (pods start
without status, i.e. Pending), deletes mark the object terminating (``deletionTimestamp``) as a
real API server does for pods with a grace period, updates replace the body, and the job's
status becomes the plan's. Nothing here mutates its inputs.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

from trainop.api.manifest import parse_job
from trainop.api.types import Job
from trainop.engine.actions import Create, Delete, Plan, Update
from trainop.engine.observed import Observed, name_of
from trainop.engine.plan import EngineOptions, plan
from trainop.frameworks.registry import REGISTRY
from trainop.frameworks.topology import ClusterTopology

NOW = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
TERMINATING = "2025-01-01T12:00:00Z"


def container(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": f"example/{name}:1", **extra}


def replica(name: str, count: int, **extra: Any) -> dict[str, Any]:
    return {"replicas": count, "template": {"spec": {"containers": [container(name)]}}, **extra}


def make_job(kind: str, specs: dict[str, int], *, spec: dict[str, Any] | None = None,
             run_policy: dict[str, Any] | None = None, name: str = "job") -> Job:  # fmt: skip
    """A job of ``kind`` with ``specs`` (type → replicas), default container names."""
    framework = REGISTRY[kind]
    body: dict[str, Any] = {
        framework.info.replica_specs_field: {
            rt: replica(framework.info.default_container, n) for rt, n in specs.items()
        },
        **(spec or {}),
    }
    if run_policy is not None:
        body["runPolicy"] = run_policy
    if kind == "MXJob":
        body.setdefault("jobMode", "MXTrain")
    metadata = {"name": name, "namespace": "ns", "uid": "uid-1"}
    return parse_job(
        {"apiVersion": "kubeflow.org/v1", "kind": kind, "metadata": metadata, "spec": body}
    )


# One canonical job per framework; every engine suite is parametrised over these.
CANONICAL: dict[str, Job] = {
    "TFJob": make_job("TFJob", {"Chief": 1, "PS": 2, "Worker": 2}),
    "PyTorchJob": make_job("PyTorchJob", {"Master": 1, "Worker": 3}, spec={"nprocPerNode": "2"}),
    "XGBoostJob": make_job("XGBoostJob", {"Master": 1, "Worker": 2}),
    "MXJob": make_job("MXJob", {"Scheduler": 1, "Server": 1, "Worker": 2}),
    "MPIJob": make_job("MPIJob", {"Launcher": 1, "Worker": 2}, spec={"slotsPerWorker": 2}),
    "PaddleJob": make_job("PaddleJob", {"Master": 1, "Worker": 2}),
    "JAXJob": make_job("JAXJob", {"Worker": 2}),
    "DGLJob": make_job("DGLJob", {"Launcher": 1, "Worker": 2}),
}
ELASTIC_PYTORCH = make_job(
    "PyTorchJob",
    {"Worker": 2},
    spec={
        "elasticPolicy": {
            "rdzvBackend": "c10d", "minReplicas": 1, "maxReplicas": 3, "maxRestarts": 100,
            "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
                "type": "Utilization", "averageUtilization": 80}}}],
        }
    },
    name="elastic",
)  # fmt: skip


def run(job: Job, observed: Observed | None = None, *, now: datetime = NOW,
        options: EngineOptions | None = None) -> Plan:  # fmt: skip
    return plan(job, observed or Observed(), REGISTRY[job.kind], ClusterTopology(), now,
                options=options)  # fmt: skip


def _terminate(obj: dict[str, Any]) -> dict[str, Any]:
    result = copy.deepcopy(obj)
    result["metadata"]["deletionTimestamp"] = TERMINATING
    return result


def _apply_to(objects: tuple[Any, ...], action: object, kinds: tuple[str, ...]) -> tuple[Any, ...]:
    if isinstance(action, Create) and action.kind in kinds:
        return (*objects, copy.deepcopy(action.body))
    if isinstance(action, Update) and action.kind in kinds:
        return tuple(
            copy.deepcopy(action.body)
            if name_of(o) == action.name and o.get("kind") == action.kind
            else o
            for o in objects
        )
    if isinstance(action, Delete) and action.kind in kinds:
        return tuple(
            _terminate(o)
            if name_of(o) == action.name and o.get("kind", action.kind) == action.kind
            else o
            for o in objects
        )
    return objects


def apply_plan(job: Job, observed: Observed, result: Plan) -> tuple[Job, Observed]:
    """The job and observed state after the plan's actions took effect (see module doc)."""
    pods, services, objects = observed.pods, observed.services, observed.objects
    group = observed.pod_group
    for action in result.actions:
        pods = _apply_to(pods, action, ("Pod",))
        services = tuple(
            s
            for s in _apply_to(services, action, ("Service",))
            if not (s.get("metadata") or {}).get("deletionTimestamp")
        )
        objects = _apply_to(
            objects,
            action,
            ("ConfigMap", "ServiceAccount", "Role", "RoleBinding", "HorizontalPodAutoscaler"),
        )
        if isinstance(action, Create | Update) and action.kind == "PodGroup":
            group = copy.deepcopy(action.body)
        if isinstance(action, Delete) and action.kind == "PodGroup":
            group = None
    new_job = job.model_copy(update={"status": result.status})
    return new_job, Observed(pods=pods, services=services, pod_group=group, objects=objects)


def with_phase(pod: dict[str, Any], phase: str, *, exit_code: int | None = None,
               restarts: int = 0, container_name: str | None = None) -> dict[str, Any]:  # fmt: skip
    """A copy of ``pod`` that the kubelet moved to ``phase``."""
    result = copy.deepcopy(pod)
    name = container_name or result["spec"]["containers"][0]["name"]
    entry: dict[str, Any] = {"name": name, "restartCount": restarts, "state": {}}
    if exit_code is not None:
        entry["state"] = {"terminated": {"exitCode": exit_code}}
    result["status"] = {"phase": phase, "containerStatuses": [entry]}
    return result


def start(job: Job, options: EngineOptions | None = None) -> tuple[Job, Observed, list[Plan]]:
    """Plan and apply until no plan creates a pod: the pods of types that gate others
    (``Framework.starts_after``) succeed between plans. One plan for kinds without phases."""
    gates = set(REGISTRY[job.kind].starts_after.values())
    observed, plans = Observed(), []
    while True:
        plans.append(run(job, observed, options=options))
        job, observed = apply_plan(job, observed, plans[-1])
        if not any(isinstance(a, Create) and a.kind == "Pod" for a in plans[-1].actions):
            return job, observed, plans
        pods = tuple(
            with_phase(p, "Succeeded", exit_code=0)
            if p["metadata"]["labels"]["training.kubeflow.org/replica-type"]
            in {g.lower() for g in gates}
            else p
            for p in observed.pods
        )
        observed = Observed(pods, observed.services, observed.pod_group, observed.objects)
        if not gates:
            return job, observed, plans
