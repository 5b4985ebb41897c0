"""A script written for upstream ``kubeflow-training`` 1.9; only the import line differs.

Run it against any cluster with the operator (``trainop local up`` is enough):
``python examples/sdk/upstream_script.py``. On a trainop local cluster pods are processes of
this machine, so the "image" is not pulled and ``python3`` is the host's.
"""

from trainop.sdk import TrainingClient  # upstream: from kubeflow.training import TrainingClient

NAME = "pytorch-upstream-script"
TRAIN = "for epoch in range(3): print(f'epoch {epoch} done', flush=True)"

container = {
    "name": "pytorch",
    "image": "docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727",
    "command": ["python3", "-c", TRAIN],
}
replica = {
    "replicas": 1,
    "restartPolicy": "OnFailure",
    "template": {
        "metadata": {"annotations": {"sidecar.istio.io/inject": "false"}},
        "spec": {"containers": [container]},
    },
}
pytorchjob = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "PyTorchJob",
    "metadata": {"name": NAME},
    "spec": {
        "runPolicy": {"cleanPodPolicy": "None"},
        "pytorchReplicaSpecs": {"Master": replica, "Worker": replica},
    },
}

client = TrainingClient()
client.create_job(pytorchjob)
client.wait_for_job_conditions(NAME, wait_timeout=120, polling_interval=5)
conditions = client.get_job_conditions(NAME)
print("conditions:", [(c.type, c.status) for c in conditions])
assert client.is_job_succeeded(NAME)
logs, _ = client.get_job_logs(NAME, follow=True)
print("pods:", client.get_job_pod_names(NAME))
client.delete_job(NAME)
print(f"deleted {NAME}")
