"""The TrainJob plugins in one fixed order, and the phases that run them (spec §3.1).

Order (upstream's is Go map iteration, stable per process only): the ML policies Torch, MPI,
JAX, XGBoost, PlainML; the pod-group policies CoScheduling, Volcano; then JobSet. Hence the
objects are applied as MPI Secret and hostfile, PodGroup, JobSet (what the pods mount and the
gang they join exist before the pods), and XGBoost's ``DMLC_*`` precede PlainML's trainer env.
Flux and the feature-gated TrainJobStatus plugin are not implemented (docs/design/111).
"""

from __future__ import annotations

from trainop.engine.trainer.containers import Wire
from trainop.engine.trainer.info import RuntimeInfo
from trainop.engine.trainer.plugins import (
    coscheduling,
    jax,
    jobset,
    mpi,
    plainml,
    torch,
    volcano,
    xgboost,
)
from trainop.engine.trainer.plugins.base import BuildContext, Plugin, ValidateContext, Validation

PLUGINS: tuple[Plugin, ...] = (
    torch.PLUGIN,
    mpi.PLUGIN,
    jax.PLUGIN,
    xgboost.PLUGIN,
    plainml.PLUGIN,
    coscheduling.PLUGIN,
    volcano.PLUGIN,
    jobset.PLUGIN,
)


def enforce(info: RuntimeInfo) -> None:
    """EnforceMLPolicy → EnforcePodGroupPolicy → PodNetwork → SyncParallelCount, in place
    (raises ``PlanError``)."""
    for plugin in PLUGINS:
        if plugin.enforce_ml_policy is not None:
            plugin.enforce_ml_policy(info)
    for plugin in PLUGINS:
        if plugin.enforce_pod_group_policy is not None:
            plugin.enforce_pod_group_policy(info)
    for plugin in PLUGINS:
        if plugin.identify_pod_network is not None:
            plugin.identify_pod_network(info)
    jobset.sync_parallel_count(info)


def build(info: RuntimeInfo, context: BuildContext) -> list[Wire]:
    """Every plugin's objects, in registry order (raises ``PlanError``)."""
    objects: list[Wire] = []
    for plugin in PLUGINS:
        if plugin.build is not None:
            objects += plugin.build(info, context)
    return objects


def validate(info: RuntimeInfo, context: ValidateContext) -> Validation:
    """Every plugin's Validate on an un-enforced info; errors and warnings concatenated."""
    errors, warnings = [], []
    for plugin in PLUGINS:
        if plugin.validate is not None:
            found, said = plugin.validate(info, context)
            errors += found
            warnings += said
    return errors, warnings
