"""A script written for upstream ``kubeflow-training`` 1.9; only the import line differs.

Run it against any cluster with the operator (``trainop local up`` is enough):
``python examples/sdk/upstream_script.py``. With upstream's SDK (``pip install
'kubeflow-training==1.9.*' 'kubernetes<32'``) change the import to the commented one; nothing
else changes. ``tests/integration/sdk/test_upstream_sdk.py`` (marker ``slow``) runs it so.

The job is built from a function, as upstream's SDK does: one PyTorch replica (upstream's
``num_workers=1`` is a Master and no Worker) running ``python -u`` on the function's source.
On a trainop local cluster pods are processes of this machine: the image is not pulled, and
``python`` is the Python environment trainop runs on (a pod's ``pip install`` goes to the pod's
own overlay, docs/design/090).
"""

from trainop.sdk import TrainingClient  # upstream: from kubeflow.training import TrainingClient

NAME = "pytorch-upstream-script"


def train() -> None:
    for epoch in range(3):
        print(f"epoch {epoch} done", flush=True)


client = TrainingClient()
client.create_job(name=NAME, train_func=train, num_workers=1)
client.wait_for_job_conditions(NAME, wait_timeout=120, polling_interval=5)
conditions = client.get_job_conditions(NAME)
print("conditions:", [(c.type, c.status) for c in conditions])
assert client.is_job_succeeded(NAME)
logs, _ = client.get_job_logs(NAME, follow=True)
print("pods:", client.get_job_pod_names(NAME))
client.delete_job(NAME)
print(f"deleted {NAME}")
