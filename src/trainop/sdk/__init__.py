"""The Python SDK: ``TrainingClient`` with the upstream kubeflow-training method names (sync)."""
