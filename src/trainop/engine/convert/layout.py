"""How a v1 job's replica types become a JobSet's replicatedJobs: names, order, success, startup.

One ``Layout`` per conversion, chosen from the kind's framework plugin and a small table of
the v1 facts a JobSet must restate (spec 6 of the v1 behaviour, section 2 of the JobSet one):

- every replica type with replicas becomes one replicatedJob named as v1 names its pods
  (``Worker`` → ``worker``), ``replicas: 1``, one pod per Indexed-Job index;
- the JobSet succeeds when the type that decides v1's success (the plugin's ``primary``)
  succeeds; a TFJob without a chief succeeds on worker 0 alone (``successPolicy`` unset), an
  elastic PyTorchJob without a master on any one worker: the Job's own ``successPolicy``;
- types v1 starts only after others finished (``starts_after``: DGL's workers) get
  ``dependsOn: Complete``; PyTorch workers, which v1 holds in an init container until the
  master's name resolves, get ``dependsOn: Ready`` on the master;
- MPI has its own layout (``mpi``): v2's MPI plugin names the jobs ``launcher`` and ``node``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from trainop.api.types import Job
from trainop.engine.convert.rendezvous import replicated_job_name
from trainop.frameworks.base import Framework, replicas_of

Wire = dict[str, Any]

# The value of the runtime label trainer.kubeflow.org/framework, by v1 framework.
FRAMEWORK_LABELS = {
    "tensorflow": "tensorflow",
    "pytorch": "torch",
    "xgboost": "xgboost",
    "mpi": "mpi",
    "paddle": "paddle",
    "jax": "jax",
    "mxnet": "mxnet",
    "dgl": "dgl",
}
# v1 frameworks whose workers wait for the master (type, the type it waits for).
_WAITS_FOR_READY = {"pytorch": ("Worker", "Master")}


@dataclass(frozen=True, slots=True)
class Layout:
    """The JobSet shape of one conversion."""

    names: Mapping[str, str]  # v1 replica type -> replicatedJob, in JobSet order
    success: tuple[str, ...]  # replica types whose Jobs decide the JobSet's success
    depends_on: Mapping[str, tuple[str, str]] = field(
        default_factory=dict
    )  # type -> (type, status)
    job_success: Mapping[str, Wire] = field(default_factory=dict)  # type -> Job successPolicy
    trainer: str | None = None  # the type labelled ancestor ``trainer``
    framework_env: bool = True  # whether the plugin's v1 env is given (MPI: v2's plugin's)
    ml_policy: Wire | None = None
    renamed_container: str | None = None  # the first container of every type is renamed


def replica_types(job: Job, framework: Framework) -> list[str]:
    """The replica types that run pods, in the kind's order (then any others)."""
    order = [*framework.info.replica_types, *job.spec.replica_specs]
    present = [rt for rt in dict.fromkeys(order) if rt in job.spec.replica_specs]
    return [rt for rt in present if replicas_of(job, rt) > 0]


def dependency_order(types: list[str], depends_on: Mapping[str, tuple[str, str]]) -> list[str]:
    """``types`` with every type after the one it depends on, otherwise in the given order.

    JobSet's webhook admits a ``dependsOn`` only on an earlier replicatedJob (JobSet spec 1.5
    rule 9), so an MPI launcher that waits for its workers is listed after them.
    """
    ordered: list[str] = []

    def place(rt: str, seen: frozenset[str]) -> None:
        if rt in ordered or rt in seen:
            return
        after = depends_on.get(rt)
        if after is not None and after[0] in types:
            place(after[0], seen | {rt})
        ordered.append(rt)

    for rt in types:
        place(rt, frozenset())
    return ordered


def layout(job: Job, framework: Framework) -> Layout:
    """The layout of a non-MPI kind (``mpi.layout`` has MPI's)."""
    types = replica_types(job, framework)
    primary = framework.primary_type(job)
    success = (primary,) if primary in types else tuple(types)
    depends: dict[str, tuple[str, str]] = {
        rt: (after, "Complete") for rt, after in framework.starts_after.items() if rt in types
    }
    wait = _WAITS_FOR_READY.get(framework.info.framework)
    if wait is not None and wait[0] in types and wait[1] in types:
        depends[wait[0]] = (wait[1], "Ready")
    return Layout(
        names={rt: replicated_job_name(rt) for rt in dependency_order(types, depends)},
        success=success,
        depends_on=depends,
        job_success=_job_success(job, primary),
    )


def _job_success(job: Job, primary: str | None) -> dict[str, Wire]:
    """A Job ``successPolicy`` where v1 succeeds before every pod of the deciding type did."""
    if primary != "Worker":
        return {}
    if hasattr(job.spec, "success_policy") and job.spec.success_policy != "AllWorkers":
        return {"Worker": {"rules": [{"succeededIndexes": "0"}]}}  # TFJob: worker 0 decides
    if getattr(job.spec, "elastic_policy", None) is not None and _torch_elastic(job):
        return {"Worker": {"rules": [{"succeededCount": 1}]}}  # elastic: any worker decides
    return {}


def _torch_elastic(job: Job) -> bool:
    """PyTorch's elastic rule (v1 spec 6.2): one succeeded worker completes the job."""
    return hasattr(job.spec, "nproc_per_node")
