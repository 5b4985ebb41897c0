"""v1 → v2: a kubeflow.org/v1 job as a TrainJob plus a namespaced TrainingRuntime (pure).

``convert(job)`` reads a v1 job of any kind (``MPIJob`` v2beta1 too) through
``trainop.api.manifest.load_job``, so a bad manifest raises the same ``InvalidJobError`` that
``trainop validate`` reports, and returns a ``Conversion``:

- ``runtime``: a ``TrainingRuntime`` named after the job, in its namespace, whose JobSet
  template reproduces the v1 pods (``runtime``, ``layout``, ``rendezvous``, ``shell``; MPI:
  ``mpi``);
- ``trainjob``: a ``TrainJob`` of the same name and metadata that references that runtime and
  keeps what a TrainJob holds (``suspend``, ``activeDeadlineSeconds``, a MultiKueue
  ``managedBy``); it has no ``trainer`` block, so nothing overrides the runtime's pods;
- ``dropped``: every v1 field v2 cannot express, with what happens instead (``dropped``).

Design note 113 explains each mapping.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from trainop.api import manifest
from trainop.api.defaults import apply_defaults
from trainop.api.trainer import constants
from trainop.api.types import Job, RunPolicy
from trainop.engine.convert import layout as layouts
from trainop.engine.convert import mpi, runtime
from trainop.engine.convert.dropped import DroppedField, framework_fields, run_policy_fields
from trainop.frameworks.base import Framework
from trainop.frameworks.registry import framework_for

__all__ = ["Conversion", "DroppedField", "convert"]

Wire = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Conversion:
    """A v1 job as v2 objects, and what v2 could not keep."""

    trainjob: Wire
    runtime: Wire
    dropped: list[DroppedField] = field(default_factory=list)


def convert(job: Mapping[str, Any], *, source: str | None = None) -> Conversion:
    """``job`` (a v1 manifest mapping) as a TrainJob and a TrainingRuntime (module docstring).

    Raises ``InvalidJobError`` or ``ManifestError`` as ``manifest.load_job`` does.
    """
    written = manifest.load_job(dict(job), source=source)
    framework = framework_for(written.kind)
    defaulted = _with_derived(apply_defaults(written), framework)
    shape = _layout(defaulted, framework)
    is_mpi = shape.ml_policy is not None
    dropped = run_policy_fields(written) + framework_fields(written, framework, mpi=is_mpi)
    if is_mpi:
        dropped += mpi.dropped(written)
    found = runtime.training_runtime(
        job=defaulted, framework=framework, layout=shape, dropped=dropped
    )
    return Conversion(trainjob=_trainjob(written), runtime=found, dropped=dropped)


def _with_derived(job: Job, framework: Framework) -> Job:
    """``job`` with the replica types v1 derives from the others (DGL's Partitioner)."""
    if framework.derive_replicas is None:
        return job
    specs = {**job.spec.replica_specs, **framework.derive_replicas(job=job)}
    return job.model_copy(update={"spec": job.spec.model_copy(update={"replica_specs": specs})})


def _layout(job: Job, framework: Framework) -> layouts.Layout:
    if framework.info.framework == "mpi":
        return mpi.layout(job, framework)
    return layouts.layout(job, framework)


def _trainjob(job: Job) -> Wire:
    """The TrainJob: the job's metadata, a reference to its runtime, the run policy v2 keeps."""
    metadata: Wire = {"name": job.metadata.name}
    for key in ("namespace", "labels", "annotations"):
        value = getattr(job.metadata, key)
        if value:
            metadata[key] = value
    spec: Wire = {
        "runtimeRef": {
            "name": job.metadata.name,
            "apiGroup": constants.GROUP,
            "kind": constants.TRAINING_RUNTIME,
        }
    }
    policy = job.spec.run_policy or RunPolicy()
    if policy.suspend:
        spec["suspend"] = True
    if policy.active_deadline_seconds:
        spec["activeDeadlineSeconds"] = policy.active_deadline_seconds
    if policy.managed_by == constants.MANAGED_BY_MULTIKUEUE:
        spec["managedBy"] = constants.MANAGED_BY_MULTIKUEUE
    return {
        "apiVersion": constants.API_VERSION,
        "kind": constants.TRAINJOB,
        "metadata": metadata,
        "spec": spec,
    }
