"""``validate_trainjob``: the one TrainJob admission function (spec §6.1 TrainJob validator).

The webhook, the embedded API server and ``trainop validate`` all call it. Order: the API's
own rules (``api.trainer.validation.trainjob_errors``: schema, CEL, immutability; if any fail
they are the answer, as kube-apiserver's 422 comes before any webhook) → an unregistered
runtime kind → a runtime that does not exist (upstream's field path ``spec.RuntimeRef`` for
ClusterTrainingRuntimes, capital R, kept for fidelity) → the deprecation warning → every
plugin's Validate on the RuntimeInfo built from the **live** runtime (no enforce phase).

Inputs are plain mappings; the live JobSet (for the runtimePatches-while-active rule) and the
existing PriorityClass names (Volcano) are optional, since a pure function cannot read them.
Malformed input yields ``FieldError``\\ s, never an exception.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from trainop.api.trainer import constants as c
from trainop.api.trainer.validation import deprecation_warning, trainjob_errors
from trainop.engine.trainer.containers import as_map
from trainop.engine.trainer.info import build_info
from trainop.engine.trainer.plan import runtime_key
from trainop.engine.trainer.plugins import registry
from trainop.engine.trainer.plugins.base import ValidateContext
from trainop.errors import FieldError

Validation = tuple[list[FieldError], list[str]]


def _missing_runtime(trainjob: Mapping[str, Any]) -> FieldError:
    ref = as_map(as_map(trainjob.get("spec")).get("runtimeRef"))
    kind, name = str(ref.get("kind", c.CLUSTER_TRAINING_RUNTIME)), ref.get("name", "")
    not_found = f'{c.PLURALS.get(kind, "")}.{c.GROUP} "{name}" not found'
    tail = "must be created before the TrainJob is created"
    if kind == c.TRAINING_RUNTIME:
        detail = f"{not_found}: specified trainingRuntime {tail}"
        return FieldError("spec.runtimeRef", "Invalid", detail)
    detail = f"{not_found}: specified clusterTrainingRuntime {tail}"
    return FieldError("spec.RuntimeRef", "Invalid", detail)


def validate_trainjob(
    trainjob: Mapping[str, Any],
    runtime: Mapping[str, Any] | None,
    runtime_kind_known: bool,
    old: Mapping[str, Any] | None = None,
    *,
    jobset: Mapping[str, Any] | None = None,
    priority_classes: Collection[str] | None = None,
) -> Validation:
    """(errors, warnings) of a TrainJob CREATE (``old`` None) or UPDATE against ``runtime``
    (the live runtime object, None when it does not exist)."""
    errors = trainjob_errors(trainjob, old)
    if errors or not isinstance(trainjob, Mapping):
        return errors, []
    if not runtime_kind_known:
        detail = c.UNSUPPORTED_RUNTIME_PREFIX + runtime_key(trainjob)
        return [FieldError("spec.runtimeRef", "Invalid", detail)], []
    if runtime is None:
        return [_missing_runtime(trainjob)], []
    warnings = []
    labels = as_map(as_map(runtime.get("metadata")).get("labels"))
    is_cluster = runtime.get("kind") == c.CLUSTER_TRAINING_RUNTIME
    if is_cluster and labels.get(c.LABEL_SUPPORT) == c.SUPPORT_DEPRECATED:
        name = str(as_map(runtime.get("metadata")).get("name", ""))
        warnings.append(deprecation_warning(name, referenced=True))
    info = build_info(trainjob, runtime)
    context = ValidateContext(old=old, jobset=jobset, priority_classes=priority_classes)
    found, said = registry.validate(info, context)
    return found, warnings + said
