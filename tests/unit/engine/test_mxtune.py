"""An MXNet ``MXTune`` job (spec 6.7, 7.7): TunerTracker, TunerServer and Tuner replicas.

No Scheduler: the DMLC root is empty (port ``0``), no server or worker counts, no pod carries
``job-role: master``; ``MX_CONFIG`` lists every tuner type and the ``tuner-server-key`` label;
the job never succeeds by itself, and a permanent failure fails it.
"""

from __future__ import annotations

import json
from typing import Any

from support import apply_plan, make_job, run, with_phase

from trainop.engine import conditions
from trainop.engine.actions import Create
from trainop.engine.observed import Observed

TYPES = {"TunerTracker": 1, "TunerServer": 1, "Tuner": 2}


def _job() -> Any:
    job = make_job("MXJob", TYPES, spec={"jobMode": "MXTune"})
    specs = dict(job.spec.replica_specs)
    template = {**specs["TunerServer"].template, "metadata": {
        "annotations": {"tuner-server-key": "server-a"}}}  # fmt: skip
    specs["TunerServer"] = specs["TunerServer"].model_copy(update={"template": template})
    return job.model_copy(update={"spec": job.spec.model_copy(update={"replica_specs": specs})})


def _env(pod: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in pod["spec"]["containers"][0]["env"]}


def test_mxtune_pods_env_and_labels() -> None:
    result = run(_job())
    pods = {a.name: a.body for a in result.actions if isinstance(a, Create) and a.kind == "Pod"}
    assert set(pods) == {"job-tunertracker-0", "job-tunerserver-0", "job-tuner-0", "job-tuner-1"}
    assert not any(
        "training.kubeflow.org/job-role" in p["metadata"]["labels"] for p in pods.values()
    )
    env = _env(pods["job-tuner-1"])
    assert {k: v for k, v in env.items() if k != "MX_CONFIG"} == {
        "DMLC_PS_ROOT_PORT": "0", "DMLC_PS_ROOT_URI": "", "DMLC_NUM_SERVER": "0",
        "DMLC_NUM_WORKER": "0", "DMLC_ROLE": "tuner", "DMLC_USE_KUBERNETES": "1",
    }  # fmt: skip
    config = json.loads(env["MX_CONFIG"])
    assert config["task"] == {"type": "tuner", "index": 1}
    assert config["labels"] == {"tuner": "", "tunerserver": "server-a", "tunertracker": ""}
    assert config["cluster"]["tuner"] == [
        {"url": "job-tuner-0", "port": 9091}, {"url": "job-tuner-1", "port": 9091}]  # fmt: skip
    assert _env(pods["job-tunertracker-0"])["DMLC_ROLE"] == "tunertracker"


def test_mxtune_never_succeeds_by_itself_and_fails_on_a_permanent_failure() -> None:
    job, observed = apply_plan(_job(), Observed(), run(_job()))
    done = Observed(tuple(with_phase(p, "Succeeded", exit_code=0) for p in observed.pods))
    state = tuple(run(job, done).status.conditions or ())
    assert not conditions.is_finished(state)
    failed = Observed((with_phase(observed.pods[0], "Failed", exit_code=1), *observed.pods[1:]))
    assert conditions.is_true(tuple(run(job, failed).status.conditions or ()), "Failed")
