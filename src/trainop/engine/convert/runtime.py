"""The namespaced TrainingRuntime that reproduces a v1 job's pods: its JobSet template.

Each replica type is one replicatedJob (``layout``): ``replicas: 1`` and an Indexed Job with
``parallelism = completions =`` the type's replicas, so pod ``i`` of the type is completion
index ``i``, host ``<job>-<type>-0-<i>.<job>``. Its pod template is the v1 template after v1's
defaulting (the default port, the restart policy), with the framework's env (``rendezvous``) on
the containers v1 gives it to, behind a shell prologue where a value needs one (``shell``).

Restart policies, as a Job can hold them (its pods allow only ``OnFailure`` and ``Never``):

- ``OnFailure`` as it is; ``Always`` as ``OnFailure`` (reported: a container that exits 0 is
  not restarted);
- ``Never``: ``backoffLimit: 0``, so the first failed pod fails the Job and the JobSet, as it
  fails the v1 job;
- ``ExitCode``: pods ``Never``, and a ``podFailurePolicy`` that fails the Job when the default
  container exits 1-127 (v1's permanent codes); other failures are retried (reported);
- the Job's ``backoffLimit`` is v1's ``runPolicy.backoffLimit`` (reported: counted per Job), or,
  when unset, the largest int32, since v1 then retries without limit.
"""

from __future__ import annotations

import copy
from typing import Any

from trainop.api.trainer import constants
from trainop.api.types import Job
from trainop.engine.convert import rendezvous, shell
from trainop.engine.convert.dropped import DroppedField, replica_path
from trainop.engine.convert.layout import FRAMEWORK_LABELS, Layout
from trainop.frameworks.base import Framework, containers_of, replicas_of
from trainop.frameworks.options import FrameworkOptions

Wire = dict[str, Any]
UNLIMITED_BACKOFF = 2**31 - 1
PERMANENT_EXIT_CODES = list(range(1, 128))  # v1's ExitCode policy: 128 and above are retried


def training_runtime(
    *, job: Job, framework: Framework, layout: Layout, dropped: list[DroppedField]
) -> Wire:
    """The TrainingRuntime named after ``job`` (defaulted), in its namespace."""
    jobs = [_replicated_job(job, framework, layout, rt, dropped) for rt in layout.names]
    jobset: Wire = {
        "replicatedJobs": jobs,
        "successPolicy": {
            "operator": "All",
            "targetReplicatedJobs": [layout.names[rt] for rt in layout.success],
        },
    }
    spec: Wire = {"template": {"spec": jobset}}
    if layout.ml_policy is not None:
        spec = {"mlPolicy": copy.deepcopy(layout.ml_policy), **spec}
    metadata: Wire = {"name": job.metadata.name}
    if job.metadata.namespace:
        metadata["namespace"] = job.metadata.namespace
    metadata["labels"] = {constants.LABEL_FRAMEWORK: FRAMEWORK_LABELS[framework.info.framework]}
    return {
        "apiVersion": constants.API_VERSION,
        "kind": constants.TRAINING_RUNTIME,
        "metadata": metadata,
        "spec": spec,
    }


def _replicated_job(
    job: Job, framework: Framework, layout: Layout, rt: str, dropped: list[DroppedField]
) -> Wire:
    count = replicas_of(job, rt)
    policy = job.spec.replica_specs[rt].restart_policy or framework.info.default_restart_policy
    template = _pod_template(job, framework, layout, rt, dropped)
    job_spec: Wire = {"completionMode": "Indexed", "parallelism": count, "completions": count}
    job_spec.update(_restart(job, framework, rt, policy, template, dropped))
    if rt in layout.job_success:
        job_spec["successPolicy"] = copy.deepcopy(layout.job_success[rt])
    job_spec["template"] = template
    replicated: Wire = {"name": layout.names[rt], "replicas": 1}
    job_template: Wire = {"spec": job_spec}
    if rt == layout.trainer:
        job_template = {
            "metadata": {"labels": {constants.LABEL_ANCESTOR: constants.ANCESTOR_TRAINER}},
            **job_template,
        }
    replicated["template"] = job_template
    if rt in layout.depends_on:
        other, status = layout.depends_on[rt]
        replicated["dependsOn"] = [{"name": layout.names[other], "status": status}]
    return replicated


