"""The TrainJob plugin contract (spec §3.1): small roles, each an optional function.

A ``Plugin`` names which roles it plays by the functions it carries: ``enforce_ml_policy``
and ``enforce_pod_group_policy`` edit the ``RuntimeInfo``, ``identify_pod_network`` sets the
pods' DNS names, ``build`` returns the objects to apply, ``validate`` returns admission errors
and warnings. ``registry.PLUGINS`` runs them phase by phase in one fixed order (upstream's
order is Go map iteration). A role that cannot be satisfied raises ``PlanError``; the
planner turns it into upstream's ``TrainJobResourcesCreationFailed`` event and a retry.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from trainop.api.trainer import constants as c
from trainop.engine.trainer import containers as k
from trainop.engine.trainer.info import PodSet, RuntimeInfo
from trainop.errors import FieldError, TrainopError

Raw = Mapping[str, Any]
Wire = dict[str, Any]


class PlanError(TrainopError):
    """A runtime and TrainJob that cannot be turned into objects; ``str`` is upstream's text."""


@dataclass(frozen=True, slots=True)
class BuildContext:
    """What ``build`` may read besides the info: the live objects of the TrainJob (None when
    missing) and the key-pair source for a new MPI Secret."""

    jobset: Raw | None
    pod_groups: Mapping[str, Raw]  # by apiVersion
    mpi_secret: Raw | None
    new_ssh_keys: Callable[[], tuple[str, str]]


@dataclass(frozen=True, slots=True)
class ValidateContext:
    """What ``validate`` may read: the old TrainJob on UPDATE, the live JobSet (for the
    runtimePatches rule) and the PriorityClass names that exist (None: unknown, not checked)."""

    old: Raw | None
    jobset: Raw | None
    priority_classes: Collection[str] | None


Validation = tuple[list[FieldError], list[str]]


@dataclass(frozen=True, slots=True)
class Plugin:
    """One plugin: its name and the roles it plays."""

    name: str
    enforce_ml_policy: Callable[[RuntimeInfo], None] | None = None
    enforce_pod_group_policy: Callable[[RuntimeInfo], None] | None = None
    identify_pod_network: Callable[[RuntimeInfo], None] | None = None
    build: Callable[[RuntimeInfo, BuildContext], list[Wire]] | None = None
    validate: Callable[[RuntimeInfo, ValidateContext], Validation] | None = None


def owner_reference(info: RuntimeInfo) -> Wire:
    """The controller ownerReference to the TrainJob every created object carries (§2.8)."""
    meta = info.trainjob.get("metadata") or {}
    return {
        "apiVersion": c.API_VERSION,
        "kind": c.TRAINJOB,
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def object_meta(info: RuntimeInfo, name: str) -> Wire:
    """Metadata of an object the TrainJob owns: name, namespace, ownerReference."""
    return {"name": name, "namespace": info.namespace, "ownerReferences": [owner_reference(info)]}


def sized_trainer(info: RuntimeInfo) -> tuple[PodSet | None, Wire | None]:
    """The ML plugins' first step: the trainer PodSet, its count set from ``trainer.numNodes``
    when the TrainJob gives one, and its ``node`` container when the TrainJob has a
    ``trainer`` block (the one the plugins give env and ports; None otherwise)."""
    trainer_set = info.trainer_pod_set()
    if trainer_set is None:
        return None, None
    num_nodes = (info.trainer or {}).get("numNodes")
    if isinstance(num_nodes, int):
        trainer_set.count = num_nodes
    node = k.named(trainer_set.containers, c.NODE) if info.trainer is not None else None
    return trainer_set, node
