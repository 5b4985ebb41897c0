"""JAX plugin (spec §3.6): ``jax.distributed`` env and port 29500.

Active when ``mlPolicy.jax`` is set. The trainer PodSet count comes from ``trainer.numNodes``;
with a ``trainer`` and a ``node`` container, the container gets ``JAX_NUM_PROCESSES`` (the node
count), ``JAX_PROCESS_ID`` (the completion index), ``JAX_COORDINATOR_ADDRESS`` (the first trainer
pod, port 29500) and the port. ``numProcPerNode`` is ignored; there is no reserved-env check.
"""

from __future__ import annotations

from collections.abc import Mapping

from trainop.engine.trainer import containers as k
from trainop.engine.trainer.info import RuntimeInfo
from trainop.engine.trainer.plugins import torch
from trainop.engine.trainer.plugins.base import Plugin, sized_trainer


def is_active(info: RuntimeInfo) -> bool:
    return isinstance(info.ml_policy.get("jax"), Mapping)


def enforce(info: RuntimeInfo) -> None:
    if not is_active(info):
        return
    trainer_set, node = sized_trainer(info)
    if trainer_set is None or node is None:
        return
    k.upsert_env(
        node,
        [
            k.env("JAX_NUM_PROCESSES", str(trainer_set.count)),
            k.completion_index_env("JAX_PROCESS_ID"),
            k.env(
                "JAX_COORDINATOR_ADDRESS", f"{torch.master_address(info)}:{torch.master_port(info)}"
            ),
        ],
    )
    k.upsert_port(node, torch.trainer_port())


PLUGIN = Plugin("JAX", enforce_ml_policy=enforce)
