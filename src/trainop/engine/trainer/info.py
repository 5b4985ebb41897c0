"""``RuntimeInfo``: a TrainJob and its runtime merged into one working shape (spec §3.2).

``build_info`` does what upstream's ``newRuntimeInfo`` does before any plugin runs: the
propagated JobSet labels/annotations (runtime template metadata overlaid by each
runtimePatch's, later wins), the runtime's JobSetSpec with every runtimePatch strategically
merged (``patches``), the TrainJob's ``resourcesPerNode`` merged into the trainer's ``node``
container, and one ``PodSet`` per replicatedJob (in template order) with its count, pod
requests and the containers/volumes the plugins will edit.

A ``RuntimeInfo`` is a scratchpad owned by one ``plan`` (or one validation) call: the plugins
mutate its ``PodSet``\\ s, scheduler pod labels and extra objects in the registry's fixed order,
and the JobSet plugin writes the result back into ``template`` (§3.3 Build). Nothing outside
that call sees it, which is why it is a plain mutable dataclass.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from trainop.api.trainer import constants as c
from trainop.engine import quantities
from trainop.engine.trainer import patches
from trainop.engine.trainer.containers import Raw, Wire, as_list, as_map, maps, upsert_env
from trainop.engine.trainer.network import CLUSTER, PodNetwork


@dataclass(slots=True)
class PodSet:
    """One replicatedJob as the plugins see it: ``count`` pods per Job (its parallelism),
    the pod's containers/init containers/volumes (copies), and its effective requests."""

    name: str
    ancestor: str | None
    count: int
    replicas: int
    containers: list[Wire]
    init_containers: list[Wire]
    volumes: list[Wire]
    single_pod_requests: dict[str, quantities.Quantity]
    # Pod DNS names (§3.3 IdentifyPodNetwork), computed from ``count`` when read unless
    # fixed here (upstream's unit tests inject them).
    fixed_endpoints: tuple[str, ...] | None = None
    jobset_name: str = ""
    subdomain: str = ""

    def endpoints(self) -> list[str]:
        """``<jobset>-<rj>-<replica>-<pod>.<subdomain>`` for every pod, replica-major."""
        if self.fixed_endpoints is not None:
            return list(self.fixed_endpoints)
        return [
            f"{self.jobset_name}-{self.name}-{r}-{p}.{self.subdomain}"
            for r in range(self.replicas)
            for p in range(self.count)
        ]


@dataclass(slots=True)
class RuntimeInfo:
    """The working state of one TrainJob's plan (see the module docstring)."""

    trainjob: Raw
    runtime: Raw
    labels: dict[str, str]
    annotations: dict[str, str]
    template: Wire  # the JobSetSpec after runtimePatches, edited in place by the JobSet plugin
    pod_sets: list[PodSet]
    ml_policy: Raw
    pod_group_policy: Raw
    pod_labels: dict[str, str] = field(default_factory=dict)
    pod_annotations: dict[str, str] = field(default_factory=dict)
    network: PodNetwork = CLUSTER  # how pods address each other (``network``, note 133)

    @property
    def name(self) -> str:
        return str(as_map(self.trainjob.get("metadata")).get("name", ""))

    @property
    def namespace(self) -> str:
        return str(as_map(self.trainjob.get("metadata")).get("namespace", ""))

    @property
    def spec(self) -> Raw:
        return as_map(self.trainjob.get("spec"))

    @property
    def trainer(self) -> Raw | None:
        """``spec.trainer``, or None when the TrainJob has none (several plugins differ)."""
        trainer = self.spec.get("trainer")
        return trainer if isinstance(trainer, Mapping) else None

    def trainer_pod_set(self) -> PodSet | None:
        """The first PodSet whose Job carries ancestor ``trainer``."""
        return next((p for p in self.pod_sets if p.ancestor == c.ANCESTOR_TRAINER), None)

    def pod_set(self, name: str) -> PodSet | None:
        return next((p for p in self.pod_sets if p.name == name), None)


def _metadata(runtime_template: Raw, runtime_patches: list[Any], key: str) -> dict[str, str]:
    merged = {
        str(k): str(v) for k, v in as_map(as_map(runtime_template.get("metadata")).get(key)).items()
    }
    for patch in runtime_patches:
        template = as_map(as_map(as_map(patch).get("trainingRuntimeSpec")).get("template"))
        merged.update(
            {str(k): str(v) for k, v in as_map(as_map(template.get("metadata")).get(key)).items()}
        )
    return merged


def child(parent: Wire, key: str) -> Wire:
    """``parent[key]`` as a dict, created (or replacing a malformed value) when it is not."""
    value = parent.get(key)
    if not isinstance(value, dict):
        value = parent[key] = {}
    return value


def job_spec(job: Wire) -> Wire:
    """The Job spec of a replicatedJob (created empty when missing, so edits stick)."""
    return child(child(job, "template"), "spec")


def pod_spec(job: Wire) -> Wire:
    """The pod spec of a replicatedJob (created empty when missing, so edits stick)."""
    return child(child(job_spec(job), "template"), "spec")


def ancestor(job: Raw) -> str | None:
    labels = as_map(as_map(as_map(job.get("template")).get("metadata")).get("labels"))
    value = labels.get(c.LABEL_ANCESTOR)
    return str(value) if value is not None else None


def _merge_resources(runtime: Raw, trainjob: Raw) -> Wire:
    merged: Wire = copy.deepcopy(dict(runtime))
    for section in ("limits", "requests"):
        values = as_map(trainjob.get(section))
        if values:
            merged[section] = {**as_map(merged.get(section)), **values}
    claims = maps(trainjob.get("claims"))
    if claims:
        current = maps(merged.get("claims"))
        for claim in claims:
            current = [x for x in current if x.get("name") != claim.get("name")] + [claim]
        merged["claims"] = current
    return merged


