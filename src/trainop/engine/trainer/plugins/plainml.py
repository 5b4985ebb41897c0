"""PlainML plugin (spec §3.8): node count and trainer env for runtimes without a framework.

Active unless the policy is torch, mpi or jax — so also for XGBoost runtimes and runtimes
without ``mlPolicy``. The trainer PodSet count comes from ``trainer.numNodes``; the TrainJob's
``trainer.env`` is upserted into the trainer ``node`` container. No env of its own, no port.
"""

from __future__ import annotations

from trainop.engine.trainer import containers as k
from trainop.engine.trainer.containers import maps
from trainop.engine.trainer.info import RuntimeInfo
from trainop.engine.trainer.plugins.base import Plugin, sized_trainer

_OTHERS = ("torch", "mpi", "jax")


def enforce(info: RuntimeInfo) -> None:
    if any(info.ml_policy.get(name) is not None for name in _OTHERS):
        return
    _, node = sized_trainer(info)
    if info.trainer is not None and node is not None:
        k.upsert_env(node, maps(info.trainer.get("env")))


PLUGIN = Plugin("PlainML", enforce_ml_policy=enforce)
