"""Drives the Kubeflow SDK 0.5.0, unchanged, against a ``trainop local up`` kubeconfig.

Run by ``tests/e2e/test_kubeflow_sdk.py`` with the interpreter of the SDK's own venv
(``make sdk-env``: ``.venv-kubeflow-sdk``), never trainop's: nothing of trainop is imported
here, only ``kubeflow`` (and the ``kubernetes`` client it brings, for the one object a user
would create by hand, a namespaced TrainingRuntime). Each scenario does what a user of
``TrainerClient`` does and prints one JSON object on its last stdout line with what the SDK
returned; the test asserts on it.

    KUBECONFIG=PATH python kubeflow_sdk_driver.py PATH runtimes  # list_runtimes, get_runtime
    KUBECONFIG=PATH python kubeflow_sdk_driver.py PATH train     # 2-node DDP, logs, events, delete
    KUBECONFIG=PATH python kubeflow_sdk_driver.py PATH fail      # exits 1, maxRestarts 1: Failed
    KUBECONFIG=PATH python kubeflow_sdk_driver.py PATH options   # name, labels, patch, deadline

The training functions are sent to the pods as source (the SDK embeds the function's source in
the trainer command, spec 5.4): they import inside, as any function given to ``CustomTrainer``.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from typing import Any

from kubeflow.common.types import KubernetesBackendConfig
from kubeflow.trainer import CustomTrainer, TrainerClient

NAMESPACE = "default"  # the kubeconfig context's namespace (trainop local up writes it)
FAIL_RUNTIME = "torch-fail-restart-once"
NO_INDEX = "http://127.0.0.1:9/simple"  # the discard port: nothing answers there
DEADLINE = 25  # seconds: room for the pod to start on a loaded machine


def ddp_sum() -> None:
    """Two nodes train one linear model with DDP on gloo over tiny data made here; the PROOF
    line shows they cooperated: an all-reduced sum of (rank + 1) and the same weights on both."""
    import os
    import time

    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    inputs = torch.randn(64, 4)
    targets = inputs @ torch.tensor([[1.0], [-2.0], [3.0], [0.5]])
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(60):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(inputs[rank::world]), targets[rank::world])
        loss.backward()
        optimizer.step()
    total = torch.tensor([float(rank + 1)])
    dist.all_reduce(total)
    weights = model.module.weight.detach().clone()
    summed = weights.clone()
    dist.all_reduce(summed)
    same = bool(torch.allclose(summed, weights * world))
    node = os.environ.get("PET_NODE_RANK")
    print(f"PROOF sdk-ddp rank={rank} world={world} node={node} sum={total.item():.0f} same={same}")
    time.sleep(4)  # still running for a moment: the SDK's Running status and log follow
    print(f"done rank={rank} loss={loss.item():.4f}", flush=True)
    dist.destroy_process_group()


def exit_one() -> None:
    """Fails every time it runs: the TrainJob's node exits 1."""
    import os
    import sys

    print(f"failing on purpose on {os.environ.get('HOSTNAME', '?')}", flush=True)
    sys.exit(1)


def sleep_long() -> None:
    """Runs past the TrainJob's active deadline."""
    import time

    print("sleeping past the deadline", flush=True)
    time.sleep(300)


class Warnings(logging.Handler):
    """Collects the SDK's warnings (verify_backend's missing ConfigMap is one)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def client(kubeconfig: str) -> TrainerClient:
    """``TrainerClient()`` as a user writes it: the Kubernetes backend, the kubeconfig of
    ``$KUBECONFIG`` and its context's namespace; explicit only when ``$KUBECONFIG`` is unset."""
    if os.environ.get("KUBECONFIG") == kubeconfig:
        return TrainerClient()
    return TrainerClient(backend_config=KubernetesBackendConfig(config_file=kubeconfig))


def job_view(job: Any) -> dict[str, Any]:
    return {
        "name": job.name,
        "status": job.status,
        "num_nodes": job.num_nodes,
        "runtime": job.runtime.name,
        "steps": [
            {
                "name": s.name,
                "status": s.status,
                "pod": s.pod_name,
                "device": s.device,
                "device_count": s.device_count,
            }
            for s in job.steps
        ],
    }


def runtimes(sdk: TrainerClient) -> dict[str, Any]:
    found = sdk.list_runtimes()
    torch = sdk.get_runtime("torch-distributed")
    return {
        "runtimes": [
            {
                "name": r.name,
                "kind": getattr(r.kind, "value", r.kind),
                "framework": r.trainer.framework,
                "num_nodes": r.trainer.num_nodes,
                "entrypoint": _entrypoint(list(r.trainer.command)),
            }
            for r in found
        ],
        "torch": {"name": torch.name, "entrypoint": _entrypoint(list(torch.trainer.command))},
    }