def _restart(
    job: Job,
    framework: Framework,
    rt: str,
    policy: str,
    template: Wire,
    dropped: list[DroppedField],
) -> Wire:
    """The Job fields and pod restart policy that hold v1's ``policy`` (module docstring)."""
    limit = job.spec.run_policy.backoff_limit if job.spec.run_policy else None
    limit = UNLIMITED_BACKOFF if limit is None else limit
    spec = template.setdefault("spec", {})
    path = replica_path(job, rt, "restartPolicy")
    if policy == "Never":
        spec["restartPolicy"] = "Never"
        return {"backoffLimit": 0}
    if policy != "ExitCode":
        if policy == "Always":
            dropped.append(
                DroppedField(
                    path,
                    "Always: Job pods restart OnFailure only, so a "
                    "container that exits 0 is not restarted",
                )
            )
        spec["restartPolicy"] = "OnFailure"
        return {"backoffLimit": limit}
    spec["restartPolicy"] = "Never"
    codes: Wire = {"operator": "In", "values": list(PERMANENT_EXIT_CODES)}
    names = [c.get("name") for c in containers_of(template)]
    if framework.info.default_container in names:
        codes = {"containerName": framework.info.default_container, **codes}
    dropped.append(
        DroppedField(
            path,
            "ExitCode: the Job's podFailurePolicy fails it on exit "
            "codes 1-127; a pod that failed otherwise is replaced by a new "
            "pod (a new name), counted against the Job's backoffLimit",
        )
    )
    rules = [{"action": "FailJob", "onExitCodes": codes}]
    return {"backoffLimit": limit, "podFailurePolicy": {"rules": rules}}


def _pod_template(
    job: Job, framework: Framework, layout: Layout, rt: str, dropped: list[DroppedField]
) -> Wire:
    template = copy.deepcopy(dict(job.spec.replica_specs[rt].template))
    spec = template.setdefault("spec", {})
    spec.pop("restartPolicy", None)
    if layout.renamed_container is not None:
        _rename_first(job, rt, template, layout.renamed_container, dropped)
    if not layout.framework_env:
        return template
    found = rendezvous.replica_env(
        job=job, framework=framework, replica_type=rt, options=FrameworkOptions()
    )
    containers = containers_of(template)
    for index, container in enumerate(containers):
        if not _gets_env(framework, containers, container):
            continue
        _upsert_env(container, found.env, drop=found.exported)
        if found.exports:
            _add_prologue(job, rt, index, container, found, dropped)
    return template


def _gets_env(framework: Framework, containers: list[Wire], container: Wire) -> bool:
    """Whether v1 gives ``container`` the framework's env (all, the first, or the default)."""
    if framework.env_containers == "all":
        return True
    if framework.env_containers == "first":
        return container is containers[0]
    named = [c for c in containers if c.get("name") == framework.info.default_container]
    return bool(named) and container is named[0]


def _upsert_env(container: Wire, entries: tuple[Wire, ...], *, drop: tuple[str, ...]) -> None:
    """v1 appends its env after the user's, so its value wins: replace same-named entries."""
    ours = {entry["name"] for entry in entries} | set(drop)
    kept = [e for e in container.get("env") or [] if e.get("name") not in ours]
    env = kept + [copy.deepcopy(entry) for entry in entries]
    if env:
        container["env"] = env
    else:
        container.pop("env", None)


def _add_prologue(
    job: Job,
    rt: str,
    index: int,
    container: Wire,
    found: rendezvous.ReplicaEnv,
    dropped: list[DroppedField],
) -> None:
    command = container.get("command")
    if not command:
        dropped.append(
            DroppedField(
                replica_path(job, rt, f"template.spec.containers[{index}].command"),
                f"unset, so {', '.join(found.exported)} (different in each pod) cannot be "
                "computed in the pod: set command to the image's entrypoint and convert again",
            )
        )
        return
    words = [*command, *(container.get("args") or [])]
    container["command"] = shell.wrap(found.exports, [str(w) for w in words])
    container.pop("args", None)


def _rename_first(
    job: Job, rt: str, template: Wire, name: str, dropped: list[DroppedField]
) -> None:
    containers = containers_of(template)
    if not containers or containers[0].get("name") == name:
        return
    old = containers[0].get("name")
    containers[0]["name"] = name
    dropped.append(
        DroppedField(
            replica_path(job, rt, "template.spec.containers[0].name"),
            f"{old!r} is renamed {name!r}: v2's MPI plugin mounts the SSH key and hostfile and "
            "sets the Open MPI env only in containers of that name",
        )
    )
