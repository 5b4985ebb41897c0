"""The mapping choices of note 113 on small hand-written jobs: restart policies as Job fields,
the run policy a TrainJob keeps, success and startup order, per-pod values without a command,
and bad input refused with the field errors ``trainop validate`` gives."""

from __future__ import annotations

from typing import Any

import pytest
from tests.unit.engine.convert.support import ROOT

from trainop.api import manifest
from trainop.engine.convert import convert
from trainop.engine.convert.runtime import UNLIMITED_BACKOFF
from trainop.errors import InvalidJobError

Wire = dict[str, Any]


def _template(name: str = "pytorch", command: list[str] | None = None) -> Wire:
    container: Wire = {"name": name, "image": "python:3.11"}
    if command is not None:
        container["command"] = command
    return {"spec": {"containers": [container]}}


def _pytorch(**spec: Any) -> Wire:
    replica_specs = spec.pop("specs", None) or {
        "Master": {
            "replicas": 1,
            "restartPolicy": "OnFailure",
            "template": _template(command=["python3"]),
        },
        "Worker": {
            "replicas": 2,
            "restartPolicy": "OnFailure",
            "template": _template(command=["python3"]),
        },
    }
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "job", "namespace": "team", "labels": {"a": "b"}},
        "spec": {"pytorchReplicaSpecs": replica_specs, **spec},
    }


def _jobs(conversion: Any) -> dict[str, Wire]:
    jobs = conversion.runtime["spec"]["template"]["spec"]["replicatedJobs"]
    return {rj["name"]: rj for rj in jobs}


def _paths(conversion: Any) -> set[str]:
    return {dropped.path for dropped in conversion.dropped}


@pytest.mark.parametrize(
    ("policy", "pod_policy", "backoff"),
    [
        ("OnFailure", "OnFailure", UNLIMITED_BACKOFF),
        ("Always", "OnFailure", UNLIMITED_BACKOFF),
        ("Never", "Never", 0),
    ],
)
def test_restart_policy_becomes_the_pods_and_the_jobs_backoff(
    policy: str, pod_policy: str, backoff: int
) -> None:
    job = _pytorch()
    job["spec"]["pytorchReplicaSpecs"]["Worker"]["restartPolicy"] = policy
    conversion = convert(job)
    worker = _jobs(conversion)["worker"]["template"]["spec"]
    assert worker["template"]["spec"]["restartPolicy"] == pod_policy
    assert worker["backoffLimit"] == backoff
    dropped = "spec.pytorchReplicaSpecs[Worker].restartPolicy" in _paths(conversion)
    assert dropped == (policy == "Always")


def test_exit_code_fails_the_job_on_permanent_codes_only() -> None:
    job = _pytorch(runPolicy={"backoffLimit": 3})
    job["spec"]["pytorchReplicaSpecs"]["Worker"]["restartPolicy"] = "ExitCode"
    conversion = convert(job)
    worker = _jobs(conversion)["worker"]["template"]["spec"]
    assert worker["template"]["spec"]["restartPolicy"] == "Never"
    assert worker["backoffLimit"] == 3
    (rule,) = worker["podFailurePolicy"]["rules"]
    assert rule["action"] == "FailJob"
    codes = rule["onExitCodes"]
    assert codes["containerName"] == "pytorch"
    assert codes["operator"] == "In"
    assert codes["values"] == list(range(1, 128))  # v1 spec 5.2: 128 and above are retried
    assert {
        "spec.pytorchReplicaSpecs[Worker].restartPolicy",
        "spec.runPolicy.backoffLimit",
    } <= _paths(conversion)


def test_run_policy_kept_by_the_trainjob_and_the_rest_dropped() -> None:
    policy = {
        "suspend": True,
        "activeDeadlineSeconds": 600,
        "managedBy": "kueue.x-k8s.io/multikueue",
        "cleanPodPolicy": "All",
        "ttlSecondsAfterFinished": 60,
        "schedulingPolicy": {"minAvailable": 3},
    }
    conversion = convert(_pytorch(runPolicy=policy))
    spec = conversion.trainjob["spec"]
    assert (spec["suspend"], spec["activeDeadlineSeconds"], spec["managedBy"]) == (
        True,
        600,
        "kueue.x-k8s.io/multikueue",
    )
    assert conversion.trainjob["metadata"] == {
        "name": "job",
        "namespace": "team",
        "labels": {"a": "b"},
    }
    assert conversion.runtime["metadata"]["namespace"] == "team"
    assert _paths(conversion) == {
        "spec.runPolicy.cleanPodPolicy",
        "spec.runPolicy.ttlSecondsAfterFinished",
        "spec.runPolicy.schedulingPolicy",
    }


def test_workers_wait_for_the_master_and_the_master_decides_success() -> None:
    conversion = convert(_pytorch())
    jobs = _jobs(conversion)
    assert jobs["worker"]["dependsOn"] == [{"name": "master", "status": "Ready"}]
    assert "dependsOn" not in jobs["master"]
    success = conversion.runtime["spec"]["template"]["spec"]["successPolicy"]
    assert success == {"operator": "All", "targetReplicatedJobs": ["master"]}


