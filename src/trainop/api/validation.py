"""Validation of kubeflow.org/v1 jobs (spec section 3), for every kind including MPI and MX.

``validate`` checks a job as the operator will run it: defaults are applied first (so a
PyTorch Master without ``replicas`` is accepted, as its default is 1 — see
docs/design/002-api-defaulting-and-validation.md). Every problem is reported, not just the
first, as ``FieldError``s with Kubernetes-style paths that a CLI or a webhook prints as they are.
Shared rules are driven by ``kinds.KindInfo``; kind-only rules are the spec's ``kind_errors``.
Pod templates are plain mappings of unknown shape, so every access here is guarded: bad input
yields an error, never an exception. Each template's names and paths are checked with
Kubernetes' own pod rules (``pod_rules``: DNS-1123 container and volume names, no ``..`` in a
``subPath`` or ``items[].path`` ...), so a job whose pods the API server would refuse, or whose
paths would leave the local sandbox, is refused here already.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from trainop.api import pod_rules
from trainop.api.defaults import apply_defaults
from trainop.api.fields import FieldPath, Mapping
from trainop.api.kinds import KindInfo, info_of
from trainop.api.types import MANAGED_BY_VALUES, Job, ReplicaSpec, RunPolicy
from trainop.errors import FieldError

MAX_NAME_LENGTH = 63
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
# kube's ``IsDNS1035Label`` messages, which upstream's webhooks join after "should match: ".
_DNS1035_DETAIL = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
_NAME_LENGTH_DETAIL = f"must be no more than {MAX_NAME_LENGTH} characters"


@dataclass(frozen=True, slots=True)
class Validation:
    """The outcome of validating one job: errors reject it, warnings are shown to the user."""

    errors: tuple[FieldError, ...] = ()
    warnings: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return not self.errors


def validate(job: Job) -> Validation:
    """Validate a job for creation. ``job`` may be un-defaulted; defaults are applied here."""
    info = info_of(job)
    errors = _duplicate_type_errors(job, info)
    defaulted = apply_defaults(job)
    errors += _metadata_errors(defaulted, info)
    errors += _replica_specs_errors(defaulted, info)
    errors += _run_policy_errors(defaulted.run_policy, FieldPath("spec.runPolicy"))
    errors += defaulted.spec.kind_errors(path="spec")
    return Validation(tuple(errors), tuple(defaulted.spec.kind_warnings()))


def validate_update(old: Job, new: Job) -> Validation:
    """Validate an update: everything ``validate`` checks plus the immutable fields.

    ``runPolicy.managedBy`` is immutable for every kind (upstream skips PyTorch and JAX), and so
    is ``runPolicy.schedulingPolicy.queue`` (upstream's CRD CEL rule).
    """
    result = validate(new)
    errors = list(result.errors)
    errors += new.spec.kind_update_errors(old.spec, path="spec")
    if old.run_policy.managed_by != new.run_policy.managed_by:
        errors.append(_immutable("spec.runPolicy.managedBy", new.run_policy.managed_by))
    if _queue(old.run_policy) != _queue(new.run_policy) and _queue(old.run_policy) is not None:
        errors.append(_queue_immutable())
    return Validation(tuple(errors), result.warnings)


def _immutable(path: str, value: object) -> FieldError:
    return FieldError(path, "Invalid", "field is immutable", value=value)


def _queue_immutable() -> FieldError:
    """Upstream's CRD rule (CEL ``self == oldSelf``) in kube-apiserver's words."""
    path = "spec.runPolicy.schedulingPolicy.queue"
    return FieldError(path, "Invalid", f'Invalid value: "string": {path} is immutable')


def _queue(policy: RunPolicy) -> str | None:
    return policy.scheduling_policy.queue if policy.scheduling_policy else None


def _metadata_errors(job: Job, info: KindInfo) -> list[FieldError]:
    name = job.metadata.name
    if not name:
        if job.metadata.generate_name:
            return []
        return [FieldError("metadata.name", "Required", "name or generateName is required")]
    problems = [_NAME_LENGTH_DETAIL] if len(name) > MAX_NAME_LENGTH else []
    problems += [] if _DNS1035.match(name) else [_DNS1035_DETAIL]
    if problems:
        detail = "should match: " + ",".join(problems)  # upstream's webhooks' words
        return [FieldError("metadata.name", "Invalid", detail, value=name)]
    return _generated_name_errors(name, job.spec.replica_specs)


def _generated_name_errors(name: str, specs: dict[str, ReplicaSpec]) -> list[FieldError]:
    """Pods and services are named ``<job>-<rt>-<i>`` and must fit a 63-character label."""
    for replica_type, spec in specs.items():
        last_index = max((spec.replicas or 0) - 1, 0)
        pod_name = f"{name}-{replica_type.lower()}-{last_index}"
        if len(pod_name) > MAX_NAME_LENGTH:
            room = MAX_NAME_LENGTH - (len(pod_name) - len(name))
            detail = (
                f"must be no more than {room} characters, so that the pod and service name "
                f"{pod_name!r} fits in {MAX_NAME_LENGTH}"
            )
            return [FieldError("metadata.name", "TooLong", detail)]
    return []


def _duplicate_type_errors(job: Job, info: KindInfo) -> list[FieldError]:
    seen: dict[str, str] = {}
    errors = []
    canonical = {rt.lower(): rt for rt in info.normalized_types}
    for key in job.spec.replica_specs:
        target = canonical.get(key.lower(), key)
        if target in seen:
            path = FieldPath("spec").child(info.replica_specs_field).key(key)
            errors.append(
                FieldError(
                    str(path), "Duplicate", f"same replica type as {seen[target]}", value=key
                )
            )
        seen[target] = key
    return errors


def _replica_specs_errors(job: Job, info: KindInfo) -> list[FieldError]:
    root = FieldPath("spec").child(info.replica_specs_field)
    specs = job.spec.replica_specs
    if not specs:
        return [FieldError(str(root), "Required", "must be required")]  # upstream's words
    errors = [
        FieldError(str(root.key(rt)), "Required", "must be present")
        for rt in info.required_types
        if rt not in specs
    ]
    for replica_type, spec in specs.items():
        path = root.key(replica_type)
        if replica_type not in info.replica_types:
            detail = "supported values: " + ", ".join(f'"{t}"' for t in info.replica_types)
            errors.append(FieldError(str(path), "NotSupported", detail, value=replica_type))
            continue
        errors += _replica_count_errors(replica_type, spec, path, info)
        if replica_type in info.derived_types:
            errors += _derived_template_errors(spec.template, path.child("template"))
        else:
            errors += _template_errors(spec.template, path.child("template"), info)
    return errors


def _replica_count_errors(
    replica_type: str, spec: ReplicaSpec, path: FieldPath, info: KindInfo
) -> list[FieldError]:
    replicas = spec.replicas
    where = str(path.child("replicas"))
    if replicas is None:
        return []
    if replicas < 0:
        return [FieldError(where, "Invalid", "must be greater than or equal to 0", value=replicas)]
    if replica_type in info.single_replica_types and replicas != 1:
        return [FieldError(where, "Forbidden", "must be 1")]
    if replica_type in info.positive_replica_types and replicas < 1:
        return [FieldError(where, "Forbidden", "must be at least 1")]
    return []


def _derived_template_errors(template: Mapping, path: FieldPath) -> list[FieldError]:
    """A derived type's pods are built by the operator from the other types' templates."""
    if not template:
        return []
    detail = "must not be set: the operator derives this replica type's pod template"
    return [FieldError(str(path), "Forbidden", detail)]


def _template_errors(template: Mapping, path: FieldPath, info: KindInfo) -> list[FieldError]:
    pod_spec = template.get("spec")
    containers_path = path.child("spec").child("containers")
    if pod_spec is not None and not isinstance(pod_spec, dict):
        return [FieldError(str(path.child("spec")), "Invalid", "must be an object (a PodSpec)")]
    containers = (pod_spec or {}).get("containers")
    if containers is None or containers == []:
        return [FieldError(str(containers_path), "Required", "must be specified")]
    if not isinstance(containers, list):
        return [FieldError(str(containers_path), "Invalid", "must be a list of containers")]
    errors: list[FieldError] = []
    for index, container in enumerate(containers):
        errors += _container_errors(container, containers_path.index(index))
    reported = {e.path for e in errors}
    found = pod_rules.pod_spec_errors(pod_spec or {}, path=str(path.child("spec")))
    errors += [e for e in found if e.path not in reported]
    names = [c.get("name") for c in containers if isinstance(c, dict)]
    if info.requires_default_container and info.default_container not in names:
        quoted = f'"{info.default_container}"' if info.kind == "PaddleJob" else None  # upstream
        detail = f"must have at least one container with name {quoted or info.default_container}"
        errors.append(FieldError(str(containers_path), "Required", detail))
    return errors


def _container_errors(container: object, path: FieldPath) -> list[FieldError]:
    if not isinstance(container, dict):
        return [FieldError(str(path), "Invalid", "must be an object (a Container)")]
    errors = []
    # upstream's webhook: "must be required" for an image; a name is the CRD schema's rule
    for key, missing in (("name", "Required value"), ("image", "must be required")):
        value = container.get(key)
        if value is None or value == "":
            errors.append(FieldError(str(path.child(key)), "Required", missing))
        elif not isinstance(value, str):
            errors.append(FieldError(str(path.child(key)), "Invalid", "must be a string"))
    for key in ("command", "args"):
        value = container.get(key)
        if value is not None and not (
            isinstance(value, list) and all(isinstance(v, str) for v in value)
        ):
            errors.append(FieldError(str(path.child(key)), "Invalid", "must be a list of strings"))
    return errors


def _run_policy_errors(policy: RunPolicy, path: FieldPath) -> list[FieldError]:
    errors = []
    if policy.managed_by is not None and policy.managed_by not in MANAGED_BY_VALUES:
        supported = ", ".join(f'"{v}"' for v in MANAGED_BY_VALUES)
        detail = f"supported values: {supported}"
        where = str(path.child("managedBy"))
        errors.append(FieldError(where, "NotSupported", detail, value=policy.managed_by))
    bounds: list[tuple[str, int | None, int]] = [
        ("ttlSecondsAfterFinished", policy.ttl_seconds_after_finished, 0),
        ("activeDeadlineSeconds", policy.active_deadline_seconds, 1),
        ("backoffLimit", policy.backoff_limit, 0),
    ]
    sched = policy.scheduling_policy
    if sched is not None:
        bounds += [
            ("schedulingPolicy.minAvailable", sched.min_available, 0),
            ("schedulingPolicy.scheduleTimeoutSeconds", sched.schedule_timeout_seconds, 0),
        ]
    for name, value, low in bounds:
        if value is not None and value < low:
            detail = f"must be greater than or equal to {low}"
            errors.append(FieldError(f"{path}.{name}", "Invalid", detail, value=value))
    return errors
