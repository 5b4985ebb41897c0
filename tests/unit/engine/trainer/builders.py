"""Builders of TrainJobs and runtimes for the Trainer v2 planner tests, shaped like upstream's
test wrappers (spec §8: jobs ``dataset-initializer``, ``model-initializer``, ``node`` in that
order, ancestors set, each with an ``initializer`` PVC volume and mount)."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

from trainop.api.trainer import constants as c
from trainop.engine.trainer.plan import Observed, Plan, plan

NOW = datetime(2025, 6, 15, 12, 0, 0, tzinfo=UTC)
CREATED = "2025-06-15T11:59:00Z"
UID = "uid-1234"
R = {"cpu": "1", "memory": "4Gi"}
FIELD_REF = {
    "fieldRef": {"fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}
}
PRIVATE, PUBLIC = (
    "-----BEGIN EC PRIVATE KEY-----\nx\n-----END EC PRIVATE KEY-----\n",
    "ecdsa-sha2-nistp521 AAAA\n",
)


def keys() -> tuple[str, str]:
    return PRIVATE, PUBLIC


def container(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, **fields}


def job(
    name: str, ancestor: str | None, *containers: dict[str, Any], **fields: Any
) -> dict[str, Any]:
    labels = {c.LABEL_ANCESTOR: ancestor} if ancestor else {}
    pod = {"containers": list(containers), **fields.pop("pod", {})}
    return {
        "name": name,
        "groupName": "default",
        **fields.pop("job", {}),
        "template": {
            "metadata": {"labels": labels},
            "spec": {"template": {"spec": pod}, **fields},
        },
    }


def wrapper_jobs(
    *, image: str = "test:runtime", resources: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Upstream's default test template: the two initializers and ``node``."""
    extra: dict[str, Any] = {"image": image, "command": ["runtime"], "args": ["runtime"]}
    if resources is not None:
        extra["resources"] = resources
    volume = {"name": "initializer", "persistentVolumeClaim": {"claimName": "initializer"}}
    jobs = []
    for name, ancestor, path in (
        ("dataset-initializer", "dataset-initializer", "/workspace/dataset"),
        ("model-initializer", "model-initializer", "/workspace/model"),
        ("node", "trainer", "/workspace"),
    ):
        mounts = [{"name": "initializer", "mountPath": path}]
        jobs.append(
            job(
                name,
                ancestor,
                container(name, volumeMounts=mounts, **copy.deepcopy(extra)),
                pod={"volumes": [volume]},
            )
        )
    return jobs


def runtime(
    name: str,
    jobs: list[dict[str, Any]],
    *,
    kind: str = c.TRAINING_RUNTIME,
    ml_policy: dict[str, Any] | None = None,
    pod_group_policy: dict[str, Any] | None = None,
    labels: dict[str, str] | None = None,
    template_labels: dict[str, str] | None = None,
    network: dict[str, Any] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"template": {"spec": {"replicatedJobs": jobs}}}
    if template_labels:
        spec["template"]["metadata"] = {"labels": template_labels}
    if network:
        spec["template"]["spec"]["network"] = network
    if ml_policy is not None:
        spec["mlPolicy"] = ml_policy
    if pod_group_policy is not None:
        spec["podGroupPolicy"] = pod_group_policy
    meta: dict[str, Any] = {"name": name}
    if kind == c.TRAINING_RUNTIME:
        meta["namespace"] = "default"
    if labels:
        meta["labels"] = labels
    return {"apiVersion": c.API_VERSION, "kind": kind, "metadata": meta, "spec": spec}


def trainjob(
    name: str, runtime_name: str, *, kind: str = c.TRAINING_RUNTIME, **spec: Any
) -> dict[str, Any]:
    return {
        "apiVersion": c.API_VERSION,
        "kind": c.TRAINJOB,
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": UID,
            "creationTimestamp": CREATED,
        },
        "spec": {"runtimeRef": {"name": runtime_name, "apiGroup": c.GROUP, "kind": kind}, **spec},
    }


def run(
    tj: dict[str, Any],
    rt: dict[str, Any] | None,
    observed: Observed | None = None,
    now: datetime = NOW,
) -> Plan:
    return plan(tj, rt, observed=observed or Observed(), now=now, new_ssh_keys=keys)


def applied(result: Plan, kind: str, api_version: str | None = None) -> dict[str, Any]:
    """The one object of ``kind`` the plan applies."""
    found = [
        o
        for o in result.apply
        if o["kind"] == kind and (api_version is None or o["apiVersion"] == api_version)
    ]
    assert len(found) == 1, [o["kind"] for o in result.apply]
    return found[0]


def replicated(jobset: dict[str, Any], name: str) -> dict[str, Any]:
    return next(j for j in jobset["spec"]["replicatedJobs"] if j["name"] == name)


def pod_of(jobset: dict[str, Any], name: str) -> dict[str, Any]:
    return replicated(jobset, name)["template"]["spec"]["template"]


def main_container(
    jobset: dict[str, Any], job_name: str, container_name: str = "node"
) -> dict[str, Any]:
    return next(
        x for x in pod_of(jobset, job_name)["spec"]["containers"] if x["name"] == container_name
    )


def env_by_name(container: dict[str, Any]) -> dict[str, Any]:
    """Env as a name-keyed map (§3.1: order is unspecified upstream)."""
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def owner() -> dict[str, Any]:
    return {
        "apiVersion": c.API_VERSION,
        "kind": c.TRAINJOB,
        "name": "alpha",
        "uid": UID,
        "controller": True,
        "blockOwnerDeletion": True,
    }


# G1 (spec §8): PlainML + coscheduling + initializers; G8 and G9 reuse it.
def g1_runtime() -> dict[str, Any]:
    return runtime(
        "alpha",
        wrapper_jobs(resources={"requests": R}),
        ml_policy={"numNodes": 100},
        pod_group_policy={"coscheduling": {"scheduleTimeoutSeconds": 100}},
    )


def g1_trainjob() -> dict[str, Any]:
    meta = {"labels": {"testingKey": "testingVal"}, "annotations": {"testingKey": "testingVal"}}
    return trainjob(
        "alpha",
        "alpha",
        suspend=True,
        runtimePatches=[
            {"manager": "test.io/manager", "trainingRuntimeSpec": {"template": {"metadata": meta}}}
        ],
        trainer={
            "image": "test:trainjob",
            "command": ["trainjob"],
            "args": ["trainjob"],
            "resourcesPerNode": {"requests": R},
        },
        initializer={
            "dataset": {"storageUri": "hf://trainjob-dataset"},
            "model": {"storageUri": "hf://trainjob-model"},
        },
    )
