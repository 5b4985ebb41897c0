"""The JobSet plugin's admission checks (spec §3.3 Validate), with upstream's messages.

Initializers: a TrainJob with ``initializer.dataset``/``model`` needs the runtime's matching job,
container and ``initializer`` volume mount. runtimePatches: the manager is a domain-prefixed
path, every patched job and container exists in the runtime (the runtime as written, before
any patch), and the main containers carry no env. On UPDATE a changed runtimePatches list is
Forbidden unless the TrainJob is suspended before or after, and while the JobSet still has
active jobs.
"""

from __future__ import annotations

import re

from trainop.api.trainer import constants as c
from trainop.engine.trainer.containers import Raw, as_list, as_map, maps
from trainop.engine.trainer.info import RuntimeInfo
from trainop.engine.trainer.plugins.base import ValidateContext, Validation
from trainop.errors import FieldError

_PATCHES = "spec.runtimePatches"
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_SUBDOMAIN_DETAIL = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
_HTTP_PATH = re.compile(r"^[A-Za-z0-9/\-._~%!$&'()*+,;=:]+$")
_HTTP_PATH_DETAIL = (
    "must be a valid path (regex used for validation is '[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')"
)
_INITIALIZERS = (
    ("dataset", c.DATASET_INITIALIZER, "datasetConfig"),
    ("model", c.MODEL_INITIALIZER, "modelConfig"),
)


def manager_problems(manager: str) -> list[str]:
    """Why ``manager`` is not a domain-prefixed path (apimachinery's ``IsDomainPrefixedPath``)."""
    host, slash, path = manager.partition("/")
    if not slash or not host or not path:
        return ['must be a domain-prefixed path (such as "acme.io/foo")']
    problems = []
    if len(host) > 253:
        problems.append("must be no more than 253 characters")
    if not _SUBDOMAIN.match(host):
        problems.append(_SUBDOMAIN_DETAIL)
    if not problems and not _HTTP_PATH.match(path):
        problems.append(_HTTP_PATH_DETAIL)
    return problems


def _runtime_jobs(info: RuntimeInfo) -> dict[str, Raw]:
    template = as_map(as_map(info.runtime.get("spec")).get("template"))
    return {str(j.get("name")): j for j in maps(as_map(template.get("spec")).get("replicatedJobs"))}


def _pod(job: Raw) -> Raw:
    return as_map(
        as_map(as_map(as_map(job.get("template")).get("spec")).get("template")).get("spec")
    )


def _initializer_errors(info: RuntimeInfo) -> list[FieldError]:
    errors, jobs = [], _runtime_jobs(info)
    initializer = as_map(info.spec.get("initializer"))
    for field, name, config in _INITIALIZERS:
        if not isinstance(initializer.get(field), dict):
            continue
        if name not in jobs:
            detail = f"must have {name} job when trainJob is configured with input {config}"
            errors.append(FieldError("spec.runtimeRef", "Invalid", detail))
            continue
        container = next(
            (x for x in maps(_pod(jobs[name]).get("containers")) if x.get("name") == name), None
        )
        if container is None:
            detail = f"must have container with name - {name} in the {name} job"
            errors.append(FieldError("spec.runtimeRef", "Invalid", detail))
        elif not any(
            m.get("name") == c.INITIALIZER_VOLUME for m in maps(container.get("volumeMounts"))
        ):
            detail = (
                f"must have volumeMount with name - {c.INITIALIZER_VOLUME} in container {name} "
                f"of the {name} job"
            )
            errors.append(FieldError("spec.runtimeRef", "Invalid", detail))
    return errors


def _patch_errors(info: RuntimeInfo) -> list[FieldError]:
    errors, jobs = [], _runtime_jobs(info)
    for patch in maps(info.spec.get("runtimePatches")):
        for problem in manager_problems(str(patch.get("manager", ""))):
            errors.append(FieldError(f"{_PATCHES}.manager", "Invalid", problem))
        template = as_map(as_map(patch.get("trainingRuntimeSpec")).get("template"))
        for job_patch in maps(as_map(template.get("spec")).get("replicatedJobs")):
            errors += _job_patch_errors(jobs, job_patch)
    return errors


def _job_patch_errors(jobs: dict[str, Raw], job_patch: Raw) -> list[FieldError]:
    name = str(job_patch.get("name", ""))
    if name not in jobs:
        detail = "must not have replicated job that doesn't exist in the runtime job template"
        return [FieldError(_PATCHES, "Invalid", detail)]
    pod = _pod(jobs[name])
    patch_pod = _pod(job_patch)
    errors = []
    for key, noun in (("initContainers", "initContainer"), ("containers", "container")):
        present = {str(x.get("name")) for x in maps(pod.get(key))}
        for container in maps(patch_pod.get(key)):
            if str(container.get("name")) not in present:
                detail = f"must not have {noun} that doesn't exist in the runtime job {name}"
                errors.append(FieldError(_PATCHES, "Invalid", detail))
            elif (
                key == "containers"
                and as_list(container.get("env"))
                and container.get("name") in c.ENV_PROTECTED_CONTAINERS
            ):
                detail = (
                    f"must not have envs for the {c.DATASET_INITIALIZER}, {c.MODEL_INITIALIZER}, "
                    f"{c.NODE} containers"
                )
                errors.append(FieldError(_PATCHES, "Invalid", detail))
    return errors


def _update_errors(info: RuntimeInfo, context: ValidateContext) -> list[FieldError]:
    old = context.old
    if old is None:
        return []
    old_spec = as_map(old.get("spec"))
    if (old_spec.get("runtimePatches") or []) == (info.spec.get("runtimePatches") or []):
        return []
    if not old_spec.get("suspend") and not info.spec.get("suspend"):
        detail = (
            "RuntimePatches can only be modified when the TrainJob is suspended before or "
            "after the update"
        )
        return [FieldError(_PATCHES, "Forbidden", detail)]
    replicated = maps(as_map(as_map(context.jobset).get("status")).get("replicatedJobsStatus"))
    return [
        FieldError(
            _PATCHES,
            "Forbidden",
            f"RuntimePatches cannot be modified when the JobSet's ReplicatedJob {r.get('name')} "
            "is still active",
        )
        for r in replicated
        if isinstance(r.get("active"), int) and r["active"] > 0
    ]


def validate(info: RuntimeInfo, context: ValidateContext) -> Validation:
    """Every JobSet-plugin check, in upstream's order."""
    return _initializer_errors(info) + _patch_errors(info) + _update_errors(info, context), []
