"""The rendezvous env a v1 operator gives each replica, as a JobSet pod template can give it.

The framework plugin (``trainop.frameworks``) computes, for every replica, the env the v1
operator appends to its containers; here it runs with ``JobSetTopology``, which addresses
replica ``i`` of type ``T`` as the pod JobSet and its Indexed Job name for it,
``<job>-<t>-0-<i>.<job>`` (hostname ``<jobset>-<replicatedJob>-<jobIndex>-<podIndex>`` in the
subdomain named after the JobSet), on the port of the type's template, as v1 does.

One pod template serves every replica of a type, so each variable is sorted by how it varies
with the replica's index ``i`` (the pod's completion index):

- the same for every ``i`` → an ``env`` entry as the plugin wrote it;
- ``i`` itself (``PROCESS_ID``) → the completion-index annotation through the downward API;
- ``i + k`` (a Worker's ``RANK`` behind one Master) → a prologue ``export`` with arithmetic;
- anything else (``TF_CONFIG``'s task, Paddle's first worker) → a prologue ``case`` table.

Prologue variables need the container's command (``shell.wrap``); ``runtime`` decides.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from trainop.api.trainer import constants
from trainop.api.types import Job
from trainop.engine.convert import shell
from trainop.frameworks.base import EnvVar, Framework, Replica, Wire, replicas_of
from trainop.frameworks.options import FrameworkOptions
from trainop.frameworks.topology import template_port


def replicated_job_name(replica_type: str) -> str:
    """The replicatedJob of a v1 replica type: its name in v1's pod names (``Worker`` →
    ``worker``)."""
    return replica_type.lower().replace("/", "-")


def pod_host(jobset: str, replicated_job: str, index: int) -> str:
    """The DNS name of pod ``index`` of the one Job of ``replicated_job`` (JobSet section 2.6)."""
    return f"{jobset}-{replicated_job}-0-{index}.{jobset}"


@dataclass(frozen=True, slots=True)
class JobSetTopology:
    """v1's Topology seam answered with JobSet's pod names: one Job per replica type, one pod
    per completion index, in the subdomain named after the JobSet (the job's name)."""

    jobset: str

    def host(self, *, job: Job, replica_type: str, index: int, qualified: bool = False) -> str:
        # Qualified or not: ``<host>.<subdomain>`` resolves through the pod's search path in
        # any namespace the job is applied to, which a manifest may leave unsaid.
        del job, qualified
        return pod_host(self.jobset, replicated_job_name(replica_type), index)

    def port(self, *, job: Job, replica_type: str, index: int) -> int:
        del index
        return template_port(job=job, replica_type=replica_type)


@dataclass(frozen=True, slots=True)
class ReplicaEnv:
    """What the containers of one replica type get: ``env`` entries and prologue lines."""

    env: tuple[Wire, ...]
    exports: tuple[str, ...]
    exported: tuple[str, ...]  # the names the exports set


def replica_env(
    *, job: Job, framework: Framework, replica_type: str, options: FrameworkOptions
) -> ReplicaEnv:
    """The v1 env of every replica of ``replica_type``, as one template's entries and exports."""
    topology = JobSetTopology(job.metadata.name or "")
    indexed = replica_type not in framework.unindexed_types
    count = max(replicas_of(job, replica_type), 1) if indexed else 1
    per_index = [
        {
            var.name: var
            for var in framework.env(
                job=job,
                replica=Replica(replica_type, i if indexed else None),
                topology=topology,
                options=options,
            )
        }
        for i in range(count)
    ]
    names = list(dict.fromkeys(name for found in per_index for name in found))
    env: list[Wire] = []
    exports: dict[str, str] = {}
    for name in names:
        entry, export = _classify(name, [found.get(name) for found in per_index])
        if entry is not None:
            env.append(entry)
        if export is not None:
            exports[name] = export
    return ReplicaEnv(tuple(env), tuple(exports.values()), tuple(exports))


def _classify(name: str, values: Sequence[EnvVar | None]) -> tuple[Wire | None, str | None]:
    """An ``env`` entry or a prologue line for one variable, from its value at each index."""
    present = [v for v in values if v is not None]
    distinct = set(present)
    complete = len(present) == len(values)
    if len(distinct) == 1 and (complete or present[0].field_path is not None):
        return present[0].to_wire(), None  # a field reference is harmless on every pod
    offset = _offset(values) if complete else None
    if offset == 0:
        field = {"fieldRef": {"fieldPath": constants.COMPLETION_INDEX_FIELD}}
        return {"name": name, "valueFrom": field}, None
    if offset is not None:
        return None, shell.offset_export(name, offset)
    literal = {i: v.value for i, v in enumerate(values) if v is not None and v.field_path is None}
    return None, shell.table_export(name, literal)


def _offset(values: Sequence[EnvVar | None]) -> int | None:
    """``k`` when the value at every index ``i`` is the number ``i + k``, else None."""
    offsets = set()
    for index, var in enumerate(values):
        if var is None or var.field_path is not None or not _is_int(var.value):
            return None
        offsets.add(int(var.value) - index)
    return offsets.pop() if len(offsets) == 1 else None


def _is_int(text: str) -> bool:
    return text.lstrip("-").isdigit()
