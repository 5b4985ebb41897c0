"""Torch plugin (spec §3.4): ``torchrun``'s ``PET_*`` env, port 29500, ``numProcPerNode: auto``.

Active when the runtime's ``mlPolicy.torch`` is set. Enforce: the trainer PodSet count from
``trainer.numNodes``; ``numProcPerNode`` from the TrainJob, else ``auto``, which without GPUs
becomes the CPU count rounded up (at least 1) and with GPUs stays ``auto``; then, only when the
TrainJob has a ``trainer`` and the trainer pod a ``node`` container, the trainer env followed by
the five ``PET_*`` vars (the two ``PET_MASTER_*`` replaced by a command rewrite for torchtune,
``torchtune``) and the port; finally the ``envInjection`` targets get all five vars.

The master is upstream's fixed ``<tj>-node-0-0.<tj>`` (right for every shipped runtime) at port
29500, both as the planner's ``PodNetwork`` gives them (unchanged on a cluster; loopback and a
port of its own in a local process session, note 133).
"""

from __future__ import annotations

from collections.abc import Mapping

from trainop.api.trainer import constants as c
from trainop.engine.trainer import containers as k
from trainop.engine.trainer import network
from trainop.engine.trainer.containers import Raw, Wire, as_list, as_map, maps
from trainop.engine.trainer.info import RuntimeInfo, pod_spec
from trainop.engine.trainer.plugins import torchtune
from trainop.engine.trainer.plugins.base import (
    PlanError,
    Plugin,
    ValidateContext,
    Validation,
    sized_trainer,
)
from trainop.errors import FieldError

AUTO = "auto"


def policy(info: RuntimeInfo) -> Raw | None:
    torch = info.ml_policy.get("torch")
    return torch if isinstance(torch, Mapping) else None


def master_address(info: RuntimeInfo) -> str:
    return info.network.host(network.master_endpoint(info.name))


def master_port(info: RuntimeInfo) -> int:
    return info.network.port(network.master_endpoint(info.name), c.TRAINER_PORT)


def runtime_resources(info: RuntimeInfo) -> Raw:
    """``trainer.resourcesPerNode`` if set, else the runtime trainer ``node`` container's
    resources (the first job named ``node`` or labelled ancestor ``trainer``)."""
    wanted = as_map((info.trainer or {}).get("resourcesPerNode"))
    if wanted:
        return wanted
    for job in maps(info.template.get("replicatedJobs")):
        labels = as_map(as_map(as_map(job.get("template")).get("metadata")).get("labels"))
        if job.get("name") == c.NODE or labels.get(c.LABEL_ANCESTOR) == c.ANCESTOR_TRAINER:
            node = k.named(maps(pod_spec(job).get("containers")), c.NODE)
            return as_map((node or {}).get("resources"))
    return {}


def procs_per_node(info: RuntimeInfo) -> int | str:
    """``numProcPerNode`` after §3.4 steps 2-4: an int, or ``auto`` when GPUs are present."""
    value = (info.trainer or {}).get("numProcPerNode")
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value != AUTO:
        return int(value) if value.isdigit() else value
    resources = runtime_resources(info)
    return AUTO if k.gpu_count(resources) > 0 else k.cpu_count(resources)


def pet_env(info: RuntimeInfo, nodes: int, procs: int | str, *, master: bool) -> list[Wire]:
    """The ``PET_*`` vars in upstream's order (the master pair only when ``master``)."""
    entries = [
        k.env("PET_NNODES", str(nodes)),
        k.env("PET_NPROC_PER_NODE", str(procs)),
        k.completion_index_env("PET_NODE_RANK"),
    ]
    if master:
        entries += [
            k.env("PET_MASTER_ADDR", master_address(info)),
            k.env("PET_MASTER_PORT", str(master_port(info))),
        ]
    return entries


def trainer_port() -> Wire:
    """The rendezvous port as the API server defaults it (protocol TCP)."""
    return {"containerPort": c.TRAINER_PORT, "protocol": "TCP"}


def enforce(info: RuntimeInfo) -> None:
    """§3.4 EnforceMLPolicy."""
    if policy(info) is None:
        return
    trainer_set, node = sized_trainer(info)
    procs = procs_per_node(info)
    nodes = trainer_set.count if trainer_set is not None else 1
    if info.trainer is not None and node is not None:
        k.upsert_env(node, maps(info.trainer.get("env")))
        tune = torchtune.is_torchtune(info)
        k.upsert_env(node, pet_env(info, nodes, procs, master=not tune))
        if tune:
            gpus = k.gpu_count(runtime_resources(info))
            node["command"] = torchtune.command(
                info,
                nodes=nodes,
                procs=procs,
                gpus=gpus,
                master=master_address(info),
                port=master_port(info),
            )
        k.upsert_port(node, trainer_port())
    _inject_targets(info, nodes, procs)


def _targets(info: RuntimeInfo) -> list[tuple[str, str]]:
    injection = as_map(as_map(policy(info)).get("envInjection"))
    return [
        (str(t.get("jobName", "")), str(name))
        for t in maps(injection.get("targets"))
        for name in as_list(t.get("containerNames"))
    ]


def _missing_target(job: str, container: str) -> str:
    return (
        f'envInjection target podSet "{job}" container "{container}" not found in runtime template'
    )


def _inject_targets(info: RuntimeInfo, nodes: int, procs: int | str) -> None:
    for job, name in _targets(info):
        pod_set = info.pod_set(job)
        found = None
        if pod_set is not None:
            found = k.named(pod_set.containers, name) or k.named(pod_set.init_containers, name)
        if found is None:
            raise PlanError(_missing_target(job, name))
        k.upsert_env(found, pet_env(info, nodes, procs, master=True))


def validate(info: RuntimeInfo, context: ValidateContext) -> Validation:
    """§3.4 Validate (torch runtimes only)."""
    if policy(info) is None:
        return [], []
    errors: list[FieldError] = []
    for job, name in _targets(info):
        pod_set = info.pod_set(job)
        if pod_set is None or not (
            k.named(pod_set.containers, name) or k.named(pod_set.init_containers, name)
        ):
            errors.append(FieldError("spec.runtimeRef", "Invalid", _missing_target(job, name)))
    errors += reserved_env_errors(info, c.TORCH_ENV)
    if torchtune.is_torchtune(info):
        num_nodes = (info.trainer or {}).get("numNodes")
        nodes = num_nodes if isinstance(num_nodes, int) else _int(info.ml_policy.get("numNodes"))
        gpus = k.gpu_count(runtime_resources(info))
        errors += torchtune.validate(info, nodes, procs_per_node(info), gpus)
    return errors, []


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 1


def reserved_env_errors(info: RuntimeInfo, reserved: tuple[str, ...]) -> list[FieldError]:
    """``spec.trainer.env`` naming reserved vars → one Invalid error listing them sorted."""
    names = sorted(
        {str(e.get("name")) for e in maps((info.trainer or {}).get("env"))} & set(reserved)
    )
    if not names:
        return []
    detail = f"must not have reserved envs, invalid envs configured: [{' '.join(names)}]"
    return [FieldError("spec.trainer.env", "Invalid", detail)]


PLUGIN = Plugin("Torch", enforce_ml_policy=enforce, validate=validate)
