"""Validation of the Trainer v2 kinds: schema, limits, CEL rules and the runtime webhook rules.

kube-apiserver judges a Trainer object by its CRD's schema and CEL rules (spec sections 1.1-1.6)
and then by Trainer's webhooks (section 6.1). The embedded API server does not evaluate CEL,
so the rules are written out here, once, with upstream's messages in kube's framing
(``<path>: Invalid value: "<type>": <message>``; a rule on the object itself is reported at
``<nil>``, as kube prints a root path):

- ``trainjob_errors(obj, old=None)``: everything about a TrainJob that needs no runtime — the
  shape and limits (``wire_errors``), the name rules, ``storageUri``, ``managedBy``,
  ``numProcPerNode`` (a lower bound adopted from the post-2.3.0 fix, section 7.1) and, on
  update, the ``field is immutable`` transition rules, including those inside
  ``runtimePatches`` (matched by manager, then by replicatedJob name, compared deeply).
- ``runtime_errors(kind, obj, old=None)``: a (Cluster)TrainingRuntime's shape and limits, its
  CEL rules (one ML policy, envInjection, MPI/Flux ``numProcPerNode``, the embedded JobSet's
  rules and ``Value is immutable`` transitions) and the runtime webhook of section 6.1
  (ancestor replicas ``always must be 1``, the ancestor's container), with its deprecation
  warning. The webhook part is skipped for objects labelled
  ``trainer.kubeflow.org/webhook-validation: disabled`` (its objectSelector) and, for a
  TrainingRuntime, on update (upstream validates those on create only).

Input of any shape yields ``FieldError``s, never an exception: the model parse comes first and
the rules run only on an object that parsed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trainop.api.trainer import constants as c
from trainop.api.trainer import models as m
from trainop.api.trainer import rules
from trainop.api.trainer.jobset import EXCLUSIVE_STARTUP, IMMUTABLE_VALUE, VCP_NAMESPACE
from trainop.api.trainer.wire_errors import parse, shown
from trainop.errors import FieldError

_PATCHED_POD_FIELDS = (
    "serviceAccountName",
    "volumes",
    "initContainers",
    "containers",
    "imagePullSecrets",
    "securityContext",
    "terminationGracePeriodSeconds",
)
_JOBSET_IMMUTABLE = (
    "network",
    "successPolicy",
    "failurePolicy",
    "startupPolicy",
    "volumeClaimPolicies",
)


def trainjob_errors(
    obj: Mapping[str, Any], old: Mapping[str, Any] | None = None
) -> list[FieldError]:
    """Every problem of a TrainJob create (``old`` None) or update that needs no runtime."""
    parsed = parse(m.TrainJob, obj)
    if not isinstance(obj, Mapping):
        return parsed if isinstance(parsed, list) else []
    errors = _name_errors(obj)
    spec = rules.child(obj, "spec")
    init = rules.child(spec, "initializer")
    for source in ("dataset", "model"):
        uri = rules.child(rules.child(init, source), "storageUri")
        if isinstance(uri, str) and uri != "" and not storage_uri_ok(uri):
            path = f"spec.initializer.{source}.storageUri"
            errors.append(rules.cel(path, "string", m.STORAGE_URI))
    managed = rules.child(spec, "managedBy")
    if isinstance(managed, str) and managed not in c.MANAGED_BY_VALUES:
        errors.append(rules.cel("spec.managedBy", "string", m.MANAGED_BY))
    nproc = rules.child(rules.child(spec, "trainer"), "numProcPerNode")
    if rules.below(nproc, 1):
        errors.append(rules.cel("spec.trainer.numProcPerNode", "integer", m.TRAINER_NPROC))
    status = rules.child(obj, "status")
    trainer_status = rules.child(status, "trainerStatus")
    if isinstance(trainer_status, Mapping) and not rules.has(trainer_status, "lastUpdatedTime"):
        errors.append(rules.cel("status.trainerStatus", "object", m.LAST_UPDATED))
    if old is not None:
        errors += _trainjob_transitions(obj, old)
    return rules.merged(parsed if isinstance(parsed, list) else [], errors)


def storage_uri_ok(value: str) -> bool:
    """Whether ``value`` is a URI as the storageUri rule reads one (``scheme://...``)."""
    return rules.matches(m.STORAGE_URI_PATTERN, value)


def _name_errors(obj: Mapping[str, Any]) -> list[FieldError]:
    name = rules.child(rules.child(obj, "metadata"), "name")
    if not isinstance(name, str):
        return []
    errors = []
    if not rules.matches(r"^[a-z]([-a-z0-9]*[a-z0-9])?$", name):
        errors.append(rules.cel(rules.ROOT, "object", m.NAME_FORMAT))
    if len(name) > 63:
        errors.append(rules.cel(rules.ROOT, "object", m.NAME_LENGTH))
    return errors


def _trainjob_transitions(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    new_spec, old_spec = rules.child(new, "spec"), rules.child(old, "spec")
    errors = [
        rules.cel(f"spec.{name}", kind, m.FIELD_IMMUTABLE)
        for name, kind in (
            ("runtimeRef", "object"),
            ("initializer", "object"),
            ("trainer", "object"),
            ("activeDeadlineSeconds", "integer"),
            ("managedBy", "string"),
        )
        if rules.changed(new_spec, old_spec, name)
    ]
    old_patches = rules.keyed(rules.child(old_spec, "runtimePatches"), "manager")
    for index, patch in enumerate(rules.items(rules.child(new_spec, "runtimePatches"))):
        before = rules.matching(old_patches, patch, "manager")
        if before is not None:
            errors += _patch_transitions(patch, before, f"spec.runtimePatches[{index}]")
    return errors


def _patch_transitions(new: Any, old: Any, path: str) -> list[FieldError]:
    def jobs(patch: Any) -> Any:
        spec = rules.child(rules.child(patch, "trainingRuntimeSpec"), "template")
        return rules.child(rules.child(spec, "spec"), "replicatedJobs")

    old_jobs = rules.keyed(jobs(old), "name")
    errors = []
    for index, job in enumerate(rules.items(jobs(new))):
        before = rules.matching(old_jobs, job, "name")
        if before is None:
            continue
        where = f"{path}.trainingRuntimeSpec.template.spec.replicatedJobs[{index}]"
        where += ".template.spec.template.spec"
        new_pod, old_pod = _pod_spec(job), _pod_spec(before)
        for name in _PATCHED_POD_FIELDS:
            if rules.changed(new_pod, old_pod, name):
                kind = rules.schema_type(new_pod[name])
                errors.append(rules.cel(f"{where}.{name}", kind, m.FIELD_IMMUTABLE))
    return errors


def _pod_spec(job: Any) -> Any:
    template = rules.child(rules.child(job, "template"), "spec")
    return rules.child(rules.child(template, "template"), "spec")


def runtime_errors(
    kind: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None = None
) -> tuple[list[FieldError], list[str]]:
    """(errors, warnings) of a TrainingRuntime or ClusterTrainingRuntime create or update."""
    model = m.MODELS.get(kind)
    if kind not in c.RUNTIME_KINDS or model is None:
        supported = ", ".join(f'"{k}"' for k in c.RUNTIME_KINDS)
        return [
            FieldError(
                "kind",
                "NotSupported",
                f"Unsupported value: {shown(kind)}: supported values: {supported}",
            )
        ], []
    parsed = parse(model, obj)
    if not isinstance(obj, Mapping):
        return (parsed if isinstance(parsed, list) else []), []
    errors = _runtime_cel_errors(obj)
    if old is not None:
        errors += _runtime_transitions(obj, old)
    schema = rules.merged(parsed if isinstance(parsed, list) else [], errors)
    labels = rules.child(rules.child(obj, "metadata"), "labels")
    skipped = rules.child(labels, c.LABEL_WEBHOOK_VALIDATION) == c.WEBHOOK_VALIDATION_DISABLED
    if schema or skipped or (old is not None and kind == c.TRAINING_RUNTIME):
        return schema, []
    errors = ancestor_errors(obj)
    warnings = []
    deprecated = rules.child(labels, c.LABEL_SUPPORT) == c.SUPPORT_DEPRECATED
    if kind == c.CLUSTER_TRAINING_RUNTIME and old is None and deprecated:
        name = rules.child(rules.child(obj, "metadata"), "name")
        warnings.append(deprecation_warning(str(name or "")))
    return errors, warnings


def deprecation_warning(name: str, *, referenced: bool = False) -> str:
    """Upstream's warning for a deprecated ClusterTrainingRuntime (created, or referenced by a
    TrainJob: ``referenced=True``, spec section 6.1 step 3)."""
    prefix = "Referenced ClusterTrainingRuntime" if referenced else "ClusterTrainingRuntime"
    return (
        f'{prefix} "{name}" is deprecated and will be removed in a future release of Kubeflow '
        f"Trainer. See runtime deprecation policy: {c.DEPRECATION_POLICY_URL}"
    )


def _runtime_cel_errors(obj: Mapping[str, Any]) -> list[FieldError]:
    spec = rules.child(obj, "spec")
    errors = []
    if spec is not None and not spec:
        errors.append(rules.min_properties("spec", 1))
    policy = rules.child(spec, "mlPolicy")
    chosen = [
        name for name in ("torch", "mpi", "jax", "xgboost", "flux") if rules.has(policy, name)
    ]
    if len(chosen) > 1:
        errors.append(rules.cel("spec.mlPolicy", "object", m.ONE_POLICY))
    errors += _policy_errors(policy)
    template = rules.child(spec, "template")
    if template is not None and not template:
        errors.append(rules.min_properties("spec.template", 1))
    errors += _jobset_errors(rules.child(template, "spec"), "spec.template.spec")
    return errors


def _policy_errors(policy: Any) -> list[FieldError]:
    errors = []
    for name, message in (("mpi", m.MPI_NPROC), ("flux", m.FLUX_NPROC)):
        nproc = rules.child(rules.child(policy, name), "numProcPerNode")
        if rules.below(nproc, 1):
            path = f"spec.mlPolicy.{name}.numProcPerNode"
            errors.append(rules.cel(path, "integer", message))
    injection = rules.child(rules.child(policy, "torch"), "envInjection")
    for index, target in enumerate(rules.items(rules.child(injection, "targets"))):
        names = target.get("containerNames")
        if isinstance(names, list) and c.NODE in names:
            path = f"spec.mlPolicy.torch.envInjection.targets[{index}].containerNames"
            errors.append(rules.cel(path, "array", m.NO_NODE_CONTAINER))
    return errors


def _jobset_errors(spec: Any, path: str) -> list[FieldError]:
    errors = []
    jobs = rules.items(rules.child(spec, "replicatedJobs"))
    order = rules.child(rules.child(spec, "startupPolicy"), "startupPolicyOrder")
    if order == "InOrder" and any(rules.has(job, "dependsOn") for job in jobs):
        errors.append(rules.cel(path, "object", EXCLUSIVE_STARTUP))
    for index, policy in enumerate(rules.items(rules.child(spec, "volumeClaimPolicies"))):
        templates = rules.items(policy.get("templates"))
        if any(rules.has(rules.child(t, "metadata"), "namespace") for t in templates):
            errors.append(
                rules.cel(f"{path}.volumeClaimPolicies[{index}]", "object", VCP_NAMESPACE)
            )
    return errors


def _runtime_transitions(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    def jobset(obj: Any) -> Any:
        return rules.child(rules.child(rules.child(obj, "spec"), "template"), "spec")

    new_js, old_js = jobset(new), jobset(old)
    path = "spec.template.spec"
    errors = [
        rules.cel(f"{path}.{name}", rules.schema_type(new_js[name]), IMMUTABLE_VALUE)
        for name in _JOBSET_IMMUTABLE
        if rules.changed(new_js, old_js, name)
    ]
    old_jobs = rules.keyed(rules.child(old_js, "replicatedJobs"), "name")
    for index, job in enumerate(rules.items(rules.child(new_js, "replicatedJobs"))):
        before = rules.matching(old_jobs, job, "name")
        if before is not None and rules.changed(job, before, "dependsOn"):
            where = f"{path}.replicatedJobs[{index}].dependsOn"
            errors.append(rules.cel(where, "array", IMMUTABLE_VALUE))
    return errors


def ancestor_errors(obj: Mapping[str, Any]) -> list[FieldError]:
    """The runtime webhook's rules (spec section 6.1) for each replicatedJob whose Job template
    carries an ancestor label: exactly one replica, and the ancestor's container in its pods."""
    spec = rules.child(rules.child(rules.child(obj, "spec"), "template"), "spec")
    errors = []
    for index, job in enumerate(rules.items(rules.child(spec, "replicatedJobs"))):
        template = rules.child(job, "template")
        labels = rules.child(rules.child(template, "metadata"), "labels")
        ancestor = rules.child(labels, c.LABEL_ANCESTOR)
        if not isinstance(ancestor, str) or ancestor not in c.ANCESTOR_CONTAINERS:
            continue
        path = f"spec.template.spec.replicatedJobs[{index}]"
        replicas = job.get("replicas", 1)
        if replicas != 1:
            errors.append(
                FieldError(
                    f"{path}.replicas",
                    "Invalid",
                    f"Invalid value: {shown(replicas)}: always must be 1",
                )
            )
        pod = _pod_spec(job)
        containers = rules.items(rules.child(pod, "containers"))
        if c.ANCESTOR_CONTAINERS[ancestor] not in [k.get("name") for k in containers]:
            where = f"{path}.template.spec.template.spec.containers"
            detail = f"must contain the required container for the ancestor: {ancestor}"
            shown_value = shown([k.get("name") for k in containers])
            errors.append(FieldError(where, "Invalid", f"Invalid value: {shown_value}: {detail}"))
    return errors
