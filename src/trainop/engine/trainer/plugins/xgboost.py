"""XGBoost plugin (spec §3.7): the Rabit tracker env and port 29500.

Active when ``mlPolicy.xgboost`` is set. The trainer PodSet count comes from
``trainer.numNodes``; with a ``trainer`` and a ``node`` container: ``DMLC_TRACKER_URI`` (the first
trainer pod), ``DMLC_TRACKER_PORT``, ``DMLC_TASK_ID`` (the completion index), ``DMLC_NUM_WORKER``
= nodes x workers per node (the GPU count, else 1), and the port. Validate: each reserved name
in ``trainer.env`` is Forbidden on its own entry. PlainML also runs for XGBoost runtimes (after
this plugin, so the trainer env follows the ``DMLC_*`` vars).
"""

from __future__ import annotations

from collections.abc import Mapping

from trainop.api.trainer import constants as c
from trainop.engine.trainer import containers as k
from trainop.engine.trainer.containers import maps
from trainop.engine.trainer.info import RuntimeInfo
from trainop.engine.trainer.plugins import torch
from trainop.engine.trainer.plugins.base import Plugin, ValidateContext, Validation, sized_trainer
from trainop.errors import FieldError


def is_active(info: RuntimeInfo) -> bool:
    return isinstance(info.ml_policy.get("xgboost"), Mapping)


def enforce(info: RuntimeInfo) -> None:
    if not is_active(info):
        return
    trainer_set, node = sized_trainer(info)
    if trainer_set is None or node is None:
        return
    workers = k.gpu_count(torch.runtime_resources(info)) or 1
    k.upsert_env(
        node,
        [
            k.env("DMLC_TRACKER_URI", torch.master_address(info)),
            k.env("DMLC_TRACKER_PORT", str(torch.master_port(info))),
            k.completion_index_env("DMLC_TASK_ID"),
            k.env("DMLC_NUM_WORKER", str(trainer_set.count * workers)),
        ],
    )
    k.upsert_port(node, torch.trainer_port())


def validate(info: RuntimeInfo, context: ValidateContext) -> Validation:
    if not is_active(info):
        return [], []
    errors = [
        FieldError(
            f"spec.trainer.env[{i}]",
            "Forbidden",
            f"{e.get('name')} is reserved for the XGBoost runtime",
        )
        for i, e in enumerate(maps((info.trainer or {}).get("env")))
        if e.get("name") in c.XGBOOST_ENV
    ]
    return errors, []


PLUGIN = Plugin("XGBoost", enforce_ml_policy=enforce, validate=validate)