def _entrypoint(command: list[str]) -> list[str]:
    """The command's first word and the first word of its script's last line (``bash`` and
    ``torchrun`` for torch, ``mpirun`` and ``python`` for MPI, ``tune`` and ``run``)."""
    return [command[0], command[-1].strip().splitlines()[-1].split()[0]]


def _api(kubeconfig: str) -> Any:
    from kubernetes import client as k8s
    from kubernetes import config as k8s_config

    return k8s.CustomObjectsApi(k8s_config.new_client_from_config(config_file=kubeconfig))


def _trainjob(kubeconfig: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = _api(kubeconfig).get_namespaced_custom_object(
        "trainer.kubeflow.org", "v1alpha1", NAMESPACE, "trainjobs", name
    )
    return found


def train(sdk: TrainerClient, kubeconfig: str) -> dict[str, Any]:
    runtime = sdk.get_runtime("torch-distributed")
    # As the SDK's examples do, the function names the packages it needs; the index is a closed
    # port, so the job only runs if nothing is fetched (torch is there: trainop's venv).
    trainer = CustomTrainer(
        func=ddp_sum, num_nodes=2, packages_to_install=["torch"], pip_index_urls=[NO_INDEX]
    )
    name = sdk.train(trainer=trainer, runtime=runtime)
    first = sdk.wait_for_job_status(
        name, status={"Running", "Complete"}, timeout=300, polling_interval=1
    )
    followed = list(sdk.get_job_logs(name, follow=True))
    done = sdk.wait_for_job_status(name, status={"Complete"}, timeout=300, polling_interval=1)
    logs = {step: list(sdk.get_job_logs(name, step=step)) for step in ("node-0", "node-1")}
    events = [
        {"kind": e.involved_object_kind, "name": e.involved_object_name, "reason": e.reason}
        for e in sdk.get_job_events(name)
    ]
    listed = [j.name for j in sdk.list_jobs()]
    command = _trainjob(kubeconfig, name)["spec"]["trainer"]["command"]
    sdk.delete_job(name)
    gone = False
    try:
        sdk.get_job(name)
    except RuntimeError:
        gone = True
    return {
        "name": name,
        "first": job_view(first),
        "followed": followed,
        "complete": job_view(done),
        "logs": logs,
        "events": events,
        "listed": listed,
        "gone_after_delete": gone,
        "command": command,
    }


def fail(sdk: TrainerClient, kubeconfig: str) -> dict[str, Any]:
    """A namespaced TrainingRuntime (what a user writes by hand: the shipped torch runtime with
    a JobSet failurePolicy of one restart and Jobs that do not retry), then a TrainJob of it."""
    from kubernetes import client as k8s
    from kubernetes import config as k8s_config

    api = _api(kubeconfig)
    api.create_namespaced_custom_object(
        "trainer.kubeflow.org", "v1alpha1", NAMESPACE, "trainingruntimes", _fail_runtime()
    )
    runtime = sdk.get_runtime(FAIL_RUNTIME)
    # cpu as a JSON float (1.0), as the SDK sends a number: the server must take it (spec 5.3).
    trainer = CustomTrainer(func=exit_one, num_nodes=1, resources_per_node={"cpu": 1.0})
    name = sdk.train(trainer=trainer, runtime=runtime)
    raised = ""
    try:
        sdk.wait_for_job_status(name, status={"Complete"}, timeout=300, polling_interval=1)
    except RuntimeError as exc:
        raised = str(exc)
    final = sdk.wait_for_job_status(name, status={"Failed"}, timeout=60, polling_interval=1)
    logs = list(sdk.get_job_logs(name))
    jobset = api.get_namespaced_custom_object(
        "jobset.x-k8s.io", "v1alpha2", NAMESPACE, "jobsets", name
    )
    trainjob = _trainjob(kubeconfig, name)
    core = k8s.CoreV1Api(k8s_config.new_client_from_config(config_file=kubeconfig))
    pod = core.read_namespaced_pod(final.steps[0].pod_name, NAMESPACE)
    return {
        "name": name,
        "resources": trainjob["spec"]["trainer"]["resourcesPerNode"],
        "raised": raised,
        "final": job_view(final),
        "logs": logs,
        "jobset_restarts": jobset.get("status", {}).get("restarts", 0),
        "step_restart_attempt": pod.metadata.labels.get("jobset.sigs.k8s.io/restart-attempt"),
        "conditions": [
            {"type": c["type"], "status": c["status"], "reason": c.get("reason", "")}
            for c in trainjob.get("status", {}).get("conditions", [])
        ],
    }


def _runtime_patch() -> Any:
    """Labels on the JobSet and on the node pods, and a nodeSelector the one node matches."""
    from kubeflow.trainer import options as o

    pod = o.PodTemplatePatch(
        metadata={"labels": {"sdk-patched": "pod"}},
        spec=o.PodSpecPatch(node_selector={"kubernetes.io/os": "linux"}),
    )
    node = o.ReplicatedJobPatch(
        name="node", template=o.JobTemplatePatch(spec=o.JobSpecPatch(template=pod))
    )
    return o.RuntimePatch(
        training_runtime_spec=o.TrainingRuntimeSpecPatch(
            template=o.JobSetTemplatePatch(
                metadata={"labels": {"sdk-patched": "jobset"}},
                spec=o.JobSetSpecPatch(replicated_jobs=[node]),
            )
        )
    )


def options(sdk: TrainerClient, kubeconfig: str) -> dict[str, Any]:
    """``train`` with the Kubernetes options (spec 5.3): a name, labels, annotations, a runtime
    patch and an active deadline that the function outlives, so the TrainJob fails with
    DeadlineExceeded."""
    from kubeflow.trainer import options as o
    from kubernetes import client as k8s
    from kubernetes import config as k8s_config

    chosen = [
        o.Name("sdk-options"),
        o.Labels({"team": "research"}),
        o.Annotations({"purpose": "e2e"}),
        o.ActiveDeadlineSeconds(DEADLINE),
        _runtime_patch(),
    ]
    trainer = CustomTrainer(func=sleep_long, num_nodes=1)
    name = sdk.train(trainer=trainer, runtime="torch-distributed", options=chosen)
    running = sdk.wait_for_job_status(name, status={"Running"}, timeout=120, polling_interval=1)
    core = k8s.CoreV1Api(k8s_config.new_client_from_config(config_file=kubeconfig))
    seen = core.read_namespaced_pod(running.steps[0].pod_name, NAMESPACE)
    jobset = _api(kubeconfig).get_namespaced_custom_object(
        "jobset.x-k8s.io", "v1alpha2", NAMESPACE, "jobsets", name
    )
    raised = ""
    try:
        sdk.wait_for_job_status(name, status={"Complete"}, timeout=300, polling_interval=1)
    except RuntimeError as exc:
        raised = str(exc)
    trainjob = _trainjob(kubeconfig, name)
    return {
        "name": name,
        "status": sdk.get_job(name).status,
        "raised": raised,
        "labels": trainjob["metadata"].get("labels", {}),
        "annotations": trainjob["metadata"].get("annotations", {}),
        "managers": [p["manager"] for p in trainjob["spec"].get("runtimePatches", [])],
        "jobset_labels": jobset["metadata"].get("labels", {}),
        "pod_labels": seen.metadata.labels,
        "pod_node_selector": seen.spec.node_selector,
        "conditions": [
            {"type": c["type"], "status": c["status"], "reason": c.get("reason", "")}
            for c in trainjob.get("status", {}).get("conditions", [])
        ],
    }


def _fail_runtime() -> dict[str, Any]:
    pod = {
        "restartPolicy": "Never",
        "containers": [{"name": "node", "image": "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime"}],
    }
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainingRuntime",
        "metadata": {
            "name": FAIL_RUNTIME,
            "labels": {"trainer.kubeflow.org/framework": "torch"},
        },
        "spec": {
            "mlPolicy": {"numNodes": 1, "torch": {}},
            "template": {
                "spec": {
                    "failurePolicy": {"maxRestarts": 1},
                    "replicatedJobs": [
                        {
                            "name": "node",
                            "template": {
                                "metadata": {
                                    "labels": {
                                        "trainer.kubeflow.org/trainjob-ancestor-step": "trainer"
                                    }
                                },
                                "spec": {"backoffLimit": 0, "template": {"spec": pod}},
                            },
                        }
                    ],
                }
            },
        },
    }


def main(argv: list[str]) -> int:
    kubeconfig, scenario = argv[1], argv[2]
    warnings = Warnings()
    logging.getLogger("kubeflow").addHandler(warnings)
    started = time.monotonic()
    sdk = client(kubeconfig)
    if scenario == "runtimes":
        result = runtimes(sdk)
    elif scenario == "train":
        result = train(sdk, kubeconfig)
    elif scenario == "fail":
        result = fail(sdk, kubeconfig)
    elif scenario == "options":
        result = options(sdk, kubeconfig)
    else:
        raise SystemExit(f"unknown scenario {scenario!r}")
    result["namespace"] = sdk.backend.namespace
    result["warnings"] = warnings.messages
    result["seconds"] = round(time.monotonic() - started, 1)
    print(json.dumps(result, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