def _requests(spec: Raw) -> dict[str, quantities.Quantity]:
    """Kubernetes' pod requests rule: containers summed, each init container a floor,
    plus overhead; limits-only resources count 0."""
    total: dict[str, quantities.Quantity] = {}
    for container in maps(spec.get("containers")):
        for name, value in as_map(as_map(container.get("resources")).get("requests")).items():
            q = quantities.parse(value)
            total[name] = total[name] + q if name in total else q
    for container in maps(spec.get("initContainers")):
        for name, value in as_map(as_map(container.get("resources")).get("requests")).items():
            q = quantities.parse(value)
            if name not in total or q.amount > total[name].amount:
                total[name] = q
    for name, value in as_map(spec.get("overhead")).items():
        q = quantities.parse(value)
        total[name] = total[name] + q if name in total else q
    return total


def _copy_container(container: Raw) -> Wire:
    keys = ("name", "image", "command", "env", "ports", "volumeMounts")
    return {k: copy.deepcopy(container[k]) for k in keys if k in container}


def _pod_set(info: RuntimeInfo, job: Wire) -> PodSet:
    job_spec = as_map(as_map(job.get("template")).get("spec"))
    step = ancestor(job)
    if step == c.ANCESTOR_TRAINER and info.ml_policy:
        count = _int(info.ml_policy.get("numNodes"), 1)
    else:
        count = _int(job_spec.get("parallelism"), 1)
    spec = pod_spec(job)
    return PodSet(
        name=str(job.get("name", "")),
        ancestor=step,
        count=max(count, 1),
        replicas=_int(job.get("replicas"), 1),
        containers=[_copy_container(x) for x in maps(spec.get("containers"))],
        init_containers=[_copy_container(x) for x in maps(spec.get("initContainers"))],
        volumes=copy.deepcopy(maps(spec.get("volumes"))),
        single_pod_requests=_requests(spec),
    )


def _int(value: object, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _merge_trainer_resources(info: RuntimeInfo) -> None:
    """§3.2 step 3: ``trainer.resourcesPerNode`` over the first ``node`` container of the
    trainer job (only with an mlPolicy), and of the job named ``node`` when MPI runs the
    launcher as a node."""
    trainer = info.trainer or {}
    wanted = as_map(trainer.get("resourcesPerNode"))
    if not wanted or not info.ml_policy:
        return
    launcher_as_node = bool(as_map(info.ml_policy.get("mpi")).get("runLauncherAsNode"))
    for job in maps(info.template.get("replicatedJobs")):
        is_trainer = ancestor(job) == c.ANCESTOR_TRAINER
        if not (is_trainer or (launcher_as_node and job.get("name") == c.NODE)):
            continue
        container = next(
            (x for x in maps(pod_spec(job).get("containers")) if x.get("name") == c.NODE), None
        )
        if container is not None:
            container["resources"] = _merge_resources(as_map(container.get("resources")), wanted)


def _apply_trainer(info: RuntimeInfo) -> None:
    """The TrainJob's ``trainer`` image/command/args on the ``node`` container of every
    ancestor-``trainer`` job, and its env there and (MPI ``runLauncherAsNode``) in the job named
    ``node`` (§3.3 Build step 4). Done before the PodSets are read, so the plugins see the
    TrainJob's command (torchtune rewrites it) and the write-back keeps their edits."""
    trainer = info.trainer
    if trainer is None:
        return
    launcher_as_node = bool(as_map(info.ml_policy.get("mpi")).get("runLauncherAsNode"))
    for job in maps(info.template.get("replicatedJobs")):
        is_trainer = ancestor(job) == c.ANCESTOR_TRAINER
        if not (is_trainer or (launcher_as_node and job.get("name") == c.NODE)):
            continue
        node = next(
            (x for x in maps(pod_spec(job).get("containers")) if x.get("name") == c.NODE), None
        )
        if node is None:
            continue
        if is_trainer:
            for key in ("image", "command", "args"):
                if trainer.get(key) is not None:
                    node[key] = copy.deepcopy(trainer[key])
        upsert_env(node, maps(trainer.get("env")))


def build_info(trainjob: Raw, runtime: Raw, network: PodNetwork = CLUSTER) -> RuntimeInfo:
    """The RuntimeInfo of ``trainjob`` run by ``runtime`` (a whole runtime object), its pods
    addressed through ``network``."""
    runtime_spec = as_map(runtime.get("spec"))
    template = as_map(runtime_spec.get("template"))
    runtime_patches = as_list(as_map(trainjob.get("spec")).get("runtimePatches"))
    info = RuntimeInfo(
        trainjob=trainjob,
        runtime=runtime,
        labels=_metadata(template, runtime_patches, "labels"),
        annotations=_metadata(template, runtime_patches, "annotations"),
        template=patches.apply_runtime_patches(as_map(template.get("spec")), runtime_patches),
        pod_sets=[],
        ml_policy=as_map(runtime_spec.get("mlPolicy")),
        pod_group_policy=as_map(runtime_spec.get("podGroupPolicy")),
        network=network,
    )
    info.template["replicatedJobs"] = maps(info.template.get("replicatedJobs"))
    _merge_trainer_resources(info)
    _apply_trainer(info)
    info.pod_sets = [_pod_set(info, job) for job in info.template["replicatedJobs"]]
    return info