def test_elastic_workers_succeed_with_one_worker() -> None:
    worker = {
        "replicas": 2,
        "restartPolicy": "OnFailure",
        "template": _template(command=["torchrun"]),
    }
    elastic = {"minReplicas": 1, "maxReplicas": 3, "rdzvBackend": "c10d"}
    conversion = convert(_pytorch(specs={"Worker": worker}, elasticPolicy=elastic))
    spec = _jobs(conversion)["worker"]["template"]["spec"]
    assert spec["successPolicy"] == {"rules": [{"succeededCount": 1}]}


def _tfjob(success_policy: str | None) -> Wire:
    spec: Wire = {
        "tfReplicaSpecs": {
            "Worker": {"replicas": 2, "template": _template("tensorflow", ["python3"])},
            "PS": {"replicas": 1, "template": _template("tensorflow", ["python3"])},
        }
    }
    if success_policy is not None:
        spec["successPolicy"] = success_policy
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": "tf"},
        "spec": spec,
    }


@pytest.mark.parametrize(
    ("policy", "rules"), [(None, [{"succeededIndexes": "0"}]), ("AllWorkers", None)]
)
def test_tfjob_without_chief_succeeds_on_worker_0_unless_all_workers(
    policy: str | None, rules: list[Wire] | None
) -> None:
    conversion = convert(_tfjob(policy))
    spec = _jobs(conversion)["worker"]["template"]["spec"]
    assert spec.get("successPolicy", {}).get("rules") == rules
    success = conversion.runtime["spec"]["template"]["spec"]["successPolicy"]
    assert success["targetReplicatedJobs"] == ["worker"]


def test_per_pod_values_without_a_command_are_dropped_not_guessed() -> None:
    job = _pytorch()
    job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"] = _template()  # image entrypoint
    conversion = convert(job)
    container = _jobs(conversion)["worker"]["template"]["spec"]["template"]["spec"]["containers"][0]
    assert "command" not in container
    names = {e["name"] for e in container["env"]}
    assert "RANK" not in names
    assert "WORLD_SIZE" in names
    (dropped,) = [d for d in conversion.dropped if d.path.endswith(".command")]
    assert dropped.path == "spec.pytorchReplicaSpecs[Worker].template.spec.containers[0].command"
    assert "RANK" in dropped.reason


def test_user_env_of_the_same_name_is_replaced_as_v1_appends_after_it() -> None:
    job = _pytorch()
    master = job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]
    master["env"] = [{"name": "WORLD_SIZE", "value": "99"}, {"name": "MINE", "value": "1"}]
    env = _jobs(convert(job))["master"]["template"]["spec"]["template"]["spec"]["containers"][0][
        "env"
    ]
    assert [e["value"] for e in env if e["name"] == "WORLD_SIZE"] == ["3"]
    assert {"name": "MINE", "value": "1"} in env


def test_an_invalid_job_raises_the_errors_validate_reports() -> None:
    job = _pytorch()
    job["spec"]["pytorchReplicaSpecs"]["Master"]["replicas"] = 2
    expected = manifest.check_job(job).errors
    assert expected
    with pytest.raises(InvalidJobError) as raised:
        convert(job)
    assert raised.value.errors == tuple(expected)


def test_what_a_plugin_does_beyond_env_is_dropped_by_name() -> None:
    elastic = {"minReplicas": 1, "maxReplicas": 3}
    worker = {"replicas": 2, "template": _template(command=["torchrun"])}
    assert "spec.elasticPolicy" in _paths(
        convert(_pytorch(specs={"Worker": worker}, elasticPolicy=elastic))
    )
    tf = _tfjob(None)
    tf["spec"]["enableDynamicWorker"] = True
    tf["spec"]["tfReplicaSpecs"]["PS"]["replicas"] = 0
    conversion = convert(tf)
    assert {"spec.enableDynamicWorker", "spec.tfReplicaSpecs[PS].replicas"} <= _paths(conversion)
    assert set(_jobs(conversion)) == {"worker"}


def test_dgl_generated_files_and_exec_are_dropped() -> None:
    path = ROOT / "examples" / "dgl" / "partition-train.yaml"
    conversion = convert(manifest.parse_documents(path.read_text())[0])
    launcher = [d.reason for d in conversion.dropped if d.path == "spec.dglReplicaSpecs[Launcher]"]
    worker = [d.reason for d in conversion.dropped if d.path == "spec.dglReplicaSpecs[Worker]"]
    assert any("hostfile" in r for r in launcher)
    assert any("exec" in r for r in launcher)
    assert len(worker) == 1
    assert "hostfile" in worker[0]
    jobs = _jobs(conversion)
    assert jobs["worker"]["dependsOn"] == [{"name": "partitioner", "status": "Complete"}]
